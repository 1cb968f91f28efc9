import { readFileSync } from 'node:fs';
import { createServer as createTcpServer, connect, type Server as TcpServer } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { form, http, type Response } from '../harness/http.ts';
import { startExtraSquid, startLab, type ExtraSquid, type Lab } from '../harness/lab.ts';
import { freePort } from '../harness/processes.ts';
import { run } from '../harness/run.ts';
import { createCa, issueServerCertificate } from '../harness/tls.ts';

/**
 * No client can obtain, end or rate-limit a session for an address other than its own, by any route: straight
 * to Doorman, proxied by Squid, or tunnelled through Squid (plain or TLS), whatever forwarding headers it
 * writes. Two real Squids run the generated include: the lab's (Doorman's standalone configuration), and a
 * careless administrator's that allows every CONNECT before the include, to show that Doorman itself refuses
 * a tunnel even when Squid lets one through.
 */
let lab: Lab;
let careless: ExtraSquid;
let carelessPort: number;
let tlsFront: TcpServer;
let tlsPort: number;
let caFile: string;
let services: TcpServer;
let servicePort: number;

/** Every header a client can write to claim another address. */
const FORGED = [
  'X-Forwarded-For: 127.0.0.99',
  'Forwarded: for=127.0.0.99',
  'X-Real-IP: 127.0.0.99',
  'X-Doorman-Client: 0123456789012345678901234567890123456789012 127.0.0.99',
];

beforeAll(async () => {
  lab = await startLab();
  // Doorman behind a TLS front that passes bytes on (stunnel, an nginx stream): what an https baseUrl is.
  const ca = await createCa(lab.dir);
  const cert = await issueServerCertificate(ca, lab.dir, {
    commonName: '127.0.0.1',
    ipAddresses: ['127.0.0.1'],
  });
  caFile = ca.certFile;
  tlsPort = await freePort();
  tlsFront = createTlsServer(
    { cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) },
    (socket) => {
      const upstream = connect({ host: '127.0.0.1', port: lab.doormanPort });
      socket.pipe(upstream).pipe(socket);
      const close = () => (socket.destroy(), upstream.destroy());
      socket.on('error', close);
      upstream.on('error', close);
    },
  );
  await new Promise<void>((resolve) => tlsFront.listen(tlsPort, '127.0.0.1', resolve));
  // A service of the proxy host's own (slapd, ssh...): nobody may tunnel to it.
  servicePort = await freePort();
  services = createTcpServer((socket) => socket.end('service banner\r\n'));
  await new Promise<void>((resolve) => services.listen(servicePort, '127.0.0.1', resolve));

  // The careless administrator's Squid: every CONNECT allowed before Doorman's include.
  careless = await startExtraSquid(lab, 'careless', {
    before: ['acl careless_connect method CONNECT', 'http_access allow careless_connect'],
  });
  carelessPort = careless.port;
});

afterAll(async () => {
  await careless?.stop();
  await new Promise((r) => (tlsFront ? tlsFront.close(r) : r(undefined)));
  await new Promise((r) => (services ? services.close(r) : r(undefined)));
  await lab?.stop();
});

interface CurlOutcome {
  /** The CONNECT answer's status (0 when there was no CONNECT). */
  connect: number;
  /** The final answer's status (0 when there was none, e.g. a refused tunnel). */
  status: number;
  body: string;
}

/** curl as a client at `from`, optionally through a proxy, with -p (tunnel) when asked. */
async function curl(
  url: string,
  options: { from: string; proxyPort?: number; tunnel?: boolean; fields?: Record<string, string> },
): Promise<CurlOutcome> {
  const args = [
    '-s',
    '--max-time',
    '10',
    '--interface',
    options.from,
    '-w',
    '\n%{http_connect} %{http_code}',
  ];
  if (options.proxyPort !== undefined) args.push('-x', `http://127.0.0.1:${options.proxyPort}`);
  if (options.tunnel) args.push('-p');
  if (url.startsWith('https:')) args.push('--cacert', caFile);
  for (const h of FORGED) args.push('-H', h);
  for (const [k, v] of Object.entries(options.fields ?? {})) args.push('--data-urlencode', `${k}=${v}`);
  const { stdout } = await run('curl', [...args, url], { allowFailure: true });
  const at = stdout.lastIndexOf('\n');
  const [connect, status] = stdout
    .slice(at + 1)
    .split(' ')
    .map(Number);
  return { connect: connect ?? 0, status: status ?? 0, body: stdout.slice(0, at) };
}

const browse = (from: string): Promise<Response> =>
  http(`${lab.originUrl}page`, { from, proxy: { host: '127.0.0.1', port: lab.squidPort } });
const sessionIps = async () =>
  (await lab.cli('sessions', 'list')).stdout
    .split('\n')
    .slice(1)
    .map((l) => l.split('\t')[0])
    .filter(Boolean);
const loginUrl = () => `${lab.doormanUrl}api/login/`;
const logoutUrl = () => `${lab.doormanUrl}api/logout/`;
const tlsLoginUrl = () => `https://127.0.0.1:${tlsPort}/api/login/`;

describe('the client address, by every route', () => {
  it('straight to Doorman: the session is for the TCP peer, whatever the headers claim', async () => {
    const res = await curl(loginUrl(), {
      from: '127.0.0.2',
      fields: { api_key: lab.apiKey, username: 'victim' },
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true, username: 'victim', ip: '127.0.0.2' });
    // 127.0.0.99 is the victim's address from here on
    const victim = await http(loginUrl(), { method: 'POST', from: '127.0.0.99', ...formOf('victim') });
    expect(JSON.parse(victim.body)).toMatchObject({ ip: '127.0.0.99' });
  });

  it('proxied by Squid as plain HTTP: for the client, the forged X-Doorman-Client removed by Squid', async () => {
    const res = await curl(loginUrl(), {
      from: '127.0.0.3',
      proxyPort: lab.squidPort,
      fields: { api_key: lab.apiKey, username: 'carol' },
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true, username: 'carol', ip: '127.0.0.3' });
    expect((await browse('127.0.0.3')).headers['x-doorman-user']).toBe('carol');
    expect((await browse('127.0.0.99')).headers['x-doorman-user']).toBe('victim');
  });

  it('tunnelled through the generated configuration: Squid refuses the CONNECT, plain or TLS', async () => {
    for (const url of [loginUrl(), tlsLoginUrl(), logoutUrl()]) {
      const res = await curl(url, {
        from: '127.0.0.4',
        proxyPort: lab.squidPort,
        tunnel: true,
        fields: { api_key: lab.apiKey, username: 'ceo' },
      });
      expect(res.connect, url).toBe(403);
      expect(res.status, url).toBe(0);
    }
    expect((await browse('127.0.0.99')).headers['x-doorman-user']).toBe('victim');
  });

  it('tunnelled through a Squid that allows it: Doorman refuses, plain or TLS, login or logout', async () => {
    for (const url of [loginUrl(), tlsLoginUrl(), logoutUrl(), tlsLoginUrl().replace('login', 'logout')]) {
      const res = await curl(url, {
        from: '127.0.0.4',
        proxyPort: carelessPort,
        tunnel: true,
        fields: { api_key: lab.apiKey, username: 'ceo' },
      });
      expect(res.connect, url).toBe(200);
      expect(res.status, url).toBe(403);
      expect(JSON.parse(res.body), url).toMatchObject({ ok: false, error: 'unproven_client' });
    }
    const ips = await sessionIps();
    expect(ips).not.toContain('127.0.0.1');
    expect(ips).not.toContain('127.0.0.4');
    expect((await browse('127.0.0.99')).headers['x-doorman-user']).toBe('victim');
  });

  it('tunnelled wrong keys "from" the victim never lock the victim’s own key out', async () => {
    for (let i = 0; i < 12; i++) {
      const res = await curl(loginUrl(), {
        from: '127.0.0.4',
        proxyPort: carelessPort,
        tunnel: true,
        fields: { api_key: 'dm.wrongwrongwr.wrong', username: 'ceo' },
      });
      expect(res.status).toBe(403);
    }
    const own = await http(loginUrl(), { method: 'POST', from: '127.0.0.99', ...formOf('victim') });
    expect(own.status).toBe(200);
  });

  it('an identified client cannot tunnel to the proxy host’s own services', async () => {
    expect((await browse('127.0.0.3')).status).toBe(200);
    const res = await curl(`http://127.0.0.1:${servicePort}/`, {
      from: '127.0.0.3',
      proxyPort: lab.squidPort,
      tunnel: true,
    });
    expect(res.connect).toBe(403);
    expect(res.body).not.toContain('service banner');
    expect(lab.accessLog().some((l) => l.includes('TCP_TUNNEL/200'))).toBe(false);
  });
});

function formOf(username: string): { body: string; headers: Record<string, string> } {
  return form({ api_key: lab.apiKey, username });
}
