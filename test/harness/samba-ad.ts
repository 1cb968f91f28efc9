import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderLdifTemplate, safeLdif } from './ldif.ts';
import { createNetns, netnsName, removeStaleNetns, type Netns } from './netns.ts';
import { waitForPort, type Started } from './processes.ts';
import { run, type RunOptions, type RunResult } from './run.ts';
import type { DirectoryGroup, DirectoryUser } from './slapd.ts';
import { createCa, issueServerCertificate } from './tls.ts';

/**
 * A throwaway Samba 4.17 AD DC for EXAMPLE.TEST in a network namespace of its own, reachable from the host
 * namespace at `host` (LDAP 389, LDAPS 636, Kerberos 88…) over a veth pair. Its processes see our own
 * /etc/hosts (with this machine's host name: without it every NTLM handshake waits 1.4 s on DNS),
 * /etc/resolv.conf (Samba's own DNS; `dns forwarder` is empty, so no query leaves) and /run/samba (winbindd's
 * socket directory, compiled into libwbclient). Everything else lives in one mkdtemp directory.
 *
 * TLS: a certificate of ours (tls.ts) instead of the one Samba generates, because Samba's names only
 * dc1.example.test and clients in the host namespace connect by address: ours has IP:<host> in its SAN.
 */
export interface AdUser extends DirectoryUser {
  /** `name@example.test`: binds with it work, as with `EXAMPLE\name`. */
  upn: string;
}

export interface SambaAd {
  /** The DC's address, inside its namespace, reachable from the host (10.213.N.2). */
  readonly host: string;
  /** `ldap://<host>` (port 389; simple binds allowed without TLS, StartTLS available). */
  readonly url: string;
  /** `ldaps://<host>` (port 636). */
  readonly ldapsUrl: string;
  readonly caPem: string;
  readonly caFile: string;
  readonly realm: 'EXAMPLE.TEST';
  readonly domain: 'EXAMPLE';
  readonly baseDn: 'DC=example,DC=test';
  /** CN=Squid Bind,CN=Users,DC=example,DC=test (sAMAccountName squidbind). */
  readonly bindDn: string;
  readonly bindUpn: string;
  readonly bindPassword: string;
  readonly adminUpn: string;
  readonly adminPassword: string;
  readonly users: readonly AdUser[];
  readonly groups: readonly DirectoryGroup[];
  /** The network namespace's name. */
  readonly netns: string;
  /** A krb5.conf for clients (kdc = host, no DNS, no reverse lookups), for KRB5_CONFIG. */
  readonly krb5ConfFile: string;
  readonly smbConf: string;
  readonly dir: string;
  /** The samba process's PID. */
  readonly pid: number;
  /** Run a command inside the namespace (with the private hosts, resolv.conf, /run/samba and KRB5_CONFIG). */
  exec(command: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /** `samba-tool ARGS -s <smb.conf>` inside the namespace, on the DC's own database. */
  samba(args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /** Apply LDIF with ldapmodify over LDAPS as Administrator (e.g. a unicodePwd change); returns its stdout. */
  modify(ldif: string): Promise<string>;
  /** Kill every process of the namespace, delete the veth pair and the namespace, remove the directory. */
  stop(): Promise<void>;
}

const REALM = 'EXAMPLE.TEST';
const DNS_DOMAIN = 'example.test';
const DOMAIN = 'EXAMPLE';
const BASE_DN = 'DC=example,DC=test';
const USERS_DN = `CN=Users,${BASE_DN}`;
/** Each meets the default complexity rule (3 of: upper, lower, digit, symbol; 7 characters or more). */
const ADMIN_PASSWORD = 'Adm1nPassw0rd!';
const BIND_PASSWORD = 'B1ndPassw0rd!';
const USER_PASSWORD = 'Passw0rd!';
const NETNS_PREFIX = 'doorman-dc-';
const USERS = [
  ['alice', 'Alice Anderson'],
  ['bob', 'Bob Brown'],
  ['carol', 'Carol Clark'],
] as const;
const GROUP_NAMES = ['Staff Users', 'proxy-users', 'Level1', 'Level2', 'Ünïcødé Group'] as const;

export async function startSambaAd(): Promise<SambaAd> {
  removeStaleNetns(NETNS_PREFIX);
  const name = netnsName(NETNS_PREFIX);
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  let netns: Netns | undefined;
  let samba: Started | undefined;
  // Registered before anything exists: a test process that ends without afterAll leaves nothing behind.
  const cleanUp = () => {
    netns?.remove();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };
  process.once('exit', cleanUp);
  const stop = async () => {
    await samba?.stop();
    cleanUp();
    process.removeListener('exit', cleanUp); // only now: the process may end while we wait
  };

  try {
    const runSamba = join(dir, 'run-samba');
    const targetDir = join(dir, 'dc');
    const smbConf = join(targetDir, 'etc', 'smb.conf');
    for (const sub of [runSamba, join(targetDir, 'run'), join(targetDir, 'log')])
      mkdirSync(sub, { recursive: true });
    if (!existsSync('/run/samba')) mkdirSync('/run/samba', { recursive: true }); // the mount point must exist
    writeFileSync(join(dir, 'resolv.conf'), `nameserver 127.0.0.1\nsearch ${DNS_DOMAIN}\n`);
    netns = createNetns(name, [
      { source: join(dir, 'hosts'), target: '/etc/hosts' },
      { source: join(dir, 'resolv.conf'), target: '/etc/resolv.conf' },
      { source: runSamba, target: '/run/samba' },
    ]);
    const ns = netns;
    const host = ns.address;
    writeFileSync(join(dir, 'hosts'), `127.0.0.1 localhost ${hostname()}\n${host} dc1.${DNS_DOMAIN} dc1\n`);
    const krb5ConfFile = join(dir, 'krb5.conf');
    writeFileSync(krb5ConfFile, krb5Conf(host));
    const env = { ...process.env, KRB5_CONFIG: krb5ConfFile };
    const exec = (command: string, args: readonly string[], options: RunOptions = {}) =>
      ns.exec(command, args, { env, ...options });

    const ca = await createCa(dir, 'Doorman Test AD CA');
    const server = await issueServerCertificate(ca, dir, {
      commonName: `dc1.${DNS_DOMAIN}`,
      dnsNames: [`dc1.${DNS_DOMAIN}`, DNS_DOMAIN, 'localhost'],
      ipAddresses: [host, '127.0.0.1'],
      name: 'dc1',
    });

    // samba-tool reads /etc/samba/smb.conf unless told otherwise, and provision copies whatever it finds there
    // ([homes], [printers], map to guest…) into the new smb.conf: start from an empty file instead.
    const emptyConf = join(dir, 'empty.conf');
    writeFileSync(emptyConf, '');
    await exec('samba-tool', [
      'domain',
      'provision',
      `--configfile=${emptyConf}`,
      `--realm=${REALM}`,
      `--domain=${DOMAIN}`,
      '--server-role=dc',
      '--dns-backend=SAMBA_INTERNAL',
      `--adminpass=${ADMIN_PASSWORD}`,
      `--targetdir=${targetDir}`,
      '--host-name=dc1',
      `--host-ip=${host}`, // also gives dc1.example.test its DNS A record
      '--use-rfc2307',
      `--option=interfaces=127.0.0.1 ${host}`,
      '--option=bind interfaces only=yes',
      // --targetdir moves private, state, lock and cache; these move what would still go to /run/samba.
      `--option=pid directory=${targetDir}/run`,
      `--option=ncalrpc dir=${targetDir}/run/ncalrpc`,
      `--option=ntp signd socket directory=${targetDir}/ntp_signd`,
      `--option=log file=${targetDir}/log/samba.log`,
    ]);
    // Provision silently drops some --option values (ldap server require strong auth), so edit the file.
    setGlobals(smbConf, {
      // Simple binds over plain LDAP, as Squid's LDAP helpers and Doorman do without TLS.
      'ldap server require strong auth': 'no',
      'dns forwarder': '',
      // samba_dnsupdate would start a Python process now and every 10 minutes; the records are in place.
      'server services': '-dnsupdate',
      'tls enabled': 'yes',
      'tls keyfile': server.keyFile,
      'tls certfile': server.certFile,
      'tls cafile': ca.certFile,
    });

    // -M single: 8 processes and ready in under a second (the default prefork: 62 processes, 2.4 s).
    samba = ns.spawn('samba', ['--foreground', '--no-process-group', '-M', 'single', '-s', smbConf], env);
    const running = samba;
    const fail = (error: Error) => {
      throw new Error(`samba: ${error.message}\n${running.stderr()}`);
    };
    await waitForPort(host, 636, 30_000, running.child).catch(fail);
    await waitForPort(host, 389, 30_000, running.child).catch(fail);
    const pid = running.child.pid;
    if (pid === undefined) throw new Error('samba: no PID');

    const tlsEnv = { ...process.env, LDAPTLS_CACERT: ca.certFile };
    const adminUpn = `Administrator@${DNS_DOMAIN}`;
    const ldapsUrl = `ldaps://${host}`;
    const rootDse = ['-x', '-H', ldapsUrl, '-s', 'base', '-b', '', 'defaultNamingContext'];
    await waitFor(
      async () => (await run('ldapsearch', rootDse, { env: tlsEnv, allowFailure: true })).code === 0,
      'LDAPS',
    );
    const ldapModify = (ldif: string, add = false) =>
      run(
        'ldapmodify',
        [...(add ? ['-a'] : []), '-x', '-H', ldapsUrl, '-D', adminUpn, '-w', ADMIN_PASSWORD],
        {
          input: safeLdif(ldif),
          env: tlsEnv,
        },
      );
    await ldapModify(
      renderLdifTemplate('samba-ad-data.ldif', {
        USER_PASSWORD: unicodePwd(USER_PASSWORD),
        BIND_PASSWORD: unicodePwd(BIND_PASSWORD),
      }),
      true,
    );
    // winbindd (started by samba) answers NTLM for ntlm_auth/wbinfo run through exec().
    await waitFor(async () => (await exec('wbinfo', ['-p'], { allowFailure: true })).code === 0, 'winbindd');

    return {
      host,
      url: `ldap://${host}`,
      ldapsUrl,
      caPem: ca.certPem,
      caFile: ca.certFile,
      realm: REALM,
      domain: DOMAIN,
      baseDn: BASE_DN,
      bindDn: `CN=Squid Bind,${USERS_DN}`,
      bindUpn: `squidbind@${DNS_DOMAIN}`,
      bindPassword: BIND_PASSWORD,
      adminUpn,
      adminPassword: ADMIN_PASSWORD,
      users: USERS.map(([login, fullName]) => ({
        name: login,
        dn: `CN=${fullName},${USERS_DN}`,
        upn: `${login}@${DNS_DOMAIN}`,
        password: USER_PASSWORD,
      })),
      groups: GROUP_NAMES.map((group) => ({ name: group, dn: `CN=${group},${USERS_DN}` })),
      netns: name,
      krb5ConfFile,
      smbConf,
      dir,
      pid,
      exec,
      samba: (args, options) => exec('samba-tool', [...args, '-s', smbConf], options),
      modify: async (ldif) => (await ldapModify(ldif)).stdout,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** AD's password attribute: the password in double quotes, UTF-16LE, here base64 for LDIF. */
function unicodePwd(password: string): string {
  return Buffer.from(`"${password}"`, 'utf16le').toString('base64');
}

/** Set `key = value` in [global], replacing any line for the same key. */
function setGlobals(file: string, values: Readonly<Record<string, string>>): void {
  const keys = new Set(Object.keys(values).map((k) => k.toLowerCase()));
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !keys.has(line.split('=')[0]?.trim().toLowerCase() ?? ''));
  const global = lines.findIndex((line) => line.trim() === '[global]');
  if (global < 0) throw new Error(`${file}: no [global] section`);
  lines.splice(global + 1, 0, ...Object.entries(values).map(([k, v]) => `\t${k} = ${v}`));
  writeFileSync(file, lines.join('\n'));
}

function krb5Conf(kdc: string): string {
  return `[libdefaults]
    default_realm = ${REALM}
    dns_lookup_realm = false
    dns_lookup_kdc = false
    dns_canonicalize_hostname = false
    rdns = false
[realms]
    ${REALM} = {
        kdc = ${kdc}
        admin_server = ${kdc}
    }
[domain_realm]
    .${DNS_DOMAIN} = ${REALM}
    ${DNS_DOMAIN} = ${REALM}
`;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
