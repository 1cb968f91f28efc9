import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { form, http } from '../harness/http.ts';
import { startExtraSquid, startLab, type ExtraSquid, type Lab } from '../harness/lab.ts';
import { freePort } from '../harness/processes.ts';

/**
 * What an ICAP filter behind Squid receives as the user (icap_send_client_username): the name itself, one form
 * per name, so "a b" and "a%20b" stay two users. The filter is a minimal stand-in that records each REQMOD's
 * X-Client-Username and answers 204; Squid runs the lab's Doorman include.
 */
let lab: Lab;
let squid: ExtraSquid;
let icap: Server;
const seen: Buffer[] = [];

/** OPTIONS and REQMOD with a null body: enough ICAP (RFC 3507) for Squid to ask and be told "no change". */
function recordingIcap(socket: Socket): void {
  let buffer = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buffer.subarray(0, end).toString('latin1');
      // REQMOD carries the HTTP request headers after the ICAP ones (Encapsulated: req-hdr=0, null-body=N)
      const body = /null-body=(\d+)/.exec(head);
      const total = end + 4 + (body ? Number(body[1]) : 0);
      if (buffer.length < total) return;
      const message = buffer.subarray(0, end);
      buffer = buffer.subarray(total);
      if (head.startsWith('OPTIONS')) {
        socket.write(
          'ICAP/1.0 200 OK\r\nMethods: REQMOD\r\nAllow: 204\r\nPreview: 0\r\nISTag: "t1"\r\n' +
            'Encapsulated: null-body=0\r\n\r\n',
        );
      } else {
        const line = message
          .toString('latin1')
          .split('\r\n')
          .find((l) => l.toLowerCase().startsWith('x-client-username:'));
        if (line !== undefined) seen.push(Buffer.from(line.slice(line.indexOf(':') + 1).trim(), 'latin1'));
        socket.write('ICAP/1.0 204 No Content\r\nISTag: "t1"\r\n\r\n');
      }
    }
  });
  socket.on('error', () => socket.destroy());
}

beforeAll(async () => {
  lab = await startLab();
  const icapPort = await freePort();
  icap = createServer(recordingIcap);
  await new Promise<void>((resolve) => icap.listen(icapPort, '127.0.0.1', resolve));
  squid = await startExtraSquid(lab, 'icap', {
    before: [
      'icap_enable on',
      'icap_send_client_username on',
      'icap_client_username_header X-Client-Username',
      `icap_service test_filter reqmod_precache bypass=0 icap://127.0.0.1:${icapPort}/reqmod`,
      'adaptation_access test_filter allow all',
    ],
  });
});

afterAll(async () => {
  await squid?.stop();
  await new Promise((r) => (icap ? icap.close(r) : r(undefined)));
  await lab?.stop();
});

describe('the user name an ICAP filter receives', () => {
  it('is the name itself, in UTF-8: "a b" and "a%20b" stay two names', async () => {
    const names = [
      ['127.0.0.20', 'a b'],
      ['127.0.0.21', 'a%20b'],
      ['127.0.0.22', 'été'],
    ] as const;
    for (const [from, username] of names) {
      const login = await http(`${lab.doormanUrl}api/login/`, {
        method: 'POST',
        from,
        ...form({ api_key: lab.apiKey, username }),
      });
      expect(login.status).toBe(200);
      seen.length = 0;
      const page = await http(`${lab.originUrl}page`, {
        from,
        proxy: { host: '127.0.0.1', port: squid.port },
      });
      expect(page.status).toBe(200);
      expect(
        seen.map((b) => b.toString('utf8')),
        username,
      ).toEqual([username]);
    }
  });
});
