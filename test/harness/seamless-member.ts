import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ConfigInput } from '../../lib/config/schema.ts';
import { seamlessPaths } from '../../lib/seamless/paths.ts';
import { applyDirectory } from './apply-directory.ts';
import { start, type Started, waitForPort } from './processes.ts';
import { run, type RunOptions, type RunResult } from './run.ts';
import type { SambaAd } from './samba-ad.ts';

/**
 * The proxy host of a seamless test, a domain member to be: Doorman's CLI (and what it starts: net, winbindd,
 * wbinfo) runs in the host's network namespace, where it reaches the DC of samba-ad.ts over the veth pair, but
 * in a mount namespace of its own (`unshare -m`, as the lab's `nsrun`), with our own /etc/hosts (this host's
 * name, proxy.example.test on the veth's host-side address, dc1), /etc/resolv.conf (the DC's DNS first) and
 * /run/samba (winbindd's socket directory, compiled into libwbclient): the host's files are never touched,
 * and a winbindd of the host's own, if any, is never met. Every command run through exec() gets the same bind
 * mounts, so a winbindd started by one command answers the wbinfo of the next.
 *
 * The DC gets the proxy's A record (proxy.example.test → the host-side address) and a reverse zone with its
 * PTR, the prerequisites an administrator makes before Enable.
 */
export interface SeamlessMember {
  readonly ad: SambaAd;
  /** The proxy's address: the host side of the DC's veth pair (10.213.N.1). */
  readonly address: string;
  readonly fqdn: 'proxy.example.test';
  readonly dir: string;
  readonly configFile: string;
  readonly stateDir: string;
  /** The reverse zone and the PTR's name in it (N.213.10.in-addr.arpa, 1). */
  readonly reverseZone: string;
  readonly ptrName: string;
  /** Run a command on the proxy host (with the private hosts, resolv.conf and /run/samba). */
  exec(command: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /** Start a long-running command on the proxy host (same mounts as exec). */
  spawn(command: string, args: readonly string[], env?: NodeJS.ProcessEnv): Started;
  /** The doorman CLI on the proxy host with this member's config; `allowFailure` to see a failing exit. */
  doorman(args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /**
   * `doorman seamless enable` as the tests run it (server version 2012, Administrator, host name proxy) with
   * `extra` options after, the password on stdin; a failing exit is returned, not thrown.
   */
  enable(extra?: readonly string[]): Promise<RunResult>;
  /** samba-tool dns on the DC as Administrator (password in PASSWD, never in argv). */
  dns(args: readonly string[]): Promise<RunResult>;
  /** Stop whatever the member left running (winbindd, samba-dcerpcd), remove the directory. */
  stop(): Promise<void>;
}

const ROOT = resolve(import.meta.dirname, '..', '..');
const DOORMAN = join(ROOT, 'bin', 'doorman');
const FQDN = 'proxy.example.test';

export async function startSeamlessMember(
  ad: SambaAd,
  config: Partial<ConfigInput> = {},
): Promise<SeamlessMember> {
  // The DC's namespace is a /30: it holds .2, the host side .1.
  const address = ad.host.replace(/\.2$/, '.1');
  const dir = mkdtempSync(join(tmpdir(), 'doorman-member-'));
  chmodSync(dir, 0o755); // Squid's helper user reads the config and reaches the state directory in here
  const runSamba = join(dir, 'run-samba');
  mkdirSync(runSamba);
  writeFileSync(
    join(dir, 'hosts'),
    `127.0.0.1 localhost ${hostname()}\n${address} ${FQDN} proxy\n${ad.host} dc1.example.test dc1\n`,
  );
  writeFileSync(join(dir, 'resolv.conf'), `nameserver ${ad.host}\nsearch example.test\n`);
  const stateDir = join(dir, 'state');
  const configFile = join(dir, 'doorman.json');
  writeFileSync(configFile, JSON.stringify({ stateDir, ...config }, null, 2), { mode: 0o644 });

  const mounts = [
    [join(dir, 'hosts'), '/etc/hosts'],
    [join(dir, 'resolv.conf'), '/etc/resolv.conf'],
    [runSamba, '/run/samba'],
  ];
  const script =
    'while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 111; shift 2; done; shift; exec "$@"';
  const wrap = (command: string, args: readonly string[]) => [
    '-m',
    '--propagation',
    'private',
    'sh',
    '-c',
    script,
    'sh',
    ...mounts.flat(),
    '--',
    command,
    ...args,
  ];
  const exec = (command: string, args: readonly string[], options?: RunOptions) =>
    run('unshare', wrap(command, args), options);
  // unshare and sh exec the command: the child's PID is the command's.
  const spawnOn = (command: string, args: readonly string[], env?: NodeJS.ProcessEnv) =>
    start('unshare', wrap(command, args), env);
  const doorman = (args: readonly string[], options?: RunOptions) =>
    exec(DOORMAN, [...args, '--config', configFile], options);
  const adminEnv = { ...process.env, KRB5_CONFIG: ad.krb5ConfFile, PASSWD: ad.adminPassword };
  const dns = (args: readonly string[]) =>
    ad.exec('samba-tool', ['dns', ...args, '-U', 'Administrator', '-s', ad.smbConf], { env: adminEnv });

  const octets = address.split('.');
  const reverseZone = `${octets[2]}.${octets[1]}.${octets[0]}.in-addr.arpa`;
  const ptrName = octets[3] ?? '1';
  const stop = async () => {
    const run = join(seamlessPaths({ stateDir: stateDir, sambaDir: null }).sambaDir, 'run');
    for (const daemon of ['winbindd', 'samba-dcerpcd']) {
      try {
        const pid = Number(readFileSync(join(run, `${daemon}.pid`), 'utf8').trim());
        if (Number.isInteger(pid) && pid > 1) process.kill(pid, 'SIGKILL');
      } catch {
        // not running
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await dns(['add', ad.host, 'example.test', 'proxy', 'A', address]);
    await dns(['zonecreate', ad.host, reverseZone]);
    await dns(['add', ad.host, reverseZone, ptrName, 'PTR', FQDN]);
    await applyDirectory((args, options) => run(DOORMAN, [...args, '--config', configFile], options), ad);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    ad,
    address,
    fqdn: FQDN,
    dir,
    configFile,
    stateDir,
    reverseZone,
    ptrName,
    exec,
    spawn: spawnOn,
    doorman,
    enable: (extra = []) =>
      doorman([...ENABLE, ...extra], { input: `${ad.adminPassword}\n`, allowFailure: true }),
    dns,
    stop,
  };
}

const ENABLE = [
  'seamless',
  'enable',
  '--domain',
  'example.test',
  '--server-version',
  '2012',
  '--admin',
  'Administrator',
  '--host-name',
  'proxy',
];

/**
 * Every process's command line, sampled every few milliseconds while it runs (`ps -eo pid,args`), to show a
 * secret never appears in one.
 */
export function sampleCommandLines(file: string): { stop(): Promise<string> } {
  const child: ChildProcess = spawn(
    'sh',
    ['-c', 'while :; do ps -eo pid,args; sleep 0.005; done > "$0"', file],
    { stdio: 'ignore' },
  );
  return {
    stop: async () => {
      const ended = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await ended;
      return readFileSync(file, 'utf8');
    },
  };
}

/** `doorman serve` and a Squid on the generated include, both on the proxy host of a member that has joined. */
export interface SeamlessProxy {
  serve: Started;
  squid: Started;
  /** Squid's directory: squid.conf, the include, logs/. */
  squidDir: string;
}

/**
 * Start serve (with authd, and ntlm_auth under it: it reaches the member's winbindd) on the web port the
 * member's config listens on, then a Squid on `<member.address>:<squidPort>` from `doorman squid-conf
 * --standalone`, checked with `squid -k parse` first.
 */
export async function startSeamlessProxy(
  member: SeamlessMember,
  ports: { doorman: number; squid: number },
): Promise<SeamlessProxy> {
  const serve = member.spawn(DOORMAN, ['serve', '--config', member.configFile]);
  await waitForPort('127.0.0.1', ports.doorman, 15_000, serve.child);
  const squidDir = join(member.dir, 'squid');
  const args = ['squid-conf', '--standalone', squidDir, '--port', `${member.address}:${ports.squid}`];
  const conf = (await member.doorman([...args, '--loopback-dns'])).stdout.trim();
  await run('squid', ['-k', 'parse', '-f', conf]);
  const squid = member.spawn('squid', ['-N', '-f', conf]);
  await waitForPort(member.address, ports.squid, 15_000, squid.child);
  return { serve, squid, squidDir };
}

/**
 * curl on the proxy host (which resolves proxy.example.test) through the Squid on `squidPort`, with `args`
 * (the scheme's options and the URL): the final HTTP status as curl printed it ("000" when none came).
 */
export async function proxyCurlStatus(
  member: Pick<SeamlessMember, 'exec'>,
  squidPort: number,
  args: readonly string[],
  maxTimeS = 20,
): Promise<string> {
  const { stdout } = await member.exec(
    'curl',
    [
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '--max-time',
      String(maxTimeS),
      '-x',
      `http://proxy.example.test:${squidPort}`,
      ...args,
    ],
    { allowFailure: true },
  );
  return stdout.slice(-3);
}
