import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExtraSquid, startLab, type ExtraSquid, type Lab } from '../harness/lab.ts';
import { createNetns, netnsName, removeStaleNetns, type Netns } from '../harness/netns.ts';
import { freePort, waitForPort, type Started } from '../harness/processes.ts';

/**
 * The proxy key goes to Doorman and nobody else, intercepted clients included. An intercepted request is sent
 * where its client was going (Squid's original destination), whatever its Host header names: a client that
 * connects to a server of its own with `Host: <Doorman>` must not get Squid to send that server the key.
 *
 * A client namespace whose port-80 traffic is redirected (nftables, a table of this test's own, matching only
 * its veth) to a Squid intercept port running the generated include; the "own server" is in a second namespace.
 */
const PREFIX = 'dmi';
let lab: Lab;
let client: Netns;
let server: Netns;
let squid: ExtraSquid;
let attacker: Started;
let table: string;
let seenFile: string;

beforeAll(async () => {
  removeStaleNetns(PREFIX);
  lab = await startLab();
  client = createNetns(netnsName(PREFIX), []);
  server = createNetns(netnsName(PREFIX), []);
  // The client reaches the server's address through the host (where the redirect catches it).
  await client.exec('ip', ['route', 'add', `${server.address}/32`, 'via', client.hostAddress]);

  // The client's own server: records every request's headers.
  seenFile = join(lab.dir, 'seen.txt');
  const script = join(lab.dir, 'record.py');
  writeFileSync(
    script,
    [
      'import http.server, sys',
      'class H(http.server.BaseHTTPRequestHandler):',
      '    def record(self):',
      "        self.rfile.read(int(self.headers.get('content-length') or 0))",
      "        open(sys.argv[1], 'a').write(self.requestline + '\\n' + str(self.headers) + '\\n')",
      "        self.send_response(200); self.send_header('content-length', '3'); self.end_headers(); self.wfile.write(b'own')",
      '    do_GET = do_POST = record',
      '    def log_message(self, *a): pass',
      "http.server.HTTPServer(('0.0.0.0', 80), H).serve_forever()",
    ].join('\n'),
  );
  attacker = server.spawn('python3', [script, seenFile]);
  await waitForPort(server.address, 80, 10_000, attacker.child);

  // A Squid with an intercept port on the host side of the client's link, running the lab's include.
  const interceptPort = await freePort();
  squid = await startExtraSquid(lab, 'intercept', {
    ports: [`${client.hostAddress}:${interceptPort} intercept`],
  });

  table = `doorman_test_${process.pid}`;
  execFileSync('nft', ['-f', '-'], {
    input: [
      `table inet ${table} {`,
      '  chain pre {',
      '    type nat hook prerouting priority dstnat; policy accept;',
      `    iifname "${client.hostInterface}" tcp dport 80 redirect to :${interceptPort}`,
      '  }',
      '}',
      '',
    ].join('\n'),
  });
}, 60_000);

afterAll(async () => {
  if (table) execFileSync('nft', ['delete', 'table', 'inet', table], { stdio: 'ignore' });
  await squid?.stop();
  await attacker?.stop();
  server?.remove();
  client?.remove();
  await lab?.stop();
});

describe('the proxy key and intercepted clients', () => {
  it('is not sent to where an intercepted request goes when only its Host header names Doorman', async () => {
    const doormanHost = `127.0.0.1:${lab.doormanPort}`;
    const res = await client.exec(
      'curl',
      [
        '-s',
        '--max-time',
        '15',
        '-H',
        `Host: ${doormanHost}`,
        '-d',
        `api_key=${lab.apiKey}`,
        '-d',
        'username=mallory',
        `http://${server.address}/api/login/`,
      ],
      { allowFailure: true },
    );
    // The request went through Squid (intercepted) to the client's own server, as it asked...

    expect(res.stdout, `${squid.log('access.log')}\n${squid.log('cache.log').slice(-6000)}`).toBe('own');
    const seen = existsSync(seenFile) ? readFileSync(seenFile, 'utf8') : '';
    expect(seen).toMatch(/^POST \/api\/login\/ HTTP\/1\.1$/m);
    expect(seen).toMatch(/^Via: .*squid/im);
    // ...without the key, and nothing at all of Doorman's header.
    const key = readFileSync(join(lab.dir, 'state', 'proxy-key'), 'utf8').trim();
    expect(seen).not.toContain(key);
    expect(seen).not.toMatch(/X-Doorman-Client/i);
  });
});
