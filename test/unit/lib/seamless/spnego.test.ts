import { describe, expect, it } from 'vitest';
import { oid, tlv } from './der.ts';
import { apReq, mitKerberos, rawKrb5, spnego, windowsKerberos } from './krb5-tokens.ts';
import { refusalsOf } from './token-refusals.ts';
import { classifyNegotiateToken, MAX_TOKEN_BASE64_CHARS, Oids } from '../../../../lib/seamless/spnego.ts';

/**
 * Tokens captured from real clients by the lab's capture_proxy.py (../shared/lab/REPORT.md §6.3, §6.4), and
 * tokens assembled here in DER with the real OIDs (RFC 2743 §3.1, RFC 4178 §4.2, RFC 1964 §1.1) where no
 * capture exists: no KDC runs in unit tests, and the classifier reads only the framing, never the ticket.
 */
const CAPTURED = {
  /** curl --proxy-negotiate with gss-ntlmssp: SPNEGO NegTokenInit [NTLMSSP], mechToken NTLMSSP NEGOTIATE. */
  spnegoNtlm:
    'YEgGBisGAQUFAqA+MDygDjAMBgorBgEEAYI3AgIKoioEKE5UTE1TU1AAAQAAABeCCOIAAAAAAAAAAAAAAAAAAAAABgIAAAAAAA8=',
  /** curl --proxy-ntlm: a raw NTLMSSP NEGOTIATE. */
  rawNtlm: 'TlRMTVNTUAABAAAABoIIAAAAAAAAAAAAAAAAAAAAAAA=',
  /** python3-ntlm-auth NtlmContext: a raw NTLMSSP NEGOTIATE with domain and workstation. */
  rawNtlmWithNames: 'TlRMTVNTUAABAAAAMrCI4gcABwAoAAAABwAHAC8AAAAGAbEdAAAAD0VYQU1QTEVDTElFTlQx',
  /** ntlm_auth gss-spnego's final NegTokenResp (accept-completed + mechListMIC): the shape of a later leg. */
  negTokenResp: 'oRswGaADCgEAoxIEEAEAAABIiOUGicB4+QAAAAA=',
} as const;

const ntlmNegotiate = Buffer.from(CAPTURED.rawNtlm, 'base64');

const b64 = (bytes: Buffer) => bytes.toString('base64');

const { refusal, expectRefused } = refusalsOf(classifyNegotiateToken);

describe('classifyNegotiateToken: the routing table', () => {
  it('routes the captured SPNEGO-wrapped NTLM NEGOTIATE to spnego-ntlm (where negotiate_wrapper fails)', () => {
    const classified = classifyNegotiateToken(CAPTURED.spnegoNtlm);
    expect(classified).toMatchObject({ route: 'spnego-ntlm', mechanisms: [Oids.ntlmssp] });
    expect(classified.token).toEqual(Buffer.from(CAPTURED.spnegoNtlm, 'base64'));
    // The optimistic token is handed out too, should NTLM have to be unwrapped here rather than in gss-spnego.
    expect(classified).toMatchObject({ mechToken: Buffer.from(CAPTURED.spnegoNtlm, 'base64').subarray(34) });
    expect(classified).toHaveProperty('mechToken.length', 40);
  });

  it('routes raw NTLMSSP to ntlm-raw with its message type', () => {
    expect(classifyNegotiateToken(CAPTURED.rawNtlm)).toMatchObject({ route: 'ntlm-raw', messageType: 1 });
    expect(classifyNegotiateToken(CAPTURED.rawNtlmWithNames)).toMatchObject({
      route: 'ntlm-raw',
      messageType: 1,
    });
    const authenticate = Buffer.from(ntlmNegotiate);
    authenticate.writeUInt32LE(3, 8);
    expect(classifyNegotiateToken(b64(authenticate))).toMatchObject({ route: 'ntlm-raw', messageType: 3 });
  });

  it('routes SPNEGO whose first mechanism is Kerberos (MS-krb5 or krb5) to kerberos', () => {
    expect(classifyNegotiateToken(b64(windowsKerberos()))).toMatchObject({
      route: 'kerberos',
      form: 'spnego',
      mechanisms: [Oids.msKrb5, Oids.krb5, Oids.negoex, Oids.ntlmssp],
    });
    expect(classifyNegotiateToken(b64(mitKerberos()))).toMatchObject({
      route: 'kerberos',
      form: 'spnego',
      mechanisms: [Oids.krb5],
    });
    // reqFlags and mechListMIC around the mechToken do not change the route.
    const flagged = spnego([Oids.krb5], rawKrb5(), { reqFlags: true, mic: true });
    expect(classifyNegotiateToken(b64(flagged))).toMatchObject({ route: 'kerberos' });
    // No optimistic token: still Kerberos by the list (the acceptor answers it).
    expect(classifyNegotiateToken(b64(spnego([Oids.msKrb5])))).toMatchObject({ route: 'kerberos' });
    expect(classifyNegotiateToken(b64(spnego([Oids.msKrb5])))).not.toHaveProperty('mechToken');
    expect(classifyNegotiateToken(b64(mitKerberos()))).toMatchObject({ mechToken: rawKrb5() });
  });

  it('routes SPNEGO whose first mechanism is NTLMSSP or NEGOEX, or whose mechToken is NTLMSSP, to spnego-ntlm', () => {
    expect(classifyNegotiateToken(b64(spnego([Oids.ntlmssp, Oids.krb5])))).toMatchObject({
      route: 'spnego-ntlm',
      mechanisms: [Oids.ntlmssp, Oids.krb5],
    });
    expect(classifyNegotiateToken(b64(spnego([Oids.negoex, Oids.ntlmssp])))).toMatchObject({
      route: 'spnego-ntlm',
    });
    expect(classifyNegotiateToken(b64(spnego(['1.2.3.4'], ntlmNegotiate))) /* NTLMSSP token */).toMatchObject(
      {
        route: 'spnego-ntlm',
      },
    );
  });

  it('routes a raw Kerberos AP-REQ (0x60 + krb5 OID) to kerberos', () => {
    expect(classifyNegotiateToken(b64(rawKrb5()))).toMatchObject({
      route: 'kerberos',
      form: 'raw',
      mechanisms: [Oids.krb5],
    });
  });

  it('calls a NegTokenResp (0xa1) a continuation', () => {
    expect(classifyNegotiateToken(CAPTURED.negTokenResp)).toMatchObject({ route: 'continuation' });
    const big = tlv(0xa1, tlv(0x30, tlv(0xa2, tlv(0x04, Buffer.alloc(400, 7)))));
    expect(classifyNegotiateToken(b64(big))).toMatchObject({ route: 'continuation' });
  });

  it('takes a Windows-sized token (48,000 bytes of ticket and PAC) under the 64 KiB cap', () => {
    const token = b64(windowsKerberos({ ticketBytes: 48_000 }));
    expect(token.length).toBeLessThanOrEqual(MAX_TOKEN_BASE64_CHARS);
    expect(classifyNegotiateToken(token)).toMatchObject({ route: 'kerberos', form: 'spnego' });
  });
});

describe('classifyNegotiateToken: refusals', () => {
  it('refuses an empty, oversized or non-base64 token', () => {
    expectRefused('', 'EMPTY', 'the Negotiate token is empty');
    expectRefused('A'.repeat(70 * 1024), 'TOO_LONG', '71680 base64 characters, more than the 65536 allowed');
    expectRefused('YEgG@isG', 'NOT_BASE64', 'character 5 is "@"');
    expectRefused('YEgG BisG', 'NOT_BASE64', 'is not a multiple of 4');
    expectRefused('YEgGBi G', 'NOT_BASE64', 'character 7 is " "');
    expectRefused('YE=GBisG', 'NOT_BASE64', 'character 3 is "="');
    expectRefused('YEgGBis', 'NOT_BASE64', 'length 7 is not a multiple of 4');
    expectRefused('YEg-Bis_', 'NOT_BASE64', 'character 4 is "-"'); // base64url is not what clients send
  });

  it('refuses every cut of every DER fixture, at every byte, with a typed error', () => {
    const fixtures = [
      Buffer.from(CAPTURED.spnegoNtlm, 'base64'),
      Buffer.from(CAPTURED.negTokenResp, 'base64'),
      windowsKerberos(),
      mitKerberos(),
      rawKrb5(),
    ];
    for (const whole of fixtures) {
      for (let cut = 1; cut < whole.length; cut++) {
        const error = refusal(b64(whole.subarray(0, cut)));
        expect(['TRUNCATED', 'MALFORMED'], `cut at ${cut} of ${whole.length}`).toContain(error.code);
      }
    }
  });

  it('refuses a raw NTLMSSP message too short to hold its type', () => {
    expectRefused(b64(ntlmNegotiate.subarray(0, 11)), 'TRUNCATED', 'the NTLMSSP message is 11 bytes');
    expectRefused(b64(ntlmNegotiate.subarray(0, 7)), 'UNSUPPORTED_MECHANISM', 'starts with byte 0x4e');
  });

  it('refuses bytes after the outer element (over-long DER), at each level', () => {
    const extra = Buffer.from([0x00]);
    expectRefused(
      b64(Buffer.concat([Buffer.from(CAPTURED.spnegoNtlm, 'base64'), extra])),
      'TRAILING_BYTES',
      '1 unexpected bytes after the end of the token',
    );
    expectRefused(
      b64(Buffer.concat([Buffer.from(CAPTURED.negTokenResp, 'base64'), extra])),
      'TRAILING_BYTES',
      'after the end of the token',
    );
    // Inside the 0x60 framing, after the NegotiationToken.
    const inner = tlv(
      0x60,
      oid(Oids.spnego),
      tlv(0xa0, tlv(0x30, tlv(0xa0, tlv(0x30, oid(Oids.krb5))))),
      extra,
    );
    expectRefused(b64(inner), 'TRAILING_BYTES', 'after the end of the GSS-API initial token');
    // After the AP-REQ of a raw krb5 token.
    const raw = tlv(0x60, oid(Oids.krb5), Buffer.from([1, 0]), apReq(), extra);
    expectRefused(b64(raw), 'TRAILING_BYTES', 'after the end of the GSS-API initial token');
  });

  it('refuses lengths past the end, indefinite lengths and over-long length fields', () => {
    const token = Buffer.from(CAPTURED.spnegoNtlm, 'base64');
    const longer = Buffer.from(token);
    longer[1] = 0x49; // one more than there is
    expectRefused(b64(longer), 'TRUNCATED', 'the GSS-API initial token is cut short in the token');
    const inner = Buffer.from(token);
    inner[3] = 0x07; // the SPNEGO OID claims a byte of the next element
    expect(refusal(b64(inner)).code).toMatch(/^(TRUNCATED|MALFORMED)$/);
    const indefinite = Buffer.concat([Buffer.from([0x60, 0x80]), token.subarray(2), Buffer.from([0, 0])]);
    expectRefused(
      b64(indefinite),
      'MALFORMED',
      'the GSS-API initial token has an indefinite length (not DER)',
    );
    const fiveByteLength = Buffer.from([0x60, 0x85, 0, 0, 0, 0, 0x48, ...token.subarray(2)]);
    expectRefused(b64(fiveByteLength), 'MALFORMED', 'takes 5 bytes (at most 4)');
    const huge = Buffer.from([0x60, 0x84, 0xff, 0xff, 0xff, 0xff, ...token.subarray(2)]);
    expectRefused(b64(huge), 'TRUNCATED', 'cut short');
  });

  it('refuses other first bytes, other mechanisms and contradictions, naming what it found', () => {
    expectRefused(b64(Buffer.from('hello world!')), 'UNSUPPORTED_MECHANISM', 'starts with byte 0x68');
    expectRefused(
      b64(tlv(0x60, oid('1.3.6.1.4.1.311.2.2.10'), Buffer.from([0]))),
      'UNSUPPORTED_MECHANISM',
      'mechanism 1.3.6.1.4.1.311.2.2.10, not SPNEGO (1.3.6.1.5.5.2) or Kerberos (1.2.840.113554.1.2.2)',
    );
    expectRefused(
      b64(spnego(['1.2.840.113554.1.2.3'])),
      'UNSUPPORTED_MECHANISM',
      "the SPNEGO token's first mechanism is 1.2.840.113554.1.2.3",
    );
    expectRefused(
      b64(spnego([Oids.msKrb5, Oids.ntlmssp], ntlmNegotiate)),
      'MECHANISM_MISMATCH',
      'lists Kerberos (1.2.840.48018.1.2.2) first but carries an NTLMSSP token',
    );
    expectRefused(b64(spnego([])), 'MALFORMED', 'the SPNEGO mechTypes list is empty');
    // A raw krb5 token that is not an AP-REQ (tok_id 02 00 = AP-REP).
    const apRep = tlv(0x60, oid(Oids.krb5), Buffer.from([2, 0]), apReq());
    expectRefused(b64(apRep), 'UNSUPPORTED_MECHANISM', 'token ID 02 00, not an AP-REQ (01 00)');
    // A NegTokenResp inside the 0x60 framing is not a first token.
    const wrapped = tlv(0x60, oid(Oids.spnego), Buffer.from(CAPTURED.negTokenResp, 'base64'));
    expectRefused(b64(wrapped), 'MALFORMED', 'expected negTokenInit [0] (tag 0xa0), found tag 0xa1');
  });

  it('reads OIDs with multi-byte arcs exactly (no arc merged or split)', () => {
    // 1.2.840.48018 and 1.2.840.113554 differ only in their third arc's bytes.
    expect(oid(Oids.msKrb5).toString('hex')).toBe('06092a864882f712010202');
    expect(oid(Oids.krb5).toString('hex')).toBe('06092a864886f712010202');
    expect(oid(Oids.ntlmssp).toString('hex')).toBe('060a2b0601040182370202' + '0a');
    expect(classifyNegotiateToken(b64(spnego([Oids.msKrb5])))).toMatchObject({ mechanisms: [Oids.msKrb5] });
    const cutOid = tlv(0x60, tlv(0x06, Buffer.from([0x2b, 0x06, 0x81])), Buffer.from([0]));
    expectRefused(b64(cutOid), 'TRUNCATED', "the OBJECT IDENTIFIER's last arc is cut short");
  });
});
