import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createSeamlessService, type SeamlessService } from '../../../../helpers/authd/seamless-service.ts';
import type { NtlmPool } from '../../../../helpers/authd/ntlm-pool.ts';
import type { Timers } from '../../../../helpers/authd/stateful-service.ts';
import { NtlmClientStore } from '../../../../lib/store/ntlm-client-store.ts';
import { systemClock } from '../../../../lib/clock.ts';
import type { KerberosAcceptor, NtlmLeaseKind } from '../../../../lib/seamless/acceptors.ts';
import type { ProxyService } from '../../../../lib/seamless/proxy-service.ts';
import { SeamlessSettingsStore } from '../../../../lib/store/seamless-settings-store.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { joinedState } from '../../../support/seamless-state.ts';
import { mitKerberos } from '../../lib/seamless/krb5-tokens.ts';

const NTLM_NEGOTIATE = 'TlRMTVNTUAABAAAABoIIAAAAAAAAAAAAAAAAAAAAAAA=';
const ntlmMessage = (type: number) => {
  const bytes = Buffer.alloc(40);
  bytes.write('NTLMSSP\0', 'latin1');
  bytes.writeUInt32LE(type, 8);
  return bytes.toString('base64');
};
const CHALLENGE = ntlmMessage(2);
const AUTHENTICATE = ntlmMessage(3);

const JOINED = joinedState();

/** ntlm_auth stand-in: TT for YR, then AF with the user the test names; counts pools made and closed. */
function fakePools(user: () => string) {
  const made: Array<{ smbConf: string; closed: boolean; leases: NtlmLeaseKind[] }> = [];
  const factory = (smbConf: string): NtlmPool => {
    const record = { smbConf, closed: false, leases: [] as NtlmLeaseKind[] };
    made.push(record);
    return {
      lease: (kind) => {
        record.leases.push(kind);
        return Promise.resolve({
          step: (line) => Promise.resolve(line.startsWith('YR') ? `TT ${CHALLENGE}` : `AF ${user()}`),
          release: () => {},
        });
      },
      close: () => {
        record.closed = true;
        return Promise.resolve();
      },
      size: () => 0,
      leased: () => 0,
      waiting: () => 0,
    };
  };
  return { made, factory };
}

/** One connection as a shim makes it: lines in, reply lines out. */
function connect(service: SeamlessService, scheme: 'negotiate' | 'ntlm') {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = '';
  output.on('data', (d: Buffer) => (text += d.toString()));
  const done = service.serve(scheme, input, output);
  const ask = async (line: string) => {
    const before = text.split('\n').length;
    input.write(`${line}\n`);
    while (text.split('\n').length === before) await new Promise((r) => setTimeout(r, 5));
    return text.split('\n').at(-2);
  };
  return { ask, end: () => (input.end(), done) };
}

describe('the seamless service of authd', () => {
  const db = useTempDb('doorman-seamless-service-');
  let service: SeamlessService | undefined;
  afterEach(async () => {
    await service?.close();
    service = undefined;
  });
  const start = (
    user = () => 'EXAMPLE\\alice',
    kerberos: (service: ProxyService) => KerberosAcceptor = () => ({
      accept: () => Promise.reject(new Error('no Kerberos in this test')),
    }),
    timers?: Timers,
  ) => {
    const store = new SeamlessSettingsStore(db.connect(), { clock: systemClock });
    const pools = fakePools(user);
    const lines: string[] = [];
    service = createSeamlessService({
      stateDir: db.dir,
      sambaDir: null,
      dbPath: db.path,
      log: (line) => lines.push(line),
      kerberos,
      ntlmPool: pools.factory,
      ...(timers !== undefined && { timers }),
    });
    return { store, pools, lines };
  };

  it('answers BH while the proxy has not joined, then serves the state saved since, for new connections', async () => {
    const { store, pools } = start();
    const before = connect(service as SeamlessService, 'ntlm');
    expect(await before.ask(`YR ${NTLM_NEGOTIATE}`)).toBe(
      'BH message=seamless%20authentication%20is%20not%20enabled',
    );
    await before.end();
    store.save(JOINED);
    const after = connect(service as SeamlessService, 'ntlm');
    expect(await after.ask(`YR ${NTLM_NEGOTIATE}`)).toBe(`TT ${CHALLENGE}`);
    expect(await after.ask(`KK ${AUTHENTICATE}`)).toBe('OK user=alice');
    await after.end();
    expect(pools.made).toEqual([{ smbConf: `${db.dir}-samba/smb.conf`, closed: false, leases: ['ntlmssp'] }]);
  });

  it("gives the Kerberos acceptor the joined proxy's HTTP/ names, and a new acceptor after a re-join", async () => {
    const services: ProxyService[] = [];
    const { store } = start(undefined, (service) => {
      services.push(service);
      return { accept: () => Promise.resolve({ user: 'alice@EXAMPLE.TEST' }) };
    });
    const kerberosToken = mitKerberos().toString('base64');
    const ask = async () => {
      const c = connect(service as SeamlessService, 'negotiate');
      expect(await c.ask(`YR ${kerberosToken}`)).toMatch(/^OK .*user=alice$/);
      await c.end();
    };
    store.save(JOINED);
    await ask();
    await ask();
    store.save({ ...JOINED, proxyFqdn: 'web.example.test', machineName: 'WEB' });
    await ask();
    expect(services).toEqual([
      { realm: 'EXAMPLE.TEST', hosts: ['proxy.example.test', 'PROXY'] },
      { realm: 'EXAMPLE.TEST', hosts: ['web.example.test', 'WEB'] },
    ]);
  });

  it('refuses a user of another domain than the one joined (ERR)', async () => {
    const { store } = start(() => 'OTHER\\mallory');
    store.save(JOINED);
    const c = connect(service as SeamlessService, 'ntlm');
    await c.ask(`YR ${NTLM_NEGOTIATE}`);
    expect(await c.ask(`KK ${AUTHENTICATE}`)).toMatch(/^ERR/);
  });

  it('stops the ntlm_auth pool once seamless authentication is disabled, and answers BH again', async () => {
    const { store, pools, lines } = start();
    store.save(JOINED);
    const c = connect(service as SeamlessService, 'negotiate');
    expect(await c.ask(`YR ${NTLM_NEGOTIATE}`)).toMatch(/^TT /);
    await c.end();
    store.clear();
    const d = connect(service as SeamlessService, 'negotiate');
    expect(await d.ask(`YR ${NTLM_NEGOTIATE}`)).toBe(
      'BH message=seamless%20authentication%20is%20not%20enabled',
    );
    expect(pools.made.map((p) => p.closed)).toEqual([true]);
    expect(lines).toEqual(['seamless authentication: EXAMPLE.TEST', 'seamless authentication: not enabled']);
  });

  it('counts what its connections hold, and nothing once they end', async () => {
    const { store } = start();
    store.save(JOINED);
    const c = connect(service as SeamlessService, 'ntlm');
    await c.ask(`YR ${NTLM_NEGOTIATE}`);
    expect(service?.counts()).toMatchObject({ connections: 1, handshakes: 1, timers: 1 });
    await c.end();
    expect(service?.counts()).toEqual({
      connections: 0,
      handshakes: 0,
      timers: 0,
      leases: 0,
      processes: 0,
      waiting: 0,
    });
  });

  // The doctor's list of clients that fall back to NTLM: counted in memory, written once a minute, not per line.
  it('writes the NTLM clients (addresses from key_extras) to the session DB at its flush timer, and at close', async () => {
    const armed: Array<{ callback: () => void; ms: number }> = [];
    const timers: Timers = {
      setTimeout: (callback, ms) => armed.push({ callback, ms }),
      clearTimeout: () => {},
    };
    const { store } = start(undefined, undefined, timers);
    store.save(JOINED);
    const clients = new NtlmClientStore(db.connect());
    const seen = () => clients.seenSince(Date.now() - 86_400_000, 10);
    for (const address of ['10.0.0.7', '10.0.0.7', '10.0.0.9']) {
      const c = connect(service as SeamlessService, 'negotiate');
      await c.ask(`YR ${NTLM_NEGOTIATE} ${address}`);
      await c.end();
    }
    // Nothing written on the request path; one flush timer, a minute.
    expect(seen().addresses).toBe(0);
    const flushes = armed.filter((t) => t.ms === 60_000);
    expect(flushes).toHaveLength(1);
    flushes[0]?.callback();
    expect(seen()).toMatchObject({
      addresses: 2,
      clients: [
        { address: '10.0.0.7', handshakes: 2 },
        { address: '10.0.0.9', handshakes: 1 },
      ],
    });
    const c = connect(service as SeamlessService, 'ntlm');
    await c.ask(`YR ${NTLM_NEGOTIATE}`);
    await c.end();
    await service?.close();
    service = undefined;
    expect(seen().clients).toMatchObject([
      { address: '10.0.0.7', handshakes: 2 },
      { address: '-', handshakes: 1 },
      { address: '10.0.0.9', handshakes: 1 },
    ]);
  });
});
