import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReqmodRequest } from '../../icap-server/parser.ts';
import { createIcapServer, type Decision, type IcapServer } from '../../icap-server/server.ts';
import { curlViaProxy } from '../harness/curl.ts';
import { form, http } from '../harness/http.ts';
import { startExtraSquid, startLab, type ExtraSquid, type Lab } from '../harness/lab.ts';
import { run } from '../harness/run.ts';

/**
 * The ICAP service against the two ICAP clients that matter: c-icap-client (Debian's c-icap, the reference
 * client) and Squid 5.7 itself, with a decision that sends one URL to a splash page (302) and lets the rest
 * through (204).
 */
const SPLASH = 'http://portal.example.test/splash';
const seen: ReqmodRequest[] = [];

function decide(request: ReqmodRequest): Decision {
  seen.push(request);
  if (!request.http.target.includes('/login-please')) return { kind: 'no-change' };
  return {
    kind: 'respond',
    status: 302,
    headers: {
      Location: `${SPLASH}?url=${encodeURIComponent(request.http.target)}`,
      'Cache-Control': 'no-store',
    },
  };
}

let icap: IcapServer;
let port: number;
const logged: string[] = [];

beforeAll(async () => {
  icap = createIcapServer({ decide, istag: () => 'it-1', log: (line) => logged.push(line) });
  ({ port } = await icap.listen(0, '127.0.0.1'));
});

afterAll(async () => {
  await icap?.close();
});

/** c-icap-client's output (it prints the ICAP and encapsulated headers with -v), stdout and stderr together. */
async function cIcapClient(...args: string[]): Promise<string> {
  const { stdout, stderr } = await run('c-icap-client', ['-i', '127.0.0.1', '-p', String(port), ...args]);
  return stdout + stderr;
}

describe('with c-icap-client', () => {
  it('OPTIONS: REQMOD, 204 allowed, preview 0, the ISTag', async () => {
    const out = await cIcapClient('-s', 'reqmod', '-v');
    expect(out).toContain('Allow 204: Yes');
    expect(out).toContain('Preview: 0');
    expect(out).toContain('Methods: REQMOD');
    expect(out).toContain('ISTag: "it-1"');
    // What one client (Squid, at one address) may open: the per-address cap, by default half of the 100.
    expect(out).toContain('Max-Connections: 50');
  });

  it('REQMOD of a URL to let through: 204', async () => {
    const out = await cIcapClient(
      '-s',
      'reqmod',
      '-req',
      'http://example.test/ok',
      '-x',
      'X-Client-IP: 10.1.2.3',
      '-v',
    );
    expect(out).toContain('ICAP/1.0 204 No Content');
    expect(seen.at(-1)?.headers.get('x-client-ip')).toBe('10.1.2.3');
  });

  it('REQMOD of the URL to redirect: 200 with an HTTP 302 and its Location', async () => {
    const out = await cIcapClient('-s', 'reqmod', '-req', 'http://example.test/login-please', '-v');
    expect(out).toContain('ICAP/1.0 200 OK');
    expect(out).toMatch(/Encapsulated: res-hdr=0, null-body=\d+/);
    expect(out).toContain('HTTP/1.1 302 Found');
    expect(out).toContain(
      `Location: ${SPLASH}?url=${encodeURIComponent('http://example.test/login-please')}`,
    );
  });

  it('REQMOD with a body and a preview: 204 after the preview', async () => {
    const { dir, file } = bodyFile();
    try {
      const out = await cIcapClient('-s', 'reqmod', '-req', 'http://example.test/upload', '-f', file, '-v');
      expect(out).toContain('ICAP/1.0 204 No Content');
      const request = seen.at(-1);
      expect(request?.body.kind).toBe('preview');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('REQMOD with a body, no preview and no 204 allowed: the request comes back whole', async () => {
    const { dir, file } = bodyFile();
    try {
      const output = join(dir, 'out');
      const out = await cIcapClient(
        '-s',
        'reqmod',
        '-req',
        'http://example.test/upload',
        '-f',
        file,
        '-nopreview',
        '-no204',
        '-o',
        output,
        '-v',
      );
      expect(out).toMatch(/Encapsulated: req-hdr=0, req-body=\d+/);
      const same = await run('cmp', [file, output], { allowFailure: true });
      expect(same.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('RESPMOD: 405, the service offers REQMOD only', async () => {
    const out = await cIcapClient('-s', 'reqmod', '-resp', 'http://example.test/', '-v');
    expect(out).toContain('ICAP/1.0 405 Method Not Allowed For Service');
  });

  it('another service name: 404, and the connection closes', async () => {
    const out = await cIcapClient('-s', 'other', '-v');
    expect(out).toContain('ICAP/1.0 404 ICAP Service Not Found');
    expect(out).toContain('Connection: close');
  });
});

describe('through Squid 5.7', () => {
  let lab: Lab;
  let squid: ExtraSquid;
  const client = '127.0.0.30';

  beforeAll(async () => {
    lab = await startLab();
    squid = await startExtraSquid(lab, 'icap-server', {
      before: [
        'icap_enable on',
        'icap_send_client_ip on',
        `icap_service doorman_portal reqmod_precache bypass=0 icap://127.0.0.1:${port}/reqmod`,
        'adaptation_access doorman_portal allow all',
      ],
    });
    // Squid asks ICAP only about requests http_access lets through: this client logs in first.
    const login = await http(`${lab.doormanUrl}api/login/`, {
      method: 'POST',
      from: client,
      ...form({ api_key: lab.apiKey, username: 'alice' }),
    });
    expect(login.status).toBe(200);
    logged.length = 0;
  });

  afterAll(async () => {
    await squid?.stop();
    await lab?.stop();
  });

  const proxy = () => ({ host: '127.0.0.1', port: squid.port });

  it('sends the URL to redirect to the splash page (302), the origin never asked', async () => {
    const url = `${lab.originUrl}login-please?x=1`;
    const page = await http(url, { from: client, proxy: proxy() });
    expect(page.status).toBe(302);
    expect(page.headers.location).toBe(`${SPLASH}?url=${encodeURIComponent(url)}`);
    const curl = await curlViaProxy(url, `http://127.0.0.1:${squid.port}`, { from: client });
    expect(curl.status).toBe(302);
    expect(curl.headers).toContain(`Location: ${SPLASH}?url=`);
    expect(seen.at(-1)?.headers.get('x-client-ip')).toBe(client);
  });

  it("lets other requests through (204): the origin's page", async () => {
    const page = await http(`${lab.originUrl}page`, { from: client, proxy: proxy() });
    expect(page.status).toBe(200);
    expect(page.body).toBe('origin\n');
  });

  it('lets a POST through after its empty preview, body and all', async () => {
    const before = seen.length;
    const page = await http(`${lab.originUrl}form`, {
      method: 'POST',
      from: client,
      proxy: proxy(),
      ...form({ a: '1'.repeat(5000) }),
    });
    expect(page.status).toBe(200);
    expect(page.body).toBe('origin\n');
    expect(seen.slice(before).map((r) => [r.http.method, r.body.kind])).toEqual([['POST', 'preview']]);
  });

  it('keeps its connection from Squid open across requests, with no protocol error', async () => {
    for (let i = 0; i < 5; i++) {
      const page = await http(`${lab.originUrl}again-${i}`, { from: client, proxy: proxy() });
      expect(page.status).toBe(200);
    }
    expect(icap.connections).toBeGreaterThan(0);
    expect(logged).toEqual([]);
  });
});

/** A 4 KB text file to send as a request body, in a directory of its own. */
function bodyFile(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'icap-body-'));
  const file = join(dir, 'body.txt');
  writeFileSync(file, randomBytes(3000).toString('base64'));
  return { dir, file };
}
