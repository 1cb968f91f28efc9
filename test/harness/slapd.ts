import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderLdifTemplate, safeLdif } from './ldif.ts';
import { freePort, start, waitForPort, type Started } from './processes.ts';
import { run } from './run.ts';
import { createCa, issueServerCertificate } from './tls.ts';

/**
 * A throwaway OpenLDAP slapd on loopback: its own cn=config (slapadd -n0), back_mdb, the memberof and refint
 * overlays, a CA and server certificate made at test time, plain LDAP (with StartTLS) and LDAPS on free ports.
 * Everything lives in one mkdtemp directory; the process is stopped by PID. See fixtures/slapd-*.ldif for the
 * configuration and the data (users, groups with a space, non-ASCII, posix, uniqueMember, nesting, a cycle).
 */
export interface DirectoryUser {
  /** The login name: `uid` here, `sAMAccountName` in AD. */
  name: string;
  dn: string;
  password: string;
}

export interface DirectoryGroup {
  /** The `cn`. */
  name: string;
  dn: string;
}

export interface Slapd {
  /** `ldap://127.0.0.1:PORT` (StartTLS available). */
  readonly url: string;
  /** `ldaps://127.0.0.1:PORT`. */
  readonly ldapsUrl: string;
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly ldapsPort: number;
  /** The CA that signed the server certificate (SAN DNS:localhost, DNS:ldap.example.test, IP:127.0.0.1). */
  readonly caPem: string;
  readonly caFile: string;
  readonly baseDn: string;
  /** Squid's bind account: reads everything but passwords. */
  readonly bindDn: string;
  readonly bindPassword: string;
  /** The rootDN: bypasses the ACLs. */
  readonly adminDn: string;
  readonly adminPassword: string;
  readonly users: readonly DirectoryUser[];
  readonly groups: readonly DirectoryGroup[];
  readonly dir: string;
  /** The running slapd's PID (changes on restart). */
  readonly pid: number;
  /** With `logBinds`: the DN of every simple bind slapd has received so far (from its stats log), in order. */
  binds(): string[];
  /** With `logBinds`: everything every slapd started has logged so far (connections, operations). */
  stderr(): string;
  /** Apply LDIF with ldapmodify as the admin (entries without `changetype` are an error); returns its stdout. */
  modify(ldif: string): Promise<string>;
  /** Stop slapd (SIGKILL; LMDB commits are durable), keeping its data and ports: the directory is down. */
  halt(): Promise<void>;
  /** Halt if running, then start again on the same ports with the same data. */
  restart(): Promise<void>;
  /** Stop slapd and remove its directory. */
  stop(): Promise<void>;
}

export interface SlapdOptions {
  /** Also create user0000…userNNNN (same password; even ones are members of cn=proxy-users), for benchmarks. */
  extraUsers?: number;
  /** Log every operation (loglevel stats) to stderr, so that binds() can count them at the server. */
  logBinds?: boolean;
}

const BASE_DN = 'dc=example,dc=test';
const ADMIN_DN = `cn=admin,${BASE_DN}`;
const ADMIN_PASSWORD = 'Adm1nPassw0rd!';
const BIND_DN = `cn=squid,ou=services,${BASE_DN}`;
const BIND_PASSWORD = 'B1ndPassw0rd!';
export const USER_PASSWORD = 'Passw0rd!';
const PEOPLE = `ou=people,${BASE_DN}`;
const GROUPS = `ou=groups,${BASE_DN}`;
const USER_NAMES = ['alice', 'bob', 'carol', 'dave', 'erin'] as const;
const GROUP_NAMES = [
  'Staff Users',
  'proxy-users',
  'Ünïcødé Group',
  'posix-staff',
  'unique-group',
  'level1',
  'level2',
  'cycle-a',
  'cycle-b',
] as const;

export async function startSlapd(options: SlapdOptions = {}): Promise<Slapd> {
  const dir = mkdtempSync(join(tmpdir(), 'doorman-slapd-'));
  const configDir = join(dir, 'slapd.d');
  mkdirSync(configDir);
  mkdirSync(join(dir, 'db'));
  let proc: Started | undefined;
  /** Every slapd started (a restart starts another), for binds(). */
  const logs: Started[] = [];
  // A test process that dies without afterAll must not leave slapd behind.
  const onExit = () => {
    if (proc?.child.pid !== undefined && proc.child.exitCode === null)
      process.kill(proc.child.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };
  process.once('exit', onExit);
  const stop = async () => {
    await proc?.stop();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    process.removeListener('exit', onExit); // only now: the process may end while we wait
  };

  try {
    const [port, ldapsPort] = [await freePort(), await freePort()];
    const url = `ldap://127.0.0.1:${port}`;
    const ldapsUrl = `ldaps://127.0.0.1:${ldapsPort}`;
    const ca = await createCa(dir, 'Doorman Test slapd CA');
    const [server, adminHash, bindHash, userHash] = await Promise.all([
      issueServerCertificate(ca, dir, {
        commonName: 'ldap.example.test',
        dnsNames: ['localhost', 'ldap.example.test'],
        ipAddresses: ['127.0.0.1'],
      }),
      hash(ADMIN_PASSWORD),
      hash(BIND_PASSWORD),
      hash(USER_PASSWORD),
    ]);
    const configLdif = join(dir, 'config.ldif');
    writeFileSync(
      configLdif,
      renderLdifTemplate('slapd-config.ldif', {
        DIR: dir,
        TLS_CERT: server.certFile,
        TLS_KEY: server.keyFile,
        ADMIN_HASH: adminHash,
        ADMIN_DN,
        BASE_DN,
      }),
    );
    await run('slapadd', ['-n0', '-F', configDir, '-l', configLdif]);

    const launch = async () => {
      // -d: stay in the foreground (so the PID is slapd's), logging nothing but errors, or with logBinds
      // every operation too (stats).
      const debug = options.logBinds === true ? 'stats' : '0';
      proc = start('slapd', ['-F', configDir, '-h', `${url}/ ${ldapsUrl}/`, '-d', debug]);
      logs.push(proc);
      const running = proc;
      const fail = (error: Error) => {
        throw new Error(`slapd: ${error.message}\n${running.stderr()}`);
      };
      await waitForPort('127.0.0.1', port, 10_000, running.child).catch(fail);
      await waitForPort('127.0.0.1', ldapsPort, 10_000, running.child).catch(fail);
    };
    await launch();

    const modify = async (ldif: string) =>
      (
        await run('ldapmodify', ['-x', '-H', url, '-D', ADMIN_DN, '-w', ADMIN_PASSWORD], {
          input: safeLdif(ldif),
        })
      ).stdout;
    const add = (ldif: string) =>
      run('ldapmodify', ['-a', '-x', '-H', url, '-D', ADMIN_DN, '-w', ADMIN_PASSWORD], { input: ldif });

    await add(
      renderLdifTemplate('slapd-data.ldif', { BIND_HASH: bindHash, USER_HASH: userHash, USER_PASSWORD }),
    );
    // cycle-a named cycle-b before cycle-b existed: re-add the member so the overlay writes cycle-b's memberOf.
    await modify(
      [
        `dn: cn=cycle-a,${GROUPS}`,
        'changetype: modify',
        'delete: member',
        `member: cn=cycle-b,${GROUPS}`,
        '-',
        'add: member',
        `member: cn=cycle-b,${GROUPS}`,
        '',
      ].join('\n'),
    );
    const users: DirectoryUser[] = USER_NAMES.map((name) => ({
      name,
      dn: `uid=${name},${PEOPLE}`,
      password: USER_PASSWORD,
    }));
    if (options.extraUsers) users.push(...(await addExtraUsers(options.extraUsers, userHash, add)));

    return {
      url,
      ldapsUrl,
      host: '127.0.0.1',
      port,
      ldapsPort,
      caPem: ca.certPem,
      caFile: ca.certFile,
      baseDn: BASE_DN,
      bindDn: BIND_DN,
      bindPassword: BIND_PASSWORD,
      adminDn: ADMIN_DN,
      adminPassword: ADMIN_PASSWORD,
      users,
      groups: GROUP_NAMES.map((name) => ({ name, dn: `cn=${name},${GROUPS}` })),
      dir,
      get pid() {
        const pid = proc?.child.pid;
        if (pid === undefined) throw new Error('slapd is not running');
        return pid;
      },
      binds: () =>
        logs.flatMap((p) =>
          [...p.stderr().matchAll(/ BIND dn="([^"]*)" method=128\b/g)].map((m) => m[1] ?? ''),
        ),
      stderr: () => logs.map((p) => p.stderr()).join(''),
      modify,
      halt: async () => {
        await proc?.stop();
      },
      restart: async () => {
        await proc?.stop();
        await launch();
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** slappasswd's default scheme, {SSHA}. */
async function hash(password: string): Promise<string> {
  return (await run('slappasswd', ['-s', password])).stdout.trim();
}

async function addExtraUsers(
  count: number,
  userHash: string,
  add: (ldif: string) => Promise<unknown>,
): Promise<DirectoryUser[]> {
  const width = Math.max(4, String(count - 1).length);
  const users: DirectoryUser[] = [];
  const entries: string[] = [];
  const members: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = `user${String(i).padStart(width, '0')}`;
    const dn = `uid=${name},${PEOPLE}`;
    users.push({ name, dn, password: USER_PASSWORD });
    entries.push(
      [
        `dn: ${dn}`,
        'objectClass: inetOrgPerson',
        'objectClass: posixAccount',
        `uid: ${name}`,
        `cn: User ${i}`,
        `sn: ${i}`,
        `uidNumber: ${20000 + i}`,
        'gidNumber: 10000',
        `homeDirectory: /home/${name}`,
        `userPassword: ${userHash}`,
        '',
      ].join('\n'),
    );
    if (i % 2 === 0) members.push(`member: ${dn}`);
  }
  const groupChange = [`dn: cn=proxy-users,${GROUPS}`, 'changetype: modify', 'add: member', ...members, ''];
  await add([...entries, ...(members.length > 0 ? [groupChange.join('\n')] : [])].join('\n'));
  return users;
}
