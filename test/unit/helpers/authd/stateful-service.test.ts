import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { serveStatefulConnection } from '../../../../helpers/authd/stateful-service.ts';
import { ManualClock } from '../../../../lib/clock.ts';
import { MAX_NEGOTIATE_LINE_BYTES } from '../../../../lib/helper-protocol/negotiate.ts';
import {
  createHandshake,
  KerberosRejectError,
  type Handshake,
  type KerberosAcceptance,
  type NtlmBackend,
} from '../../../../lib/seamless/handshake.ts';

/** Captured client tokens (lab REPORT.md §6.3) and a stand-in SPNEGO/Kerberos token for the fake acceptor. */
const NTLM_NEGOTIATE = 'TlRMTVNTUAABAAAABoIIAAAAAAAAAAAAAAAAAAAAAAA=';
const NTLM_AUTHENTICATE = (() => {
  const bytes = Buffer.alloc(40);
  bytes.write('NTLMSSP\0', 'latin1');
  bytes.writeUInt32LE(3, 8);
  return bytes.toString('base64');
})();
// 0x60 [SPNEGO OID] [negTokenInit: mechTypes = krb5, mechToken = raw krb5 AP-REQ stand-in]
const KERBEROS = 'YD4GBisGAQUFAqA0MDKgDTALBgkqhkiG9xIBAgKiIQQfYB0GCSqGSIb3EgECAgEAbg4AAAAAAAAAAAAAAAAAAA==';
const AP_REP = 'b28wbaADAgEFoQMCAQ8=';

function fakeKerberos(...outcomes: (KerberosAcceptance | Error)[]) {
  return {
    accept: () => {
      const next = outcomes.shift() ?? new Error('fake: no outcome left');
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
  };
}

function fakeNtlm(script: string[]) {
  const state = { leases: 0, releases: 0, lines: [] as string[] };
  const backend: NtlmBackend = {
    lease: () => {
      state.leases++;
      return Promise.resolve({
        step: (line: string) => {
          state.lines.push(line);
          return Promise.resolve(script.shift() ?? 'BH fake: no reply left');
        },
        release: () => void state.releases++,
      });
    },
  };
  return { backend, state };
}

function connection(handshake: () => Handshake | undefined, sweepMs?: number) {
  const input = new PassThrough();
  const output = new PassThrough();
  const logs: string[] = [];
  let written = '';
  output.on('data', (d: Buffer) => (written += d.toString('latin1')));
  const done = serveStatefulConnection({
    input,
    output,
    scheme: 'negotiate',
    handshake,
    log: (line) => logs.push(line),
    ...(sweepMs !== undefined && { sweepMs }),
  });
  /** Lines answered so far. */
  const answers = () => written.split('\n').filter((l) => l !== '');
  const until = async (n: number) => {
    for (let i = 0; i < 500 && answers().length < n; i++) await new Promise((r) => setTimeout(r, 2));
    return answers();
  };
  return { input, done, logs, answers, until };
}

function realHandshake(kerberos = fakeKerberos(), ntlm = fakeNtlm([]).backend, clock = new ManualClock()) {
  return createHandshake({
    scheme: 'negotiate',
    names: { realm: 'EXAMPLE.TEST', netbios: 'EXAMPLE' },
    kerberos,
    ntlm,
    clock,
    leaseIdleMs: 30_000,
  });
}

describe('serveStatefulConnection', () => {
  it('answers lines in order with one handshake for the whole connection', async () => {
    let made = 0;
    const ntlm = fakeNtlm([`TT ${NTLM_NEGOTIATE}`, 'AF EXAMPLE\\Alice']);
    const c = connection(() => {
      made++;
      return realHandshake(fakeKerberos({ user: 'bob@EXAMPLE.TEST', response: AP_REP }), ntlm.backend);
    });
    c.input.write(`YR ${NTLM_NEGOTIATE}\nKK ${NTLM_AUTHENTICATE}\nYR ${KERBEROS}\n`);
    expect(await c.until(3)).toEqual([
      `TT ${NTLM_NEGOTIATE}`,
      'OK token=* user=alice',
      `OK token=${AP_REP} user=bob`,
    ]);
    expect(made).toBe(1);
    c.input.end();
    await c.done;
    expect(ntlm.state).toMatchObject({ leases: 1, releases: 1 });
  });

  it('reads lines cut at any byte', async () => {
    const line = `YR ${KERBEROS}\n`;
    for (const cut of [1, 2, 3, Math.floor(line.length / 2), line.length - 1]) {
      const c = connection(() => realHandshake(fakeKerberos({ user: 'alice@EXAMPLE.TEST' })));
      c.input.write(line.slice(0, cut));
      await new Promise((r) => setImmediate(r));
      expect(c.answers()).toEqual([]);
      c.input.write(line.slice(cut));
      expect(await c.until(1)).toEqual(['OK token=* user=alice']);
      c.input.end();
      await c.done;
    }
  });

  it('answers an overlong line BH and serves the next handshake on the same connection', async () => {
    const c = connection(() => realHandshake(fakeKerberos({ user: 'alice@EXAMPLE.TEST', response: AP_REP })));
    // Written in pieces, as a socket delivers it: the decoder skips it without holding it.
    const long = `YR ${'A'.repeat(MAX_NEGOTIATE_LINE_BYTES + 10)}\n`;
    for (let at = 0; at < long.length; at += 16 * 1024) c.input.write(long.slice(at, at + 16 * 1024));
    c.input.write(`YR ${KERBEROS}\n`);
    const answers = await c.until(2);
    expect(answers[0]).toBe(
      `BH message=request%20line%20longer%20than%20${MAX_NEGOTIATE_LINE_BYTES}%20bytes`,
    );
    expect(answers[1]).toBe(`OK token=${AP_REP} user=alice`);
    expect(c.logs.some((l) => l.includes('longer than'))).toBe(true);
    c.input.end();
    await c.done;
  });

  it('answers every line BH when seamless is not enabled', async () => {
    const c = connection(() => undefined);
    c.input.write(`YR ${KERBEROS}\nKK ${NTLM_AUTHENTICATE}\n`);
    expect(await c.until(2)).toEqual([
      'BH message=seamless%20authentication%20is%20not%20enabled',
      'BH message=seamless%20authentication%20is%20not%20enabled',
    ]);
    c.input.end();
    await c.done;
  });

  it('answers BH for a token the acceptor refuses, with the reason, and goes on', async () => {
    const c = connection(() =>
      realHandshake(
        fakeKerberos(new KerberosRejectError('REPLAY', 'Request is a replay'), {
          user: 'alice@EXAMPLE.TEST',
        }),
      ),
    );
    c.input.write(`YR ${KERBEROS}\nKK ${NTLM_AUTHENTICATE}\nYR !!!notbase64\nYR ${KERBEROS}\n`);
    const answers = await c.until(4);
    expect(answers[0]).toMatch(
      /^BH message=Kerberos%20token%20refused%20%28REPLAY%29%3A%20Request%20is%20a%20replay$/,
    );
    expect(answers[1]).toMatch(/^BH message=out%20of%20sequence/);
    expect(answers[2]).toMatch(/^BH message=/);
    expect(answers[3]).toBe('OK token=* user=alice');
    c.input.end();
    await c.done;
  });

  it('releases the lease when the connection ends mid-handshake', async () => {
    const ntlm = fakeNtlm([`TT ${NTLM_NEGOTIATE}`]);
    const c = connection(() => realHandshake(fakeKerberos(), ntlm.backend));
    c.input.write(`YR ${NTLM_NEGOTIATE}\n`);
    await c.until(1);
    expect(ntlm.state.releases).toBe(0);
    c.input.end();
    await c.done;
    expect(ntlm.state).toMatchObject({ leases: 1, releases: 1 });
  });

  it('sweeps: a lease idle past the limit is released while the connection stays open', async () => {
    const clock = new ManualClock();
    const ntlm = fakeNtlm([`TT ${NTLM_NEGOTIATE}`]);
    const c = connection(() => realHandshake(fakeKerberos(), ntlm.backend, clock), 5);
    c.input.write(`YR ${NTLM_NEGOTIATE}\n`);
    await c.until(1);
    clock.advance(30_001);
    for (let i = 0; i < 500 && ntlm.state.releases === 0; i++) await new Promise((r) => setTimeout(r, 2));
    expect(ntlm.state.releases).toBe(1);
    c.input.write(`KK ${NTLM_AUTHENTICATE}\n`);
    expect((await c.until(2))[1]).toMatch(
      /^BH message=out%20of%20sequence%3A%20KK%20after%20the%20handshake%20was%20dropped/,
    );
    c.input.end();
    await c.done;
  });
});

describe('serveStatefulConnection: a handshake factory that fails', () => {
  it('answers BH with the reason and asks again on the next line', async () => {
    let calls = 0;
    const c = connection(() => {
      if (++calls === 1) throw new Error('the session DB cannot be opened');
      return realHandshake(fakeKerberos({ user: 'alice@EXAMPLE.TEST' }));
    });
    c.input.write(`YR ${KERBEROS}\nYR ${KERBEROS}\n`);
    expect(await c.until(2)).toEqual([
      'BH message=seamless%20authentication%20is%20unavailable%3A%20the%20session%20DB%20cannot%20be%20opened',
      'OK token=* user=alice',
    ]);
    c.input.end();
    await c.done;
  });
});
