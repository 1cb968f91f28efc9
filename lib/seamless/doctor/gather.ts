import { Resolver } from 'node:dns/promises';
import { lstat } from 'node:fs/promises';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Clock } from '../../clock.ts';
import { createConnection, establish } from '../../directory/connection.ts';
import { ldapFilter } from '../../directory/escape.ts';
import type { DirectorySettings } from '../../directory/settings.ts';
import { readCapped } from '../../fs/read-capped.ts';
import { readRegularFileCapped } from '../../fs/root-owned.ts';
import { MAX_KEYTAB_BYTES, parseKeytab } from '../keytab.ts';
import type { CommandRunner } from '../run-command.ts';
import { type DoctorContext, type Fact, unavailable } from './check-result.ts';
import type { DoctorFacts } from './checks.ts';
import { type ClockReading, clockFromCurrentTime } from './clock.ts';
import { aRecordsAnswer, type DnsAnswer, dnsFailure, ptrRecordsAnswer } from './dns.ts';
import { fileFactsOf, type FileFacts, type HelperUser, parseIdOutput } from './file-facts.ts';
import { KEY_VERSION_ATTRIBUTE, parseKeyVersionNumber } from './key-version.ts';
import type { KeytabEntry } from './klist.ts';
import { reverseName } from './network-checks.ts';
import type { WinbindFacts } from './ntlm-checks.ts';
import { DC_PORTS, type PortProbe, portProbe } from './ports.ts';
import type { NtlmClientsSeen } from '../../store/ntlm-client-store.ts';

/**
 * The doctor's I/O shell: it asks the network, the DC and the file system for each fact the pure checks
 * (checks.ts) judge, each on its own, with its own deadline; a fact that cannot be had becomes `{unavailable}`
 * with the reason, so one broken thing never hides the others. Every transport is injectable (GatherIo), the
 * real ones are node:dns (asked of the first resolv.conf nameserver, as the seed says: the DNS the DC serves),
 * node:net, ldapts with the directory settings in force, node:fs and the command runner.
 */

/** glibc reads at most a few nameservers; a resolv.conf is a few hundred bytes. */
const MAX_RESOLV_CONF_BYTES = 64 * 1024;

export interface GatherIo {
  /** The first `nameserver` of /etc/resolv.conf. */
  nameserver(): Promise<string>;
  resolve4(server: string, name: string): Promise<string[]>;
  reverse(server: string, address: string): Promise<string[]>;
  localAddresses(): string[];
  /** Connect to host:port; resolves undefined when connected, else the error code (`timeout` for our timer). */
  probe(host: string, port: number, timeoutMs: number): Promise<string | undefined>;
  /** The rootDSE's currentTime (anonymous), and the local time halfway through the request. */
  currentTime(): Promise<{ currentTime: string; localTime: number }>;
  /** msDS-KeyVersionNumber of `(sAMAccountName=<machine>$)`, as ldapts returns it. */
  keyVersion(machineName: string): Promise<unknown>;
  /**
   * A regular file of at most maxBytes, its size checked on the open descriptor first; a link is not followed
   * (the doctor runs as root: a keytab swapped for /dev/zero or a 1 GiB file must cost it nothing).
   */
  readFile(path: string, maxBytes: number): Promise<Buffer>;
  /** The entry itself (lstat): a link is reported as what it is, never followed. */
  stat(path: string): Promise<{ mode: number; uid: number; gid: number }>;
  run: CommandRunner;
}

export interface GatherInput {
  context: DoctorContext;
  machineName: string;
  serviceUser: string;
  /** Whether to ask winbind (after a join); before it, winbind is `{unavailable}`. */
  joined: boolean;
  proxyPort?: number;
  /** The addresses whose handshakes carried NTLM since a time (the session DB's ntlm_clients); none: unknown. */
  ntlmClients?: () => NtlmClientsSeen;
}

const reason = (error: unknown): string => {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code !== undefined && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
  }
  return String(error);
};

async function fact<T>(get: () => Promise<T>): Promise<Fact<T>> {
  try {
    return await get();
  } catch (error) {
    return unavailable(reason(error));
  }
}

const dnsAnswer = async (lookup: () => Promise<string[]>, parse: (records: string[]) => DnsAnswer) => {
  try {
    return parse(await lookup());
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code.startsWith('E')) return dnsFailure(code);
    throw error;
  }
};

export async function gatherFacts(io: GatherIo, input: GatherInput): Promise<DoctorFacts> {
  const { context } = input;
  const localAddresses = io.localAddresses();
  const dns = (async () => {
    let server: string;
    try {
      server = await io.nameserver();
    } catch (error) {
      const why = unavailable(reason(error));
      return { a: why, localAddresses, ptr: why };
    }
    const a = await fact(() => dnsAnswer(() => io.resolve4(server, context.fqdn), aRecordsAnswer));
    const ptr = await fact(async () => {
      if ('unavailable' in a) throw new Error(a.unavailable);
      const mine = a.ok ? a.records.filter((address) => localAddresses.includes(address)) : [];
      return Promise.all(
        mine.map(async (address) => ({
          address,
          answer: await dnsAnswer(() => io.reverse(server, address), ptrRecordsAnswer),
        })),
      );
    });
    return { a, localAddresses, ptr };
  })();
  const clock = fact<ClockReading>(async () => {
    const { currentTime, localTime } = await io.currentTime();
    return clockFromCurrentTime(currentTime, localTime);
  });
  const ports = fact<readonly PortProbe[]>(() =>
    Promise.all(DC_PORTS.map(async ({ port }) => portProbe(port, await io.probe(context.dc, port, 2000)))),
  );
  const keytab = fact<readonly KeytabEntry[]>(async () =>
    parseKeytab(await io.readFile(context.keytabPath, MAX_KEYTAB_BYTES)),
  );
  const dcKvno = fact(async () => parseKeyVersionNumber(await io.keyVersion(input.machineName)));
  const statOf = (path: string) => fact<FileFacts>(async () => fileFactsOf(await io.stat(path)));
  const helperUser = fact<HelperUser>(async () => {
    const outcome = await io.run({ command: 'id', args: ['--', input.serviceUser], timeoutMs: 10_000 });
    if (outcome.code !== 0)
      throw new Error(`id ${input.serviceUser}: ${outcome.stderr.trim() || 'no such user'}`);
    return parseIdOutput(outcome.stdout);
  });
  const winbind = input.joined
    ? fact<WinbindFacts>(async () => {
        const ping = await io.run({ command: 'wbinfo', args: ['-p'], timeoutMs: 10_000 });
        if (ping.code !== 0) return { running: false };
        const trust = await io.run({ command: 'wbinfo', args: ['-t'], timeoutMs: 30_000 });
        const said = `${trust.stderr}\n${trust.stdout}`.trim().split('\n').slice(-2).join(' / ');
        return {
          running: true,
          trust: trust.code === 0 ? true : said.slice(0, 300) || `exit code ${trust.code}`,
        };
      })
    : Promise.resolve(unavailable('seamless authentication is not enabled (no join yet)'));
  return {
    dns: await dns,
    clock: await clock,
    ports: await ports,
    keytab: await keytab,
    dcKvno: await dcKvno,
    keytabFile: await statOf(context.keytabPath),
    privilegedPipeDir: await statOf(context.privilegedPipeDir),
    helperUser: await helperUser,
    winbind: await winbind,
    ntlmClients: await fact<NtlmClientsSeen>(async () => {
      if (input.ntlmClients === undefined) throw new Error('not recorded before the join');
      return input.ntlmClients();
    }),
    ...(input.proxyPort === undefined ? {} : { proxyPort: input.proxyPort }),
  };
}

// ---------------------------------------------------------------------------------------------------------
// The real transports

/** The first `nameserver` line of a resolv.conf text (capped: a resolv.conf is a few lines). */
export function firstNameserver(text: string): string | undefined {
  for (const line of text.slice(0, 64 * 1024).split('\n')) {
    const words = line.trim().split(/\s+/);
    if (words[0] === 'nameserver' && words[1] !== undefined) return words[1];
  }
  return undefined;
}

export interface RealGatherOptions {
  directory: { settings: DirectorySettings; password: string } | undefined;
  run: CommandRunner;
  clock: Clock;
  resolvConf?: string;
}

export function realGatherIo(options: RealGatherOptions): GatherIo {
  const resolvers = new Map<string, Resolver>();
  const resolver = (server: string) => {
    let found = resolvers.get(server);
    if (found === undefined) {
      found = new Resolver({ timeout: 2000, tries: 1 });
      found.setServers([server]);
      resolvers.set(server, found);
    }
    return found;
  };
  const directory = () => {
    if (options.directory === undefined) throw new Error('no directory settings are applied');
    return options.directory;
  };
  return {
    nameserver: async () => {
      const file = options.resolvConf ?? '/etc/resolv.conf';
      const found = firstNameserver(readCapped(file, MAX_RESOLV_CONF_BYTES));
      if (found === undefined) throw new Error(`${file} names no nameserver`);
      return found;
    },
    resolve4: (server, name) => resolver(server).resolve4(name),
    // resolvePtr asks the DNS server only; reverse() (getHostByAddr) would answer from /etc/hosts first.
    reverse: (server, address) => resolver(server).resolvePtr(reverseName(address)),
    localAddresses: () =>
      Object.values(networkInterfaces())
        .flatMap((list) => list ?? [])
        .filter((i) => i.family === 'IPv4')
        .map((i) => i.address),
    probe: (host, port, timeoutMs) =>
      new Promise((resolve) => {
        const socket = connect({ host, port });
        const done = (code: string | undefined) => {
          clearTimeout(timer);
          socket.destroy();
          resolve(code);
        };
        const timer = setTimeout(() => done('timeout'), timeoutMs);
        socket.once('connect', () => done(undefined));
        socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'failed'));
      }),
    currentTime: async () => {
      const { settings } = directory();
      const connection = createConnection(settings);
      try {
        await establish(connection, settings);
        const before = options.clock.now();
        const { searchEntries } = await connection.client.search('', {
          scope: 'base',
          filter: '(objectClass=*)',
          attributes: ['currentTime'],
        });
        const after = options.clock.now();
        const value = searchEntries[0]?.currentTime;
        const text = Array.isArray(value) ? value[0] : value;
        if (text === undefined) throw new Error('the rootDSE has no currentTime');
        return {
          currentTime: Buffer.isBuffer(text) ? text.toString('latin1') : String(text),
          localTime: (before + after) / 2,
        };
      } finally {
        await connection.close();
      }
    },
    keyVersion: async (machineName) => {
      const { settings, password } = directory();
      const connection = createConnection(settings);
      try {
        await establish(connection, settings, { dn: settings.bindDn, password });
        const { searchEntries } = await connection.client.search(settings.baseDn, {
          scope: 'sub',
          filter: ldapFilter`(sAMAccountName=${`${machineName}$`})`,
          attributes: [KEY_VERSION_ATTRIBUTE],
          sizeLimit: 2,
        });
        if (searchEntries.length === 0)
          throw new Error(`no computer account ${machineName}$ in ${settings.baseDn}`);
        const entry: Record<string, unknown> = searchEntries[0] ?? {};
        const key = Object.keys(entry).find((k) => k.toLowerCase() === KEY_VERSION_ATTRIBUTE.toLowerCase());
        return key === undefined ? undefined : entry[key];
      } finally {
        await connection.close();
      }
    },
    readFile: (path, maxBytes) => readRegularFileCapped(path, maxBytes),
    stat: (path) => lstat(path),
    run: options.run,
  };
}
