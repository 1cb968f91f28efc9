import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { oid, tlv } from './der.ts';
import { ManualClock } from '../../../../lib/clock.ts';
import {
  KerberosRejectError,
  type KerberosAcceptance,
  type KerberosAcceptor,
  type NtlmBackend,
  type NtlmLease,
  type NtlmLeaseKind,
} from '../../../../lib/seamless/acceptors.ts';
import { createHandshake, type HandshakeOptions } from '../../../../lib/seamless/handshake.ts';
import { Oids } from '../../../../lib/seamless/spnego.ts';
import { useMetricsRegistry } from '../../../../lib/metrics/registry.ts';
import { seamlessMetrics } from '../../../../lib/metrics/seamless.ts';

/** Client tokens: captured ones from lab REPORT.md §6.3–6.4, and DER assembled with the real OIDs. */
const SPNEGO_NTLM =
  'YEgGBisGAQUFAqA+MDygDjAMBgorBgEEAYI3AgIKoioEKE5UTE1TU1AAAQAAABeCCOIAAAAAAAAAAAAAAAAAAAAABgIAAAAAAA8=';
const NTLM_NEGOTIATE = 'TlRMTVNTUAABAAAABoIIAAAAAAAAAAAAAAAAAAAAAAA=';
const NEG_TOKEN_RESP = 'oRswGaADCgEAoxIEEAEAAABIiOUGicB4+QAAAAA=';
const ntlmMessage = (type: number) => {
  const bytes = Buffer.alloc(40);
  bytes.write('NTLMSSP\0', 'latin1');
  bytes.writeUInt32LE(type, 8);
  return bytes.toString('base64');
};
const NTLM_AUTHENTICATE = ntlmMessage(3);

/** SPNEGO NegTokenInit listing Kerberos first, with a stand-in AP-REQ (the acceptor is a fake). */
const KERBEROS = tlv(
  0x60,
  oid(Oids.spnego),
  tlv(
    0xa0,
    tlv(
      0x30,
      tlv(0xa0, tlv(0x30, oid(Oids.msKrb5), oid(Oids.krb5))),
      tlv(0xa2, tlv(0x04, tlv(0x60, oid(Oids.krb5), Buffer.from([1, 0]), tlv(0x6e, Buffer.alloc(40, 7))))),
    ),
  ),
).toString('base64');
const AP_REP = 'b28wbaADAgEFoQMCAQ8=';

const DOMAIN = { realm: 'EXAMPLE.TEST', netbios: 'EXAMPLE' };
const MAX_MS = 5000;

/** Kerberos acceptor fake: answers from a queue of outcomes, records the tokens it saw. */
function fakeKerberos(...outcomes: (KerberosAcceptance | Error)[]) {
  const seen: string[] = [];
  const acceptor: KerberosAcceptor = {
    accept(token) {
      seen.push(token);
      const next = outcomes.shift();
      if (next === undefined) return Promise.reject(new Error('fake: no outcome left'));
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
  };
  return { acceptor, seen };
}

interface FakeLease {
  kind: NtlmLeaseKind;
  lines: string[];
  releases: number;
}
/**
 * ntlm_auth pool fake: each lease answers lines from one shared script (ntlm_auth's reply lines, or an Error
 * to reject with, or a promise to hold the step open), and counts its releases.
 */
function fakeNtlm(...script: (string | Error | Promise<string>)[]) {
  const leases: FakeLease[] = [];
  let failLease: Error | undefined;
  const backend: NtlmBackend = {
    lease(kind) {
      if (failLease) return Promise.reject(failLease);
      const record: FakeLease = { kind, lines: [], releases: 0 };
      leases.push(record);
      const lease: NtlmLease = {
        step(line) {
          record.lines.push(line);
          const next = script.shift();
          if (next === undefined) return Promise.reject(new Error('fake: no reply left'));
          return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
        },
        release() {
          record.releases++;
        },
      };
      return Promise.resolve(lease);
    },
  };
  return {
    backend,
    leases,
    failLeases: (error: Error) => (failLease = error),
    /** Every lease released exactly once. */
    allReleased: () => leases.every((l) => l.releases === 1),
  };
}

function machine(
  scheme: 'negotiate' | 'ntlm',
  kerberos = fakeKerberos(),
  ntlm = fakeNtlm(),
  clock = new ManualClock(),
  onNtlm?: HandshakeOptions['onNtlm'],
) {
  const handshake = createHandshake({
    scheme,
    names: DOMAIN,
    kerberos: kerberos.acceptor,
    ntlm: ntlm.backend,
    clock,
    leaseMaxMs: MAX_MS,
    ...(onNtlm !== undefined && { onNtlm }),
  });
  return { handshake, kerberos, ntlm, clock };
}

describe('createHandshake: Kerberos inside Negotiate', () => {
  it('accepts in one step: OK with the AP-REP and the short user name', async () => {
    const { handshake, kerberos, ntlm } = machine(
      'negotiate',
      fakeKerberos({ user: 'Alice@EXAMPLE.TEST', response: AP_REP }),
    );
    expect(await handshake.handle(`YR ${KERBEROS}`)).toBe(`OK token=${AP_REP} user=alice\n`);
    expect(kerberos.seen).toEqual([KERBEROS]);
    expect(ntlm.leases).toEqual([]);
  });

  it('says token=* when GSSAPI gives no AP-REP (Squid exits on a Negotiate OK without a token)', async () => {
    const { handshake } = machine(
      'negotiate',
      fakeKerberos({ user: 'bob@example.test' }, { user: 'carol@EXAMPLE.TEST', response: '' }),
    );
    expect(await handshake.handle(`YR ${KERBEROS}`)).toBe('OK token=* user=bob\n');
    expect(await handshake.handle(`YR ${KERBEROS}`)).toBe('OK token=* user=carol\n');
  });

  it('answers ERR for a principal of another realm', async () => {
    const { handshake } = machine('negotiate', fakeKerberos({ user: 'alice@OTHER.TEST', response: AP_REP }));
    const answer = await handshake.handle(`YR ${KERBEROS}`);
    expect(answer).toMatch(/^ERR message=\S+\n$/);
    expect(decodeURIComponent(answer)).toContain('realm "OTHER.TEST", not the joined realm "EXAMPLE.TEST"');
  });

  it('answers BH for a name that is no user (a service principal): the acceptor gave us what we cannot use', async () => {
    const { handshake } = machine(
      'negotiate',
      fakeKerberos({ user: 'HTTP/proxy.example.test@EXAMPLE.TEST' }),
    );
    expect(decodeURIComponent(await handshake.handle(`YR ${KERBEROS}`))).toMatch(
      /^BH message=the authenticated name "HTTP\/proxy.example.test@EXAMPLE.TEST" has an instance/,
    );
  });

  it('answers BH with the reason when the acceptor refuses (so it reaches cache.log)', async () => {
    const { handshake } = machine(
      'negotiate',
      fakeKerberos(
        new KerberosRejectError('CLOCK_SKEW', 'Clock skew too great'),
        new KerberosRejectError('REPLAY', 'Request is a replay'),
        new Error('keytab exploded'),
      ),
    );
    expect(decodeURIComponent(await handshake.handle(`YR ${KERBEROS}`))).toBe(
      'BH message=Kerberos token refused (CLOCK_SKEW): Clock skew too great\n',
    );
    expect(decodeURIComponent(await handshake.handle(`YR ${KERBEROS}`))).toBe(
      'BH message=Kerberos token refused (REPLAY): Request is a replay\n',
    );
    expect(decodeURIComponent(await handshake.handle(`YR ${KERBEROS}`))).toBe(
      'BH message=the Kerberos acceptor failed: keytab exploded\n',
    );
  });

  it('answers BH for an AP-REP that is not base64 rather than writing a broken line', async () => {
    const { handshake } = machine(
      'negotiate',
      fakeKerberos({ user: 'alice@EXAMPLE.TEST', response: 'a b\nc' }),
    );
    expect(await handshake.handle(`YR ${KERBEROS}`)).toMatch(/^BH message=the%20acceptor/);
  });

  it('leaves no handshake open after Kerberos: a KK is out of sequence', async () => {
    const { handshake } = machine('negotiate', fakeKerberos({ user: 'alice@EXAMPLE.TEST' }));
    await handshake.handle(`YR ${KERBEROS}`);
    expect(decodeURIComponent(await handshake.handle(`KK ${NEG_TOKEN_RESP}`))).toBe(
      'BH message=out of sequence: KK with no handshake under way\n',
    );
  });
});

describe('createHandshake: NTLM inside Negotiate', () => {
  it('carries raw NTLMSSP through an ntlmssp lease: TT, then OK token=* with the NetBIOS domain stripped', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'AF EXAMPLE\\Alice');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    expect(await handshake.handle(`YR ${NTLM_NEGOTIATE}`)).toBe('TT Q0hBTExFTkdF\n');
    expect(ntlm.leases.map((l) => [l.kind, l.releases])).toEqual([['ntlmssp', 0]]);
    expect(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`)).toBe('OK token=* user=alice\n');
    expect(ntlm.leases[0]?.lines).toEqual([`YR ${NTLM_NEGOTIATE}`, `KK ${NTLM_AUTHENTICATE}`]);
    expect(ntlm.allReleased()).toBe(true);
  });

  it('carries SPNEGO-wrapped NTLM through a gss-spnego lease, passing on the final token', async () => {
    const ntlm = fakeNtlm('TT oYGsMIGpoAMKAQE= *', `AF ${NEG_TOKEN_RESP} alice`);
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    expect(await handshake.handle(`YR ${SPNEGO_NTLM}`)).toBe('TT oYGsMIGpoAMKAQE=\n');
    expect(await handshake.handle(`KK ${NEG_TOKEN_RESP}`)).toBe(`OK token=${NEG_TOKEN_RESP} user=alice\n`);
    expect(ntlm.leases.map((l) => l.kind)).toEqual(['gss-spnego']);
    expect(ntlm.leases[0]?.lines).toEqual([`YR ${SPNEGO_NTLM}`, `KK ${NEG_TOKEN_RESP}`]);
    expect(ntlm.allReleased()).toBe(true);
  });

  it('says token=* when gss-spnego gives none, and keeps a user name with a space', async () => {
    const ntlm = fakeNtlm('TT oYGsMIGpoAMKAQE= *', 'AF * EXAMPLE\\Bob Smith');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${SPNEGO_NTLM}`);
    expect(await handshake.handle(`KK ${NEG_TOKEN_RESP}`)).toBe('OK token=* user=bob%20smith\n');
  });

  it("answers ERR for ntlm_auth's NA, with its reason, and releases the lease", async () => {
    const ntlm = fakeNtlm('TT oYGsMIGpoAMKAQE= *', 'NA * NT_STATUS_LOGON_FAILURE');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${SPNEGO_NTLM}`);
    expect(await handshake.handle(`KK ${NEG_TOKEN_RESP}`)).toBe('ERR message=NT_STATUS_LOGON_FAILURE\n');
    expect(ntlm.allReleased()).toBe(true);
  });

  it('answers ERR for a user of another NetBIOS domain', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'AF OTHER\\alice');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    expect(decodeURIComponent(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`))).toMatch(
      /^ERR message=the user "OTHER\\\\alice" is of domain "OTHER"/,
    );
  });

  it("answers BH for ntlm_auth's BH, a rejected step, an unknown reply and a pool with no process", async () => {
    const ntlm = fakeNtlm('BH NT_STATUS_UNSUCCESSFUL', new Error('pipe closed'), 'XX what');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    expect(decodeURIComponent(await handshake.handle(`YR ${NTLM_NEGOTIATE}`))).toBe(
      'BH message=ntlm_auth: NT_STATUS_UNSUCCESSFUL\n',
    );
    expect(decodeURIComponent(await handshake.handle(`YR ${NTLM_NEGOTIATE}`))).toBe(
      'BH message=ntlm_auth failed: pipe closed\n',
    );
    expect(decodeURIComponent(await handshake.handle(`YR ${NTLM_NEGOTIATE}`))).toBe(
      'BH message=ntlm_auth answered "XX": expected TT, AF, NA or BH\n',
    );
    expect(ntlm.leases).toHaveLength(3);
    expect(ntlm.allReleased()).toBe(true);
    ntlm.failLeases(new Error('4 of 4 busy'));
    expect(decodeURIComponent(await handshake.handle(`YR ${NTLM_NEGOTIATE}`))).toBe(
      'BH message=no ntlm_auth (ntlmssp) available: 4 of 4 busy\n',
    );
  });

  it('answers BH when ntlm_auth challenges without a token or accepts without a user', async () => {
    const ntlm = fakeNtlm('TT * *', 'TT', 'TT Q0hBTExFTkdF', 'AF *');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    const tokenless = 'BH message=ntlm_auth answered TT without a token\n';
    expect(decodeURIComponent(await handshake.handle(`YR ${SPNEGO_NTLM}`))).toBe(tokenless);
    expect(decodeURIComponent(await handshake.handle(`YR ${NTLM_NEGOTIATE}`))).toBe(tokenless);
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    expect(decodeURIComponent(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`))).toBe(
      'BH message=ntlm_auth accepted the client but named no user\n',
    );
    expect(ntlm.allReleased()).toBe(true);
  });

  it('refuses a KK of the wrong form for the lease it continues, releasing the lease', async () => {
    const ntlm = fakeNtlm('TT oYGsMIGpoAMKAQE= *', 'TT Q0hBTExFTkdF', 'TT Q0hBTExFTkdF');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${SPNEGO_NTLM}`);
    expect(decodeURIComponent(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`))).toBe(
      'BH message=out of sequence: KK in a SPNEGO handshake carries a ntlm-raw token, not a negTokenResp\n',
    );
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    expect(decodeURIComponent(await handshake.handle(`KK ${NEG_TOKEN_RESP}`))).toBe(
      'BH message=out of sequence: KK in an NTLM handshake carries a continuation token, not NTLMSSP\n',
    );
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    expect(decodeURIComponent(await handshake.handle(`KK ${NTLM_NEGOTIATE}`))).toBe(
      'BH message=out of sequence: KK carries NTLM message type 1, not AUTHENTICATE (3)\n',
    );
    expect(ntlm.leases).toHaveLength(3);
    expect(ntlm.allReleased()).toBe(true);
    expect(ntlm.leases.map((l) => l.lines.length)).toEqual([1, 1, 1]);
  });
});

describe('createHandshake: the NTLM scheme', () => {
  it('goes straight to an ntlmssp lease and answers OK without a token', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'AF alice');
    const { handshake } = machine('ntlm', fakeKerberos(), ntlm);
    expect(await handshake.handle(`YR ${NTLM_NEGOTIATE}`)).toBe('TT Q0hBTExFTkdF\n');
    expect(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`)).toBe('OK user=alice\n');
    expect(ntlm.leases.map((l) => l.kind)).toEqual(['ntlmssp']);
    expect(ntlm.allReleased()).toBe(true);
  });

  it('refuses a Negotiate token under the NTLM scheme without taking a lease', async () => {
    const kerberos = fakeKerberos({ user: 'alice@EXAMPLE.TEST' });
    const ntlm = fakeNtlm();
    const { handshake } = machine('ntlm', kerberos, ntlm);
    expect(decodeURIComponent(await handshake.handle(`YR ${KERBEROS}`))).toBe(
      'BH message=the NTLM scheme takes raw NTLMSSP messages only, not a kerberos token\n',
    );
    expect(kerberos.seen).toEqual([]);
    expect(ntlm.leases).toEqual([]);
  });

  it('answers ERR for NA (no token field in ntlmssp mode)', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'NA NT_STATUS_WRONG_PASSWORD');
    const { handshake } = machine('ntlm', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    expect(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`)).toBe('ERR message=NT_STATUS_WRONG_PASSWORD\n');
  });
});

describe('createHandshake: sequence, idleness and closing', () => {
  it('starts over on YR: the open lease is released before the new handshake', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'TT oYGsMIGpoAMKAQE= *');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    expect(ntlm.leases.map((l) => l.releases)).toEqual([0]);
    await handshake.handle(`YR ${SPNEGO_NTLM}`);
    expect(ntlm.leases.map((l) => [l.kind, l.releases])).toEqual([
      ['ntlmssp', 1],
      ['gss-spnego', 0],
    ]);
  });

  it('answers BH to a KK with no handshake under way', async () => {
    const { handshake } = machine('ntlm');
    expect(decodeURIComponent(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`))).toBe(
      'BH message=out of sequence: KK with no handshake under way\n',
    );
  });

  it('answers BH to a YR that carries a continuation or an AUTHENTICATE', async () => {
    const ntlm = fakeNtlm();
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    expect(await handshake.handle(`YR ${NEG_TOKEN_RESP}`)).toMatch(/^BH message=out%20of%20sequence/);
    expect(await handshake.handle(`YR ${NTLM_AUTHENTICATE}`)).toMatch(/^BH message=out%20of%20sequence/);
    expect(ntlm.leases).toEqual([]);
  });

  it('releases a lease held leaseMaxMs after its YR, and a late KK gets BH saying so', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'AF alice');
    const { handshake, clock } = machine('negotiate', fakeKerberos(), ntlm);
    expect(handshake.leaseDeadline()).toBeUndefined();
    clock.advance(7);
    const yr = clock.now();
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    expect(handshake.leaseDeadline()).toBe(yr + MAX_MS);
    clock.advance(MAX_MS - 1);
    expect(await handshake.releaseIfExpired()).toBe(false);
    clock.advance(1);
    expect(await handshake.releaseIfExpired()).toBe(true);
    expect(handshake.leaseDeadline()).toBeUndefined();
    expect(ntlm.leases[0]?.releases).toBe(1);
    expect(decodeURIComponent(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`))).toBe(
      'BH message=out of sequence: KK after the handshake was dropped, 5000 ms after its YR (the limit is 5000 ms)\n',
    );
    expect(ntlm.leases[0]?.lines).toEqual([`YR ${NTLM_NEGOTIATE}`]);
    expect(ntlm.allReleased()).toBe(true);
  });

  it('also notices the deadline on the late KK itself, without a timer', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'AF alice');
    const { handshake, clock } = machine('negotiate', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    clock.advance(MAX_MS + 5);
    expect(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`)).toMatch(/^BH message=out%20of%20sequence/);
    expect(ntlm.leases[0]?.lines).toHaveLength(1);
    expect(ntlm.allReleased()).toBe(true);
  });

  it('counts the deadline from the YR, not from the last step: legs that keep coming do not extend it', async () => {
    const ntlm = fakeNtlm('TT oYGsMIGpoAMKAQE= *', 'TT oYGsMIGpoAMKAQI= *', 'AF * alice');
    const { handshake, clock } = machine('negotiate', fakeKerberos(), ntlm);
    const yr = clock.now();
    await handshake.handle(`YR ${SPNEGO_NTLM}`);
    clock.advance(MAX_MS - 1);
    expect(await handshake.handle(`KK ${NEG_TOKEN_RESP}`)).toBe('TT oYGsMIGpoAMKAQI=\n');
    expect(handshake.leaseDeadline()).toBe(yr + MAX_MS);
    clock.advance(1);
    expect(await handshake.releaseIfExpired()).toBe(true);
    expect(await handshake.handle(`KK ${NEG_TOKEN_RESP}`)).toMatch(/^BH message=out%20of%20sequence/);
    expect(ntlm.allReleased()).toBe(true);
  });

  it('answers BH and releases the lease when something unexpected throws (here the clock)', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF');
    const handshake = createHandshake({
      scheme: 'negotiate',
      names: DOMAIN,
      kerberos: fakeKerberos().acceptor,
      ntlm: ntlm.backend,
      clock: {
        now() {
          throw new Error('clock unplugged');
        },
      },
      leaseMaxMs: MAX_MS,
    });
    expect(await handshake.handle(`YR ${NTLM_NEGOTIATE}`)).toBe(
      'BH message=internal%20error%3A%20clock%20unplugged\n',
    );
    expect(ntlm.allReleased()).toBe(true);
  });

  it('keeps a lease that is within leaseMaxMs of its YR', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'AF alice');
    const { handshake, clock } = machine('negotiate', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    clock.advance(MAX_MS - 1);
    expect(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`)).toBe('OK token=* user=alice\n');
  });

  it("tells onNtlm of each handshake that starts NTLM, with the client's address from the first extra", async () => {
    const seen: unknown[] = [];
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'AF alice', 'TT oYGsMIGpoAMKAQE= *', 'TT Q0hBTExFTkdF');
    const kerberos = fakeKerberos({ user: 'alice@EXAMPLE.TEST', response: AP_REP });
    const { handshake } = machine('negotiate', kerberos, ntlm, undefined, (client) => seen.push(client));
    await handshake.handle(`YR ${NTLM_NEGOTIATE} 10.0.0.7`);
    await handshake.handle(`KK ${NTLM_AUTHENTICATE} 10.0.0.7`);
    await handshake.handle(`YR ${KERBEROS} 10.0.0.8`);
    await handshake.handle(`YR ${SPNEGO_NTLM} fe80%3A%3A1`);
    await handshake.handle(`YR ${NTLM_NEGOTIATE} not-an-address`);
    expect(seen).toEqual([
      { scheme: 'negotiate', address: '10.0.0.7' },
      { scheme: 'negotiate', address: 'fe80::1' },
      { scheme: 'negotiate', address: undefined },
    ]);
  });

  it('still answers when onNtlm throws', async () => {
    const { handshake } = machine('ntlm', undefined, fakeNtlm('TT Q0hBTExFTkdF'), undefined, () => {
      throw new Error('tally broken');
    });
    expect(await handshake.handle(`YR ${NTLM_NEGOTIATE} 10.0.0.7`)).toBe('TT Q0hBTExFTkdF\n');
  });

  it('answers BH with a clear message for malformed lines and tokens, and serves the next handshake', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'AF alice');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    const cases: [string, string | RegExp][] = [
      ['', 'BH message=unknown request an empty line: expected YR or KK\n'],
      ['XX abc', 'BH message=unknown request "XX": expected YR or KK\n'],
      ['YR', 'BH message=YR without a token\n'],
      [
        'YR not*base64!',
        'BH message=the Negotiate token is not base64: its length 11 is not a multiple of 4 (NOT_BASE64)\n',
      ],
      ['KK abc*', 'BH message=out of sequence: KK with no handshake under way\n'],
      ['YR abc*', 'BH message=the Negotiate token is not base64: character 4 is "*" (NOT_BASE64)\n'],
      ['YR YEgGBisG', /^BH message=.*\(TRUNCATED\)\n$/],
      [`YR ${'A'.repeat(70_000)}`, 'BH message=request line of 70003 bytes is longer than 65536\n'],
    ];
    for (const [line, answer] of cases) {
      const got = decodeURIComponent(await handshake.handle(line));
      if (typeof answer === 'string') expect(got).toBe(answer);
      else expect(got).toMatch(answer);
    }
    expect(ntlm.leases).toEqual([]);
    expect(await handshake.handle(`YR ${NTLM_NEGOTIATE}`)).toBe('TT Q0hBTExFTkdF\n');
    expect(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`)).toBe('OK token=* user=alice\n');
  });

  it('a malformed KK ends the handshake and releases its lease', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    expect(await handshake.handle('KK %%%%')).toMatch(
      /^BH message=the%20Negotiate%20token%20is%20not%20base64/,
    );
    expect(ntlm.allReleased()).toBe(true);
  });

  it('never throws out of handle(): a fake that throws synchronously still gets a BH', async () => {
    const throwing: KerberosAcceptor = {
      accept() {
        throw new Error('sync boom');
      },
    };
    const handshake = createHandshake({
      scheme: 'negotiate',
      names: DOMAIN,
      kerberos: throwing,
      ntlm: fakeNtlm().backend,
      clock: new ManualClock(),
      leaseMaxMs: MAX_MS,
    });
    expect(decodeURIComponent(await handshake.handle(`YR ${KERBEROS}`))).toBe(
      'BH message=the Kerberos acceptor failed: sync boom\n',
    );
  });

  it('answers lines one at a time, in order, even when handed over together', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF', 'AF alice');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    const answers = await Promise.all([
      handshake.handle(`YR ${NTLM_NEGOTIATE}`),
      handshake.handle(`KK ${NTLM_AUTHENTICATE}`),
    ]);
    expect(answers).toEqual(['TT Q0hBTExFTkdF\n', 'OK token=* user=alice\n']);
  });

  it('close() releases the open lease; later lines get BH', async () => {
    const ntlm = fakeNtlm('TT Q0hBTExFTkdF');
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    await handshake.close();
    expect(ntlm.leases[0]?.releases).toBe(1);
    expect(await handshake.handle(`KK ${NTLM_AUTHENTICATE}`)).toBe(
      'BH message=the%20connection%20is%20closed\n',
    );
    await handshake.close();
    expect(ntlm.allReleased()).toBe(true);
  });

  it('close() during a step releases the lease once the step settles, never while ntlm_auth is mid-answer', async () => {
    let answer: (line: string) => void = () => {};
    const pending = new Promise<string>((resolve) => (answer = resolve));
    const ntlm = fakeNtlm(pending);
    const { handshake } = machine('negotiate', fakeKerberos(), ntlm);
    const reply = handshake.handle(`YR ${NTLM_NEGOTIATE}`);
    await Promise.resolve();
    await Promise.resolve();
    const closing = handshake.close();
    await Promise.resolve();
    expect(ntlm.leases[0]?.releases).toBe(0);
    answer('TT Q0hBTExFTkdF');
    expect(await reply).toBe('BH message=the%20connection%20closed%20during%20the%20handshake\n');
    await closing;
    expect(ntlm.leases[0]?.releases).toBe(1);
  });

  it('refuses bad options at creation, naming the field', () => {
    const base = {
      names: DOMAIN,
      kerberos: fakeKerberos().acceptor,
      ntlm: fakeNtlm().backend,
      clock: new ManualClock(),
    };
    expect(() => createHandshake({ ...base, scheme: 'negotiate', leaseMaxMs: 0 })).toThrow(
      'leaseMaxMs: 0 is not a positive whole number of ms',
    );
    expect(() => createHandshake({ ...base, scheme: 'basic' as 'ntlm', leaseMaxMs: 1 })).toThrow(
      'scheme: "basic" is not one of "negotiate", "ntlm"',
    );
  });
});

describe('createHandshake: the metrics (how handshakes end, by reason code)', () => {
  const counted = async (registry: Registry, series: string) => {
    const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };

  it('counts Kerberos by outcome: OK, the reject code, the acceptor failing, a foreign name', async () => {
    const registry = useMetricsRegistry(new Registry());
    seamlessMetrics();
    const { handshake } = machine(
      'negotiate',
      fakeKerberos(
        { user: 'alice@EXAMPLE.TEST' },
        new KerberosRejectError('CLOCK_SKEW', 'Clock skew too great'),
        new Error('keytab exploded'),
        { user: 'bob@OTHER.TEST' },
      ),
    );
    for (let i = 0; i < 4; i++) await handshake.handle(`YR ${KERBEROS}`);
    for (const [outcome, n] of [
      ['OK', 1],
      ['CLOCK_SKEW', 1],
      ['ACCEPTOR_FAILED', 1],
      ['FOREIGN_NAME', 1],
      ['REPLAY', 0],
    ])
      expect(
        await counted(registry, `doorman_kerberos_handshakes_total{outcome="${outcome}"}`),
        String(outcome),
      ).toBe(n);
  });

  it('counts NTLM by outcome: OK, REFUSED (ntlm_auth NA), POOL_BUSY (no ntlm_auth free in time)', async () => {
    const registry = useMetricsRegistry(new Registry());
    const ntlm = fakeNtlm('TT challenge', 'AF EXAMPLE\\alice', 'TT challenge', 'NA NT_STATUS_LOGON_FAILURE');
    const { handshake } = machine('ntlm', fakeKerberos(), ntlm);
    // One handshake that ends OK, one refused.
    for (let i = 0; i < 2; i++) {
      await handshake.handle(`YR ${NTLM_NEGOTIATE}`);
      await handshake.handle(`KK ${NTLM_AUTHENTICATE}`);
    }
    ntlm.failLeases(new Error('all 1 ntlm_auth (ntlmssp) processes stayed busy'));
    expect(await handshake.handle(`YR ${NTLM_NEGOTIATE}`)).toMatch(/^BH /);
    expect(await counted(registry, 'doorman_ntlm_handshakes_total{outcome="OK"}')).toBe(1);
    expect(await counted(registry, 'doorman_ntlm_handshakes_total{outcome="REFUSED"}')).toBe(1);
    expect(await counted(registry, 'doorman_ntlm_handshakes_total{outcome="POOL_BUSY"}')).toBe(1);
  });
});
