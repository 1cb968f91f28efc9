import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PortalDecisionSettings } from '../../icap-server/decision.ts';
import { portalService } from '../../icap-server/portal-service.ts';
import { createIcapServer, type IcapServer } from '../../icap-server/server.ts';
import { systemClock } from '../../lib/clock.ts';
import { dbPath, parseConfig } from '../../lib/config/load.ts';
import type { ConfigInput } from '../../lib/config/schema.ts';
import { openDatabase, type Db } from '../../lib/store/database.ts';
import { SessionStore } from '../../lib/store/session-store.ts';
import { PortalUrlSigner } from '../../lib/security/portal-url-signature.ts';
import { ProxyKeyCheck, proxyKeyPath, readProxyKey } from '../../lib/security/proxy-key.ts';
import { OWN_CA_SUBJECT } from '../../squid-conf/tls-setup.ts';
import { ROOT, startLab, type Lab } from '../harness/lab.ts';
import { createNetns, netnsName, removeStaleNetns, type Netns } from '../harness/netns.ts';
import { portalLocation, signedPortal } from '../harness/portal-url.ts';
import { freePort, waitForPort, type Started } from '../harness/processes.ts';
import { run, type RunResult } from '../harness/run.ts';
import { squidOpenssl, startSquid, type RunningSquid } from '../harness/squid-openssl.ts';
import { createCa, issueServerCertificate, type CertificateAuthority } from '../harness/tls.ts';

/**
 * HTTPS interception through the real OpenSSL Squid (squid-openssl, unpacked by install-system.sh test), with
 * the include `doorman squid-conf` writes for squid.intercept.httpsPort and Doorman's CA made by
 * `doorman squid-conf --init-tls` at test time. Two clients in namespaces of their own, their ports 80 and 443
 * REDIRECTed (nftables, a table of this test's own) to the Squid's intercept ports in this namespace; one has
 * a session in the lab's DB, the other none. The origin, in a third namespace, serves HTTPS with a certificate
 * from a CA of its own, which Squid trusts (tls_outgoing_options) and the clients may or may not.
 * Doorman's real ICAP service (in this process) answers the unidentified client with the splash redirect.
 */
const PREFIX = 'dmb';
const ORIGIN_NAME = 'origin.example.test';
const URL = `https://${ORIGIN_NAME}/secure?a=1`;
const settings: PortalDecisionSettings = { mode: 'authentication', walledGarden: { hosts: [], cidrs: [] } };

let lab: Lab;
let stranger: Netns;
let member: Netns;
let origin: Netns;
let originServer: Started;
let originCa: CertificateAuthority;
let icap: IcapServer;
let db: Db;
let table: string;
/** What ICAP was asked: method and target of each encapsulated request. */
const asked: string[] = [];
let doormanCaCert: string;
/** One line per TCP connection the origin accepted. */
let connectionLog: string;
const originConnections = () => readFileSync(connectionLog, 'utf8').split('\n').filter(Boolean).length;
let openssl: ReturnType<typeof squidOpenssl>;
/** The lab's config with the intercept ports, this mode and this test's ICAP service. */
let tlsConfig: (mode: 'bump' | 'refuse', ports: { http: number; https: number }) => ConfigInput;

beforeAll(async () => {
  openssl = squidOpenssl();
  removeStaleNetns(PREFIX);
  lab = await startLab();
  const labConfig = JSON.parse(readFileSync(lab.configFile, 'utf8')) as ConfigInput;
  const config = parseConfig(labConfig, lab.configFile);
  stranger = createNetns(netnsName(PREFIX), []);
  member = createNetns(netnsName(PREFIX), []);
  origin = createNetns(netnsName(PREFIX), []);
  // The clients reach the origin's address through this namespace, where the REDIRECT catches them.
  for (const client of [stranger, member])
    await client.exec('ip', ['route', 'add', `${origin.address}/32`, 'via', client.hostAddress]);

  // The origin: HTTPS with its own CA's certificate, answering its path.
  const tlsDir = join(lab.dir, 'origin-tls');
  mkdirSync(tlsDir);
  originCa = await createCa(tlsDir, 'Origin Test CA');
  const cert = await issueServerCertificate(originCa, tlsDir, {
    commonName: ORIGIN_NAME,
    dnsNames: [ORIGIN_NAME],
    ipAddresses: [origin.address],
  });
  const script = join(lab.dir, 'origin.py');
  writeFileSync(
    script,
    [
      'import http.server, ssl, sys',
      'class H(http.server.BaseHTTPRequestHandler):',
      '    def do_GET(self):',
      "        body = ('origin ' + self.path).encode()",
      "        self.send_response(200); self.send_header('content-length', str(len(body))); self.end_headers()",
      '        self.wfile.write(body)',
      '    def log_message(self, *a): pass',
      'class S(http.server.ThreadingHTTPServer):',
      '    def verify_request(self, request, address):',
      "        with open(sys.argv[3], 'a') as log: log.write(address[0] + '\\n')",
      '        return True',
      "server = S(('0.0.0.0', 443), H)",
      'context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)',
      'context.load_cert_chain(sys.argv[1], sys.argv[2])',
      'server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)',
      'server.serve_forever()',
    ].join('\n'),
  );
  connectionLog = join(lab.dir, 'origin-connections.log');
  writeFileSync(connectionLog, '');
  originServer = origin.spawn('python3', [script, cert.certFile, cert.keyFile, connectionLog]);
  await waitForPort(origin.address, 443, 10_000, originServer.child);

  // Doorman's ICAP service, looking clients up in the lab's DB (read-only: the DB is `doorman serve`'s).
  db = openDatabase(dbPath(config), { readonly: true });
  const sessions = new SessionStore(db, systemClock);
  const service = portalService({
    settings: () => settings,
    settingsVersion: () => 1,
    baseUrl: lab.doormanUrl,
    directoryHosts: [],
    isIdentified: (ip) => sessions.find({ kind: 'ip', value: ip }) !== undefined,
    portalUrls: new PortalUrlSigner('the ssl-bump test’s secret', systemClock),
    // The key the generated include sends (adaptation_meta): the lab's proxy key.
    proxyKey: new ProxyKeyCheck(readProxyKey(proxyKeyPath(config))),
  });
  icap = createIcapServer({
    ...service,
    decide: (request) => {
      asked.push(`${request.http.method} ${request.http.target}`);
      return service.decide(request);
    },
    log: () => {},
  });
  const { port: icapPort } = await icap.listen(0, '127.0.0.1');
  // The config the include is made from: the lab's, plus the intercept ports and this ICAP service.
  tlsConfig = (mode, ports) => ({
    ...labConfig,
    squid: {
      ...labConfig.squid,
      intercept: {
        httpPort: ports.http,
        httpsPort: ports.https,
        tls: { mode, certgen: openssl.certgen },
      },
    },
    icap: { host: '127.0.0.1', port: icapPort },
  });

  // Doorman's CA, made by the command an administrator runs (as root: the cert DB goes to user proxy).
  const file = writeConfigFile('init', tlsConfig('bump', { http: 3129, https: 3130 }));
  const init = await run(join(ROOT, 'bin', 'doorman'), ['squid-conf', '--init-tls', '--config', file]);
  doormanCaCert = join(`${config.stateDir}-tls`, 'ssl-bump-ca.crt');
  expect(init.stdout).toContain(`Clients must trust this certificate: ${doormanCaCert}`);

  await startSessionAsServiceUser({
    key: { kind: 'ip', value: member.address },
    username: 'alice',
    source: 'api',
  });
  table = `doorman_bump_${process.pid}`;
}, 60_000);

afterAll(async () => {
  if (table) execFileSync('nft', ['delete', 'table', 'inet', table], { stdio: 'ignore' });
  await originServer?.stop();
  await icap?.close();
  db?.close();
  for (const ns of [stranger, member, origin]) ns?.remove();
  await lab?.stop();
});

function writeConfigFile(name: string, config: ConfigInput): string {
  const file = join(lab.dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(config), { mode: 0o644 });
  return file;
}

/** An OpenSSL Squid running `doorman squid-conf`'s include for this mode; both clients' 80/443 sent to it. */
async function startBumpingSquid(mode: 'bump' | 'refuse'): Promise<RunningSquid> {
  const ports = { http: await freePort(), https: await freePort() };
  const dir = join(lab.dir, `squid-${mode}`);
  mkdirSync(dir);
  const file = writeConfigFile(mode, tlsConfig(mode, ports));
  const include = join(dir, 'doorman.conf');
  const generated = await run(join(ROOT, 'bin', 'doorman'), [
    'squid-conf',
    '--config',
    file,
    '--squid',
    openssl.squid,
  ]);
  writeFileSync(include, generated.stdout, { mode: 0o600 });
  writeFileSync(join(dir, 'hosts'), `${origin.address} ${ORIGIN_NAME}\n`);
  const squid = await startSquid(openssl.squid, dir, {
    include,
    before: [
      // Every name a client sends must resolve here (host_verify_strict, and no DNS wait).
      `hosts_file ${join(dir, 'hosts')}`,
      // Squid checks the origin's certificate when it connects (bump: to mimic it).
      `tls_outgoing_options cafile=${originCa.certFile}`,
      'sslcrtd_children 2 startup=1 idle=1',
    ],
  });
  const rules = [stranger, member].flatMap((client) => [
    `    iifname "${client.hostInterface}" tcp dport 80 redirect to :${ports.http}`,
    `    iifname "${client.hostInterface}" tcp dport 443 redirect to :${ports.https}`,
  ]);
  execFileSync('nft', ['-f', '-'], {
    input: [
      `table inet ${table} {}`,
      `delete table inet ${table}`,
      `table inet ${table} {`,
      '  chain pre {',
      '    type nat hook prerouting priority dstnat; policy accept;',
      ...rules,
      '  }',
      '}',
      '',
    ].join('\n'),
  });
  return squid;
}

interface Fetched {
  /** curl's exit code: 0, or 35 (TLS handshake failed), 60 (certificate not trusted), 28 (timeout)... */
  exit: number | null;
  status: string;
  location: string;
  body: string;
  /** The certificate issuer curl saw ("CN=..."), when it got one. */
  issuer: string | undefined;
  stderr: string;
}

/** curl https://origin.example.test/… from a client namespace, trusting only `trust` (a CA certificate file). */
async function fetchFrom(client: Netns, trust: string, url = URL): Promise<Fetched> {
  const marker = '\n--curl--';
  const result: RunResult = await client.exec(
    'curl',
    [
      '-sS',
      '-v',
      '--max-time',
      '20',
      '--resolve',
      `${ORIGIN_NAME}:443:${origin.address}`,
      '--cacert',
      trust,
      '-w',
      `${marker}%{http_code} %{redirect_url}`,
      url,
    ],
    { allowFailure: true },
  );
  const cut = result.stdout.lastIndexOf(marker);
  const [status = '', location = ''] = result.stdout.slice(cut + marker.length).split(' ');
  return {
    exit: result.code,
    status,
    location,
    body: result.stdout.slice(0, cut),
    issuer: /^\* {2}issuer: (.*)$/m.exec(result.stderr)?.[1],
    stderr: result.stderr,
  };
}

const doormanIssuer = OWN_CA_SUBJECT.slice(1).replace('/', '; ');

describe('ssl-bump (squid.intercept.tls.mode bump)', () => {
  let squid: RunningSquid;
  beforeAll(async () => {
    squid = await startBumpingSquid('bump');
  }, 30_000);
  afterAll(() => squid?.stop());
  const logs = () => `${squid.log('access.log')}\n${squid.log('cache.log').slice(-4000)}`;

  it('made Doorman’s CA with its key private and the certificate for clients beside it', () => {
    const caDir = `${join(lab.dir, 'state')}-tls`;
    expect(statSync(join(caDir, 'ssl-bump-ca.pem'))).toMatchObject({ uid: 0, mode: 0o100600 });
    expect(readFileSync(doormanCaCert, 'utf8')).not.toMatch(/PRIVATE KEY/);
  });

  it('an unidentified client that trusts Doorman’s CA gets the 302 to the splash page inside its TLS', async () => {
    const got = await fetchFrom(stranger, doormanCaCert);
    expect(got.exit, `${got.stderr}\n${logs()}`).toBe(0);
    expect(got.status).toBe('302');
    expect(portalLocation(got.location)).toEqual(signedPortal(`${lab.doormanUrl}portal/`, URL));
    // decrypted by Squid with a certificate Doorman's CA signed for the origin's name
    expect(got.issuer).toBe(doormanIssuer);
    expect(asked).toContain(`GET ${URL}`);
    // the made-up CONNECT of the intercepted connection never reached ICAP (its 302 would break the handshake)
    expect(asked.filter((a) => a.startsWith('CONNECT'))).toEqual([]);
  });

  it('bumping at step 2 contacts the origin first (to mimic its certificate): accepted, see docs/captive-portal.md', async () => {
    const before = originConnections();
    expect((await fetchFrom(stranger, doormanCaCert, `${URL}&again`)).status).toBe('302');
    expect(originConnections()).toBeGreaterThan(before);
  });

  it('an unidentified client that does not trust Doorman’s CA gets a certificate error, not the splash', async () => {
    const got = await fetchFrom(stranger, originCa.certFile);
    expect(got.exit).toBe(60);
  });

  it('an identified client is spliced: the origin’s own certificate and page, ICAP never asked', async () => {
    const before = asked.length;
    const got = await fetchFrom(member, originCa.certFile);
    expect(got.exit, `${got.stderr}\n${logs()}`).toBe(0);
    expect(got.status).toBe('200');
    expect(got.body).toBe('origin /secure?a=1');
    expect(got.issuer).toBe('CN=Origin Test CA');
    // trusting only Doorman's CA fails: nothing of this connection was decrypted
    expect((await fetchFrom(member, doormanCaCert)).exit).toBe(60);
    expect(asked.length).toBe(before);
    // the tunnel is logged with the user (the step-1 CONNECT line, where the session helper was asked)
    await expect
      .poll(() => squid.log('access.log'))
      .toMatch(
        new RegExp(
          `^\\S+\\s+\\d+ ${member.address.replaceAll('.', '\\.')} \\S+ \\d+ CONNECT \\S+:443 alice `,
          'm',
        ),
      );
  });

  it('keeps working after a reconfigure (Squid re-reads the root-only CA file)', async () => {
    squid.reconfigure();
    await waitForLog(
      () => squid.log('cache.log'),
      /Accepting NAT intercepted SSL bumped HTTPS Socket connections.*\n[\s\S]*Accepting NAT intercepted SSL bumped HTTPS Socket connections/,
    );
    const got = await fetchFrom(stranger, doormanCaCert);
    expect(got.status, `${got.stderr}\n${logs()}`).toBe('302');
    expect(squid.log('cache.log')).not.toMatch(
      /FATAL|unable to load certificate|No valid signing certificate/,
    );
  });
});

describe('refusing unidentified HTTPS (squid.intercept.tls.mode refuse)', () => {
  let squid: RunningSquid;
  beforeAll(async () => {
    squid = await startBumpingSquid('refuse');
  }, 30_000);
  afterAll(() => squid?.stop());

  it('an unidentified client’s TLS handshake fails at once (a TLS error, not a timeout), nothing decrypted', async () => {
    const before = asked.length;
    const connections = originConnections();
    for (const trust of [doormanCaCert, originCa.certFile]) {
      const got = await fetchFrom(stranger, trust);
      expect(got.exit, got.stderr).toBe(35);
    }
    expect(asked.length).toBe(before);
    // terminated after the peek: Squid never went to the origin (bump would have, to mimic its certificate)
    expect(originConnections()).toBe(connections);
    // by the terminate rule, not by a failure to bump (which would close the connection too, with ERRORs)
    expect(squid.log('cache.log')).not.toMatch(/ERROR|FATAL/);
  });

  it('an identified client is still spliced to the origin', async () => {
    const got = await fetchFrom(member, originCa.certFile);
    expect(got.exit, got.stderr).toBe(0);
    expect(got.body).toBe('origin /secure?a=1');
    expect(got.issuer).toBe('CN=Origin Test CA');
  });
});

async function waitForLog(read: () => string, pattern: RegExp): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (pattern.test(read())) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`log never matched ${pattern}:\n${read().slice(-3000)}`);
}

/** SessionStore.start in a process of the service user's (root must not leave DB files the service cannot open). */
async function startSessionAsServiceUser(input: Record<string, unknown>): Promise<void> {
  const script = [
    `import { readFileSync } from 'node:fs';`,
    `import { dbPath, parseConfig } from ${JSON.stringify(join(ROOT, 'lib/config/load.ts'))};`,
    `import { openDatabase } from ${JSON.stringify(join(ROOT, 'lib/store/database.ts'))};`,
    `import { SessionStore } from ${JSON.stringify(join(ROOT, 'lib/store/session-store.ts'))};`,
    `import { systemClock } from ${JSON.stringify(join(ROOT, 'lib/clock.ts'))};`,
    `const file = ${JSON.stringify(lab.configFile)};`,
    `const db = openDatabase(dbPath(parseConfig(JSON.parse(readFileSync(file, 'utf8')), file)));`,
    `new SessionStore(db, systemClock).start(${JSON.stringify(input)});`,
    'db.close();',
  ].join('\n');
  await run('setpriv', [
    '--reuid=proxy',
    '--regid=proxy',
    '--clear-groups',
    process.execPath,
    '--input-type=module',
    '-e',
    script,
  ]);
}
