import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createServer, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import {
  serveStatefulConnection,
  type StatefulCounts,
  type Timers,
} from '../../../../helpers/authd/stateful-service.ts';
import { useTempDir } from '../../../support/temp-dir.ts';
import { ManualClock } from '../../../../lib/clock.ts';
import { MAX_NEGOTIATE_LINE_BYTES } from '../../../../lib/helper-protocol/negotiate.ts';
import {
  KerberosRejectError,
  type KerberosAcceptance,
  type NtlmBackend,
} from '../../../../lib/seamless/acceptors.ts';
import { createHandshake, type Handshake } from '../../../../lib/seamless/handshake.ts';

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

/** Timers the test fires itself: each armed one with its delay. */
function manualTimers() {
  const armed = new Map<number, { callback: () => void; ms: number }>();
  let next = 0;
  const timers: Timers = {
    setTimeout: (callback, ms) => {
      armed.set(++next, { callback, ms });
      return next;
    },
    clearTimeout: (handle) => void armed.delete(handle as number),
  };
  const fire = () => {
    const due = [...armed.values()];
    armed.clear();
    for (const { callback } of due) callback();
  };
  return { timers, armed, fire };
}

function connection(
  handshake: () => Handshake | undefined,
  extra: { timers?: Timers; clock?: ManualClock; counts?: StatefulCounts } = {},
) {
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
    ...extra,
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
    leaseMaxMs: 30_000,
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

  it('releases a lease at its deadline with one timer, while the connection stays open; no timer is left', async () => {
    const clock = new ManualClock();
    const { timers, armed, fire } = manualTimers();
    const counts = { connections: 0, handshakes: 0, timers: 0 };
    const ntlm = fakeNtlm([`TT ${NTLM_NEGOTIATE}`]);
    const c = connection(() => realHandshake(fakeKerberos(), ntlm.backend, clock), { timers, clock, counts });
    clock.advance(100);
    c.input.write(`YR ${NTLM_NEGOTIATE}\n`);
    await c.until(1);
    // The handshake's leaseMaxMs (30 s here) from the YR, and no more timers than one.
    expect([...armed.values()].map((t) => t.ms)).toEqual([30_000]);
    expect(counts).toEqual({ connections: 1, handshakes: 1, timers: 1 });
    clock.advance(30_000);
    fire();
    for (let i = 0; i < 500 && ntlm.state.releases === 0; i++) await new Promise((r) => setTimeout(r, 2));
    expect(ntlm.state.releases).toBe(1);
    expect(c.logs).toContain('negotiate: released an ntlm_auth lease its client held past the deadline');
    expect(armed.size).toBe(0);
    c.input.write(`KK ${NTLM_AUTHENTICATE}\n`);
    expect((await c.until(2))[1]).toMatch(
      /^BH message=out%20of%20sequence%3A%20KK%20after%20the%20handshake%20was%20dropped/,
    );
    c.input.end();
    await c.done;
    expect(counts).toEqual({ connections: 0, handshakes: 0, timers: 0 });
  });

  it('clears the deadline timer once the handshake ends, and at the end of input', async () => {
    const { timers, armed } = manualTimers();
    const counts = { connections: 0, handshakes: 0, timers: 0 };
    const ntlm = fakeNtlm([`TT ${NTLM_NEGOTIATE}`, 'AF alice', `TT ${NTLM_NEGOTIATE}`]);
    const c = connection(() => realHandshake(fakeKerberos(), ntlm.backend), { timers, counts });
    c.input.write(`YR ${NTLM_NEGOTIATE}\n`);
    await c.until(1);
    expect(armed.size).toBe(1);
    c.input.write(`KK ${NTLM_AUTHENTICATE}\n`);
    await c.until(2);
    expect(armed.size).toBe(0);
    c.input.write(`YR ${NTLM_NEGOTIATE}\n`);
    await c.until(3);
    expect(armed.size).toBe(1);
    c.input.end();
    await c.done;
    expect(armed.size).toBe(0);
    expect(counts).toEqual({ connections: 0, handshakes: 0, timers: 0 });
    expect(ntlm.state).toMatchObject({ leases: 2, releases: 2 });
  });
});

describe('serveStatefulConnection: connections closed before their answer', () => {
  const tmp = useTempDir('doorman-stateful-');

  // Each client sends a YR and closes at once, as a shim does at Squid's shutdown: the answer meets EPIPE or a
  // reset, where 'drain' never comes. Everything each connection held must be gone once they are all closed.
  it('6,000 send-and-close connections leave no connection, handshake, lease or timer', async () => {
    const counts: StatefulCounts = { connections: 0, handshakes: 0, timers: 0 };
    const ntlm = fakeNtlm([]);
    // Kerberos answers after a moment (the client is gone by then); NTLM leases a process first.
    const slowKerberos = {
      accept: () =>
        new Promise<KerberosAcceptance>((r) => setTimeout(() => r({ user: 'alice@EXAMPLE.TEST' }), 5)),
    };
    const handlers = new Set<Promise<void>>();
    const server = createServer({ allowHalfOpen: true }, (socket: Socket) => {
      socket.on('error', () => {});
      const done = serveStatefulConnection({
        input: socket,
        output: socket,
        scheme: 'negotiate',
        handshake: () => realHandshake(slowKerberos, ntlm.backend),
        log: () => {},
        counts,
      }).then(() => void socket.destroy());
      handlers.add(done);
      void done.then(() => handlers.delete(done));
    });
    const path = join(tmp.dir, 'negotiate.sock');
    await new Promise<void>((r) => server.listen(path, r));
    const sendAndClose = (line: string) =>
      new Promise<void>((resolve) => {
        const client = connect(path);
        client.on('error', () => resolve());
        client.on('close', () => resolve());
        client.on('connect', () => {
          client.write(line);
          client.destroy();
        });
      });
    for (let i = 0; i < 6000; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          sendAndClose(j % 2 === 0 ? `YR ${KERBEROS}\n` : `YR ${NTLM_NEGOTIATE}\n`),
        ),
      );
    }
    // Every handler ends by itself (bounded: none may wait forever).
    for (let i = 0; i < 1000 && handlers.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(handlers.size).toBe(0);
    expect(counts).toEqual({ connections: 0, handshakes: 0, timers: 0 });
    expect(ntlm.state.leases).toBe(ntlm.state.releases);
    const open = await new Promise<number>((r) => server.getConnections((_, n) => r(n)));
    expect(open).toBe(0);
    await new Promise((r) => server.close(r));
  }, 60_000);
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
