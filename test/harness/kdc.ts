import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, start, waitForPort, type Started } from './processes.ts';
import { run } from './run.ts';

/**
 * A throwaway MIT Kerberos realm on loopback for the Negotiate tests (lab krb5/krb5-setup.sh as a harness):
 * realm EXAMPLE.TEST, users alice and bob, the proxy's `HTTP/proxy.example.test` key in a keytab of its own
 * (`root:proxy 0640`, as Doorman's join leaves it), and `HTTP/other.example.test` in the KDC but not in the
 * keytab (a ticket for "another SPN"). `host/` and `cifs/proxy.example.test` have the very key of the
 * HTTP/ one, as the names of one Active Directory computer account do (PROXY_SERVICES). Its own directory
 * and port; stopped by PID.
 *
 * Client tokens come from python3-gssapi (`/usr/bin/python3`: a pyenv python3 on PATH has no gssapi), one fresh
 * security context per token, as the anchors bench makes them.
 */
export const KDC_REALM = 'EXAMPLE.TEST';
export const PROXY_FQDN = 'proxy.example.test';
export const OTHER_FQDN = 'other.example.test';
export const KDC_USER_PASSWORD = 'Passw0rd!';
/** The proxy's service names that share its HTTP/ key (its computer account's, in AD). */
export const PROXY_SERVICES = ['HTTP', 'host', 'cifs'] as const;
/**
 * One key for all of PROXY_SERVICES: the same password with a salt of the realm alone (MIT's `onlyrealm`),
 * so the principal's name does not enter the key. Random per KDC; it never leaves the harness.
 */
const SHARED_KEY_SALTS = 'aes256-cts-hmac-sha1-96:onlyrealm,aes128-cts-hmac-sha1-96:onlyrealm';
const PYTHON = '/usr/bin/python3';
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

export interface Kdc {
  realm: string;
  port: number;
  dir: string;
  /** The clients' krb5.conf: no DNS, no reverse lookups (lab §3), the KDC on its loopback port. */
  krb5Conf: string;
  /** HTTP/proxy.example.test only, root:proxy 0640. */
  keytab: string;
  users: readonly { name: string; password: string }[];
  /** Environment for a client command (kinit, the token maker, curl): KRB5_CONFIG and the ccache. */
  clientEnv(ccache: string, extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** `kinit user` into `ccache` (password on stdin), optionally with a lifetime (`-l`) or under faketime. */
  kinit(
    user: string,
    ccache: string,
    options?: { lifetime?: string; faketime?: string; krb5Conf?: string },
  ): Promise<void>;
  /**
   * `count` fresh initiator tokens (base64) for `service` (host-based, `HTTP@proxy.example.test`) from the
   * tickets in `ccache`; `mech` spnego (the default, what browsers send) or krb5 (a raw AP-REQ).
   */
  tokens(
    ccache: string,
    service: string,
    count: number,
    options?: { mech?: 'spnego' | 'krb5'; faketime?: string; krb5Conf?: string },
  ): Promise<string[]>;
  /**
   * A second krb5kdc on the same database (the same keys) whose clock runs `offset` behind or ahead
   * (`-20m`), for tickets whose times are long past while the client's clock is right. Returns its clients'
   * krb5.conf. Stopped with the rest.
   */
  startShiftedKdc(offset: string): Promise<string>;
  stop(): Promise<void>;
}

const TOKEN_SCRIPT = `
import sys, base64, gssapi
spn, n, mech = sys.argv[1], int(sys.argv[2]), sys.argv[3]
oid = gssapi.OID.from_int_seq('1.3.6.1.5.5.2' if mech == 'spnego' else '1.2.840.113554.1.2.2')
name = gssapi.Name(spn, gssapi.NameType.hostbased_service)
for _ in range(n):
    ctx = gssapi.SecurityContext(name=name, usage='initiate', mech=oid)
    print(base64.b64encode(ctx.step()).decode())
`;

/**
 * The command that prints `count` fresh initiator tokens (base64, one a line) for the host-based `service`
 * (`HTTP@proxy.example.test`) from the ccache KRB5CCNAME names: for KDCs other than this one (the AD suite).
 */
export function tokenCommand(
  service: string,
  count: number,
  mech: 'spnego' | 'krb5' = 'spnego',
): [string, string[]] {
  return [PYTHON, ['-c', TOKEN_SCRIPT, service, String(count), mech]];
}

function krb5ConfText(port: number): string {
  return `[libdefaults]
    default_realm = ${KDC_REALM}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
[realms]
    ${KDC_REALM} = {
        kdc = 127.0.0.1:${port}
    }
[domain_realm]
    .example.test = ${KDC_REALM}
    example.test = ${KDC_REALM}
`;
}

function kdcConfText(dir: string, port: number): string {
  return `[kdcdefaults]
    kdc_listen = 127.0.0.1:${port}
    kdc_tcp_listen = 127.0.0.1:${port}
[realms]
    ${KDC_REALM} = {
        database_name = ${dir}/principal
        key_stash_file = ${dir}/stash
        acl_file = ${dir}/kadm5.acl
        max_life = 10h 0m 0s
        max_renewable_life = 7d 0h 0m 0s
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }
[logging]
    kdc = FILE:${dir}/kdc.log
`;
}

export async function startKdc(): Promise<Kdc> {
  const dir = mkdtempSync(join(tmpdir(), 'doorman-kdc-'));
  chmodSync(dir, 0o755); // user proxy reads the keytab inside
  const kdcs: Started[] = [];
  const onExit = () => {
    for (const k of kdcs)
      if (k.child.pid !== undefined && k.child.exitCode === null) process.kill(k.child.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };
  process.once('exit', onExit);
  const stop = async () => {
    await Promise.all(kdcs.map((k) => k.stop()));
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    process.removeListener('exit', onExit);
  };

  const launch = async (name: string, port: number, faketime?: string): Promise<void> => {
    const kdcConf = join(dir, `${name}.kdc.conf`);
    writeFileSync(kdcConf, kdcConfText(dir, port));
    const env = { ...process.env, KRB5_CONFIG: join(dir, 'krb5.conf'), KRB5_KDC_PROFILE: kdcConf };
    // -n: no fork, so the PID is krb5kdc's.
    const args = ['-n', '-P', join(dir, `${name}.pid`)];
    // libfaketime preloaded directly, not through the faketime wrapper: the PID must be krb5kdc's, or a kill
    // leaves krb5kdc behind holding our pipes.
    const proc = start(
      'krb5kdc',
      args,
      faketime === undefined
        ? env
        : { ...env, LD_PRELOAD: LIBFAKETIME, FAKETIME: faketime, DONT_FAKE_MONOTONIC: '1' },
    );
    kdcs.push(proc);
    await waitForPort('127.0.0.1', port, 10_000, proc.child).catch((error: Error) => {
      throw new Error(`krb5kdc: ${error.message}\n${proc.stderr()}`);
    });
  };

  try {
    const port = await freePort('127.0.0.1', []);
    const krb5Conf = join(dir, 'krb5.conf');
    writeFileSync(krb5Conf, krb5ConfText(port));
    writeFileSync(join(dir, 'kadm5.acl'), `*/admin@${KDC_REALM} *\n`);
    writeFileSync(join(dir, 'kdc.kdc.conf'), kdcConfText(dir, port));
    const adminEnv = { ...process.env, KRB5_CONFIG: krb5Conf, KRB5_KDC_PROFILE: join(dir, 'kdc.kdc.conf') };
    await run('kdb5_util', ['create', '-s', '-r', KDC_REALM, '-P', 'masterpw'], { env: adminEnv });
    const kadmin = (query: string) => run('kadmin.local', ['-q', query], { env: adminEnv });
    const users = ['alice', 'bob'].map((name) => ({ name, password: KDC_USER_PASSWORD }));
    for (const user of users) await kadmin(`addprinc -pw ${user.password} ${user.name}`);
    const sharedKey = randomBytes(24).toString('base64');
    for (const service of PROXY_SERVICES) {
      // The password twice on stdin (kadmin's prompt and its confirmation), not in the query.
      await run('kadmin.local', ['-q', `addprinc -e ${SHARED_KEY_SALTS} ${service}/${PROXY_FQDN}`], {
        env: adminEnv,
        input: `${sharedKey}\n${sharedKey}\n`,
      });
    }
    await kadmin(`addprinc -randkey HTTP/${OTHER_FQDN}`);
    const keytab = join(dir, 'http.keytab');
    // -norandkey: the key the KDC has, so that host/ and cifs/ tickets decrypt with this HTTP/ entry.
    await kadmin(`ktadd -norandkey -k ${keytab} HTTP/${PROXY_FQDN}`);
    await run('chgrp', ['proxy', keytab]);
    chmodSync(keytab, 0o640);
    await launch('kdc', port);

    const clientEnv = (ccache: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
      ...process.env,
      KRB5_CONFIG: krb5Conf,
      KRB5CCNAME: `FILE:${ccache}`,
      ...extra,
    });
    const withFaketime = (
      faketime: string | undefined,
      command: string,
      args: string[],
    ): [string, string[]] =>
      faketime === undefined ? [command, args] : ['faketime', ['-f', faketime, command, ...args]];

    let shifted = 0;
    return {
      realm: KDC_REALM,
      port,
      dir,
      krb5Conf,
      keytab,
      users,
      clientEnv,
      async kinit(user, ccache, options = {}) {
        const password = users.find((u) => u.name === user)?.password ?? KDC_USER_PASSWORD;
        const args = [...(options.lifetime === undefined ? [] : ['-l', options.lifetime]), user];
        const [command, argv] = withFaketime(options.faketime, 'kinit', args);
        await run(command, argv, {
          input: `${password}\n`,
          env: clientEnv(ccache, options.krb5Conf === undefined ? {} : { KRB5_CONFIG: options.krb5Conf }),
        });
      },
      async tokens(ccache, service, count, options = {}) {
        const [command, argv] = withFaketime(options.faketime, ...tokenCommand(service, count, options.mech));
        const out = await run(command, argv, {
          env: clientEnv(ccache, options.krb5Conf === undefined ? {} : { KRB5_CONFIG: options.krb5Conf }),
        });
        return out.stdout.split('\n').filter((line) => line !== '');
      },
      async startShiftedKdc(offset) {
        const shiftedPort = await freePort('127.0.0.1', []);
        const conf = join(dir, `krb5-shifted-${++shifted}.conf`);
        writeFileSync(conf, krb5ConfText(shiftedPort));
        await launch(`kdc-shifted-${shifted}`, shiftedPort, offset);
        return conf;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A directory for one test's ccaches and files. */
export function kdcScratch(kdc: Kdc, name: string): string {
  const path = join(kdc.dir, name);
  mkdirSync(path, { recursive: true });
  return path;
}
