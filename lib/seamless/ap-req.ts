import { DerReader, hex, TokenError } from './der-reader.ts';

/**
 * The service a client's Kerberos ticket names, read in clear from its AP-REQ, without GSSAPI. Pure.
 *
 * Why not trust GSSAPI's answer: an Active Directory computer account has one key for all its service names
 * (`HTTP/`, `host/`, `cifs/`, …), and MIT's acceptor, with no acceptor name, decrypts a ticket with whichever
 * keytab entry works and reports that entry (an `HTTP/` one) as the target. The ticket's own sname is the only
 * place that says which service the client asked the KDC for.
 *
 * The GSS-API krb5 token (RFC 2743 §3.1, RFC 4121 §4.1; TOK_ID 01 00 = AP-REQ):
 *   [APPLICATION 0] IMPLICIT SEQUENCE { thisMech OID 1.2.840.113554.1.2.2, TOK_ID 2 bytes, AP-REQ }
 * RFC 4120 §5.5.1, §5.3, §5.2.2:
 *   AP-REQ ::= [APPLICATION 14] SEQUENCE {          -- 0x6e
 *     pvno [0] INTEGER (5), msg-type [1] INTEGER (14), ap-options [2] APOptions,
 *     ticket [3] Ticket, authenticator [4] EncryptedData }
 *   Ticket ::= [APPLICATION 1] SEQUENCE {           -- 0x61
 *     tkt-vno [0] INTEGER (5), realm [1] Realm, sname [2] PrincipalName, enc-part [3] EncryptedData }
 *   PrincipalName ::= SEQUENCE { name-type [0] Int32, name-string [1] SEQUENCE OF KerberosString }
 *   Realm, KerberosString ::= GeneralString (IA5String)  -- tag 0x1b
 *
 * The sname is not covered by the ticket's encryption: it tells a misdirected ticket apart, not one whose
 * sname was rewritten by whoever holds the token (only a key of its own for HTTP/ does that).
 */

/** What the AP-REQ says the ticket is for. */
export interface TicketTarget {
  /** The ticket's realm, the service's (RFC 4120 §5.3). */
  realm: string;
  /** sname's name-type: 1 NT-PRINCIPAL, 2 NT-SRV-INST (Windows), 3 NT-SRV-HST (MIT), … (RFC 4120 §6.2). */
  nameType: number;
  /** sname's components: `['HTTP', 'proxy.example.test']`. */
  components: string[];
}

/** A token of at most 64 KiB of base64 (spnego.ts MAX_TOKEN_BASE64_CHARS) is at most 48 KiB of bytes. */
export const MAX_KRB5_TOKEN_BYTES = 48 * 1024;
/** A service name has two components; a few more are allowed so that the refusal can show them. */
export const MAX_NAME_COMPONENTS = 8;
/** A DNS name is at most 253 characters; a realm is one. */
export const MAX_NAME_BYTES = 255;

const KRB5_OIDS: readonly string[] = ['1.2.840.113554.1.2.2', '1.2.840.48018.1.2.2'];
const GENERAL_STRING = 0x1b;

/**
 * The target of the GSS-API krb5 initial token: a raw Kerberos token, or the mechToken of a SPNEGO NegTokenInit.
 * Throws TokenError: TRUNCATED for bytes cut short, TOO_LONG, and MALFORMED or TRAILING_BYTES for anything
 * else that is not a krb5 AP-REQ token.
 */
export function readKrb5TokenTarget(token: Buffer): TicketTarget {
  if (token.length > MAX_KRB5_TOKEN_BYTES) {
    throw new TokenError(
      'TOO_LONG',
      `the Kerberos token is ${token.length} bytes, more than the ${MAX_KRB5_TOKEN_BYTES} allowed`,
    );
  }
  const top = new DerReader(token, 'the Kerberos token');
  const framed = top.element(0x60, 'the GSS-API krb5 token').reader;
  top.end();
  const mech = framed.oid('thisMech');
  if (!KRB5_OIDS.includes(mech)) {
    throw new TokenError('MALFORMED', `the mechanism token is for ${mech}, not Kerberos (${KRB5_OIDS[0]})`);
  }
  const tokId = framed.raw(2, 'the krb5 token ID');
  if (tokId[0] !== 0x01 || tokId[1] !== 0x00) {
    throw new TokenError(
      'MALFORMED',
      `the Kerberos token has token ID ${hex(tokId[0] ?? 0)} ${hex(tokId[1] ?? 0)}, not an AP-REQ (01 00)`,
    );
  }
  const target = readApReq(framed);
  framed.end();
  return target;
}

function readApReq(outer: DerReader): TicketTarget {
  const apReq = outer.element(0x6e, 'the AP-REQ').reader;
  const fields = apReq.element(0x30, 'the AP-REQ SEQUENCE').reader;
  apReq.end();
  expectInteger(fields, 0xa0, 'pvno', 5);
  expectInteger(fields, 0xa1, 'msg-type', 14);
  fields.element(0xa2, 'ap-options [2]');
  const ticketField = fields.element(0xa3, 'ticket [3]').reader;
  fields.element(0xa4, 'authenticator [4]');
  fields.end();

  const ticket = ticketField.element(0x61, 'the Ticket').reader;
  ticketField.end();
  const ticketFields = ticket.element(0x30, 'the Ticket SEQUENCE').reader;
  ticket.end();
  expectInteger(ticketFields, 0xa0, 'tkt-vno', 5);
  const realmField = ticketFields.element(0xa1, 'realm [1]').reader;
  const realm = kerberosString(realmField, 'the ticket realm');
  realmField.end();
  const snameField = ticketFields.element(0xa2, 'sname [2]').reader;
  const sname = snameField.element(0x30, 'the sname PrincipalName').reader;
  snameField.end();
  ticketFields.element(0xa3, 'enc-part [3]');
  ticketFields.end();

  const typeField = sname.element(0xa0, 'name-type [0]').reader;
  const nameType = typeField.integer('the sname name-type');
  typeField.end();
  const stringsField = sname.element(0xa1, 'name-string [1]').reader;
  const strings = stringsField.element(0x30, 'the sname name-string SEQUENCE').reader;
  stringsField.end();
  sname.end();
  const components: string[] = [];
  while (!strings.atEnd()) {
    if (components.length === MAX_NAME_COMPONENTS) {
      throw new TokenError('MALFORMED', `the sname has more than ${MAX_NAME_COMPONENTS} components`);
    }
    components.push(kerberosString(strings, 'an sname component'));
  }
  if (components.length === 0) throw new TokenError('MALFORMED', 'the sname has no components');
  return { realm, nameType, components };
}

function expectInteger(fields: DerReader, tag: number, what: string, wanted: number): void {
  const field = fields.element(tag, `${what} [${tag & 0x1f}]`).reader;
  const value = field.integer(what);
  field.end();
  if (value !== wanted) throw new TokenError('MALFORMED', `the AP-REQ's ${what} is ${value}, not ${wanted}`);
}

function kerberosString(reader: DerReader, what: string): string {
  const { content } = reader.element(GENERAL_STRING, what);
  if (content.length === 0 || content.length > MAX_NAME_BYTES) {
    throw new TokenError(
      'MALFORMED',
      `${what} is ${content.length} bytes long (1 to ${MAX_NAME_BYTES} allowed)`,
    );
  }
  // Kerberos names are IA5 by the RFC and UTF-8 in practice; the bytes are shown, compared only with ASCII.
  return content.toString('utf8');
}
