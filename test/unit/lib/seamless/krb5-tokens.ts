import { oid, tlv } from './der.ts';
import { Oids } from '../../../../lib/seamless/spnego.ts';

/**
 * Kerberos client tokens assembled in DER with the real tags and OIDs, for the tests that read them without a
 * KDC: an AP-REQ (RFC 4120 §5.5.1) whose Ticket names a service in clear, wrapped as the krb5 mechanism's
 * initial token (RFC 1964 §1.1) and in a SPNEGO NegTokenInit (RFC 4178 §4.2). The encrypted parts are opaque
 * filler: only the framing and the ticket's realm and sname are ever read.
 */
export interface ApReqOptions {
  realm?: string;
  /** sname's components: `['HTTP', 'proxy.example.test']` by default. */
  sname?: readonly string[];
  /** 3 (NT-SRV-HST, what MIT's clients send) by default. */
  nameType?: number;
  /** Bytes of opaque ticket cipher text: 900 by default, ~48,000 for a Windows ticket with a large PAC. */
  ticketBytes?: number;
}

/** A DER INTEGER of an Int32 (two's complement, the fewest bytes). */
export function derInteger(n: number): Buffer {
  const full = Buffer.alloc(4);
  full.writeInt32BE(n);
  let start = 0;
  const redundant = (i: number) =>
    (full[i] === 0x00 && (full[i + 1] as number) < 0x80) ||
    (full[i] === 0xff && (full[i + 1] as number) >= 0x80);
  while (start < 3 && redundant(start)) start++;
  return tlv(0x02, full.subarray(start));
}
const generalString = (text: string) => tlv(0x1b, Buffer.from(text, 'utf8'));

/** PrincipalName ::= SEQUENCE { name-type [0] Int32, name-string [1] SEQUENCE OF KerberosString } */
export const principalName = (nameType: number, components: readonly string[]) =>
  tlv(0x30, tlv(0xa0, derInteger(nameType)), tlv(0xa1, tlv(0x30, ...components.map(generalString))));

/** EncryptedData ::= SEQUENCE { etype [0] Int32, kvno [1] UInt32 OPTIONAL, cipher [2] OCTET STRING } */
const encryptedData = (bytes: number, fill: number) =>
  tlv(
    0x30,
    tlv(0xa0, derInteger(18)),
    tlv(0xa1, derInteger(2)),
    tlv(0xa2, tlv(0x04, Buffer.alloc(bytes, fill))),
  );

/** Ticket ::= [APPLICATION 1] SEQUENCE { tkt-vno [0], realm [1], sname [2], enc-part [3] } */
export function ticket(options: ApReqOptions = {}): Buffer {
  return tlv(
    0x61,
    tlv(
      0x30,
      tlv(0xa0, derInteger(5)),
      tlv(0xa1, generalString(options.realm ?? 'EXAMPLE.TEST')),
      tlv(0xa2, principalName(options.nameType ?? 3, options.sname ?? ['HTTP', 'proxy.example.test'])),
      tlv(0xa3, encryptedData(options.ticketBytes ?? 900, 0x5a)),
    ),
  );
}

/** AP-REQ ::= [APPLICATION 14] SEQUENCE { pvno [0], msg-type [1], ap-options [2], ticket [3], authenticator [4] } */
export function apReq(options: ApReqOptions = {}, ticketBytes: Buffer = ticket(options)): Buffer {
  return tlv(
    0x6e,
    tlv(
      0x30,
      tlv(0xa0, derInteger(5)),
      tlv(0xa1, derInteger(14)),
      tlv(0xa2, tlv(0x03, Buffer.from([0, 0x20, 0, 0, 0]))),
      tlv(0xa3, ticketBytes),
      tlv(0xa4, encryptedData(200, 0xa5)),
    ),
  );
}

/** RFC 1964 §1.1: the krb5 mechanism's own initial token, 0x60 krb5-OID 01 00 AP-REQ. */
export const rawKrb5 = (options: ApReqOptions = {}) =>
  tlv(0x60, oid(Oids.krb5), Buffer.from([0x01, 0x00]), apReq(options));

/** An SPNEGO NegTokenInit listing `mechs` with an optional optimistic token (and reqFlags, mechListMIC). */
export function spnego(
  mechs: string[],
  mechToken?: Buffer,
  options: { reqFlags?: boolean; mic?: boolean } = {},
): Buffer {
  const fields = [tlv(0xa0, tlv(0x30, ...mechs.map(oid)))];
  if (options.reqFlags) fields.push(tlv(0xa1, tlv(0x03, Buffer.from([0x01, 0x00]))));
  if (mechToken) fields.push(tlv(0xa2, tlv(0x04, mechToken)));
  if (options.mic) fields.push(tlv(0xa3, tlv(0x04, Buffer.alloc(16, 1))));
  return tlv(0x60, oid(Oids.spnego), tlv(0xa0, tlv(0x30, ...fields)));
}

/** What Windows sends when it can use Kerberos: MS-krb5 first, then krb5, NEGOEX, NTLMSSP. */
export const windowsKerberos = (options: ApReqOptions = {}) =>
  spnego([Oids.msKrb5, Oids.krb5, Oids.negoex, Oids.ntlmssp], rawKrb5({ nameType: 2, ...options }));

/** What MIT's gss_init_sec_context with SPNEGO sends (the lab's gen_tokens.py): krb5 alone. */
export const mitKerberos = (options: ApReqOptions = {}) => spnego([Oids.krb5], rawKrb5(options));
