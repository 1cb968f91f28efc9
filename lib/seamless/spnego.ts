/**
 * Which way a client's Negotiate token goes, read from its first bytes (docs/seamless-design.md §2). Pure:
 * base64 text in, a route out, no GSSAPI. Windows sends Kerberos and NTLM under the one Negotiate scheme, raw
 * or wrapped in SPNEGO, and each form needs a different acceptor; Squid's own negotiate_wrapper sends SPNEGO
 * with NTLM inside to Kerberos, where it fails (lab §6.3), so the wrapper's form is told apart here.
 *
 * RFC 2743 §3.1, the GSS-API framing of a first token:
 *   InitialContextToken ::= [APPLICATION 0] IMPLICIT SEQUENCE {    -- 0x60
 *     thisMech          MechType,                                 -- OBJECT IDENTIFIER
 *     innerContextToken ANY DEFINED BY thisMech }
 * RFC 4178 §4.2, SPNEGO (thisMech 1.3.6.1.5.5.2):
 *   NegotiationToken ::= CHOICE { negTokenInit [0] NegTokenInit, negTokenResp [1] NegTokenResp }
 *   NegTokenInit ::= SEQUENCE {
 *     mechTypes   [0] MechTypeList,                  -- SEQUENCE OF MechType, most preferred first
 *     reqFlags    [1] ContextFlags  OPTIONAL,
 *     mechToken   [2] OCTET STRING  OPTIONAL,        -- the optimistic token, for mechTypes[0]
 *     mechListMIC [3] OCTET STRING  OPTIONAL, ... }
 * A later leg is a bare negTokenResp ([1], byte 0xa1), without the 0x60 framing. Raw NTLM is the NTLMSSP
 * message itself (MS-NLMP 2.2): "NTLMSSP\0" then the message type, little-endian.
 *
 * The token is read with der-reader.ts once along a fixed path (no recursion, so no depth to bound): linear in
 * the token's size.
 */
import { DerReader, hex, TokenError } from './der-reader.ts';

export { TokenError, TokenErrorCodes, type TokenErrorCode } from './der-reader.ts';

/** A Negotiate request line is capped at 64 KiB (Windows tokens with large PACs approach 48,000 bytes). */
export const MAX_TOKEN_BASE64_CHARS = 64 * 1024;

export const Oids = {
  spnego: '1.3.6.1.5.5.2',
  krb5: '1.2.840.113554.1.2.2',
  /** Microsoft's mistyped krb5 OID, which Windows lists first. */
  msKrb5: '1.2.840.48018.1.2.2',
  ntlmssp: '1.3.6.1.4.1.311.2.2.10',
  negoex: '1.3.6.1.4.1.311.2.2.30',
} as const;

export type TokenRoute = 'ntlm-raw' | 'kerberos' | 'spnego-ntlm' | 'continuation';

export type ClassifiedToken =
  /** A bare NTLMSSP message; `messageType` 1 = NEGOTIATE, 2 = CHALLENGE, 3 = AUTHENTICATE. */
  | { route: 'ntlm-raw'; token: Buffer; messageType: number }
  /** `form` spnego: a NegTokenInit whose first mechanism is Kerberos; raw: a bare krb5 AP-REQ. */
  | { route: 'kerberos'; token: Buffer; form: 'spnego' | 'raw'; mechanisms: string[]; mechToken?: Buffer }
  /** A NegTokenInit for NTLMSSP (or NEGOEX), or carrying an NTLMSSP optimistic token. */
  | { route: 'spnego-ntlm'; token: Buffer; mechanisms: string[]; mechToken?: Buffer }
  /** A NegTokenResp: the next leg of a handshake already under way. */
  | { route: 'continuation'; token: Buffer };

const NTLMSSP_SIGNATURE = Buffer.from('NTLMSSP\0', 'latin1');

/**
 * Classify a client's Negotiate token, as Squid passes it after `YR` or `KK` (base64). Throws TokenError for
 * anything that is not one of the forms in the routing table.
 */
export function classifyNegotiateToken(base64: string): ClassifiedToken {
  const token = decodeBase64(base64);
  const first = token[0];
  if (startsWithNtlmssp(token)) return { route: 'ntlm-raw', token, messageType: ntlmMessageType(token) };
  if (first === 0xa1) {
    // A NegTokenResp: check only that its outer length is whole; the acceptor reads the rest.
    const outer = new DerReader(token, 'the token');
    outer.element(0xa1, 'negTokenResp');
    outer.end();
    return { route: 'continuation', token };
  }
  if (first !== 0x60) {
    throw new TokenError(
      'UNSUPPORTED_MECHANISM',
      `the token starts with byte 0x${hex(first ?? 0)}: neither NTLMSSP, a GSS-API initial token (0x60) nor a SPNEGO continuation (0xa1)`,
    );
  }
  const top = new DerReader(token, 'the token');
  const framed = top.element(0x60, 'the GSS-API initial token').reader;
  top.end();
  const thisMech = framed.oid('thisMech');
  if (thisMech === Oids.krb5) {
    // RFC 1964 §1.1: a 2-byte token ID, 01 00 for an AP-REQ, then the AP-REQ ([APPLICATION 14], 0x6e).
    const tokId = framed.raw(2, 'the krb5 token ID');
    if (tokId[0] !== 0x01 || tokId[1] !== 0x00) {
      throw new TokenError(
        'UNSUPPORTED_MECHANISM',
        `the raw Kerberos token has token ID ${hex(tokId[0] ?? 0)} ${hex(tokId[1] ?? 0)}, not an AP-REQ (01 00)`,
      );
    }
    framed.element(0x6e, 'the AP-REQ');
    framed.end();
    return { route: 'kerberos', token, form: 'raw', mechanisms: [Oids.krb5] };
  }
  if (thisMech !== Oids.spnego) {
    throw new TokenError(
      'UNSUPPORTED_MECHANISM',
      `the GSS-API token is for mechanism ${thisMech}, not SPNEGO (${Oids.spnego}) or Kerberos (${Oids.krb5})`,
    );
  }
  const negotiation = framed.element(0xa0, 'negTokenInit [0]').reader;
  framed.end();
  const init = negotiation.element(0x30, 'NegTokenInit').reader;
  negotiation.end();
  const mechTypes = init.element(0xa0, 'mechTypes [0]').reader;
  const list = mechTypes.element(0x30, 'MechTypeList').reader;
  mechTypes.end();
  const mechanisms: string[] = [];
  while (!list.atEnd()) mechanisms.push(list.oid('a mechType'));
  if (mechanisms.length === 0) throw new TokenError('MALFORMED', 'the SPNEGO mechTypes list is empty');
  if (init.peek() === 0xa1) init.element(0xa1, 'reqFlags [1]');
  let mechToken: Buffer | undefined;
  if (init.peek() === 0xa2) {
    const wrapper = init.element(0xa2, 'mechToken [2]').reader;
    mechToken = wrapper.element(0x04, 'the mechToken OCTET STRING').content;
    wrapper.end();
  }
  // mechListMIC [3] (or Windows' negHints in NegTokenInit2) and extensions may follow; not needed to route.
  const firstMech = mechanisms[0] as string;
  const kerberos = firstMech === Oids.krb5 || firstMech === Oids.msKrb5;
  const ntlmToken = mechToken !== undefined && startsWithNtlmssp(mechToken);
  if (kerberos) {
    if (ntlmToken) {
      throw new TokenError(
        'MECHANISM_MISMATCH',
        `the SPNEGO token lists Kerberos (${firstMech}) first but carries an NTLMSSP token`,
      );
    }
    return { route: 'kerberos', token, form: 'spnego', mechanisms, ...(mechToken && { mechToken }) };
  }
  if (firstMech === Oids.ntlmssp || firstMech === Oids.negoex || ntlmToken) {
    return { route: 'spnego-ntlm', token, mechanisms, ...(mechToken && { mechToken }) };
  }
  throw new TokenError(
    'UNSUPPORTED_MECHANISM',
    `the SPNEGO token's first mechanism is ${firstMech}, neither Kerberos nor NTLMSSP`,
  );
}

/**
 * Strict base64 (RFC 4648 §4, padded): Buffer.from skips characters outside the alphabet, which would let
 * garbage through as a shorter token.
 */
function decodeBase64(text: string): Buffer {
  if (text.length === 0) throw new TokenError('EMPTY', 'the Negotiate token is empty');
  if (text.length > MAX_TOKEN_BASE64_CHARS) {
    throw new TokenError(
      'TOO_LONG',
      `the Negotiate token is ${text.length} base64 characters, more than the ${MAX_TOKEN_BASE64_CHARS} allowed`,
    );
  }
  if (text.length % 4 !== 0) {
    throw new TokenError(
      'NOT_BASE64',
      `the Negotiate token is not base64: its length ${text.length} is not a multiple of 4`,
    );
  }
  let padding = 0;
  if (text.endsWith('==')) padding = 2;
  else if (text.endsWith('=')) padding = 1;
  for (let i = 0; i < text.length - padding; i++) {
    if (!isBase64Char(text.charCodeAt(i))) {
      throw new TokenError(
        'NOT_BASE64',
        `the Negotiate token is not base64: character ${i + 1} is ${JSON.stringify(text[i])}`,
      );
    }
  }
  return Buffer.from(text, 'base64');
}

function isBase64Char(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) || // A-Z
    (c >= 0x61 && c <= 0x7a) || // a-z
    (c >= 0x30 && c <= 0x39) || // 0-9
    c === 0x2b || // +
    c === 0x2f // /
  );
}

function startsWithNtlmssp(bytes: Buffer): boolean {
  return bytes.length >= NTLMSSP_SIGNATURE.length && bytes.subarray(0, 8).equals(NTLMSSP_SIGNATURE);
}

function ntlmMessageType(token: Buffer): number {
  if (token.length < 12) {
    throw new TokenError(
      'TRUNCATED',
      `the NTLMSSP message is ${token.length} bytes, too short for its message type (12)`,
    );
  }
  return token.readUInt32LE(8);
}
