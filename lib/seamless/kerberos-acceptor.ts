import kerberos from 'kerberos';
import { readKrb5TokenTarget, type TicketTarget } from './ap-req.ts';
import { KerberosRejectError, type KerberosAcceptor } from './acceptors.ts';
import {
  describeProxyService,
  describeTicketTarget,
  isProxyPrincipalName,
  isProxyTicket,
  type ProxyService,
} from './proxy-service.ts';
import type { KerberosRejectCode } from './reject-codes.ts';
import { classifyNegotiateToken, TokenError } from './spnego.ts';

/**
 * The Kerberos acceptor of the Negotiate scheme: MIT GSSAPI through the `kerberos` package (7.0.0), in
 * authd's process (docs/seamless-design.md §2). Per handshake `initializeServer('')` + one `step`.
 *
 * The empty service name means GSS_C_NO_CREDENTIAL: GSSAPI accepts a ticket for any principal whose key is
 * in the keytab, and with no acceptor name MIT tries every keytab entry and names the one that worked. In
 * Active Directory `HTTP/`, `host/` and `cifs/` of the computer account share one key, so a `host/` ticket
 * decrypts with the `HTTP/` entry and GSSAPI reports `HTTP/`. Hence two checks, each refusing with
 * WRONG_PRINCIPAL: before GSSAPI, the service the ticket names in clear (its sname and realm, ap-req.ts) must
 * be one of the proxy's HTTP/ names (proxy-service.ts); after, so must the key GSSAPI used (a keytab that
 * also holds host keys, KRB5_KTNAME pointed at /etc/krb5.keytab). The sname is outside the ticket's
 * encryption: this refuses a client's ticket for another service, not a token someone rewrote.
 *
 * The environment is set by whoever starts the process, not here (the GSS library reads it once):
 *   KRB5_KTNAME=FILE:<keytab>   the HTTP keytab (else /etc/krb5.keytab)
 *   KRB5RCACHEDIR=<dir>         the replay cache, on by default (else /var/tmp/krb5_<uid>.rcache2)
 *   KRB5_CONFIG=<krb5.conf>     not needed to accept, but harmless
 *   GSS_MECH_CONFIG=/dev/null   a system-wide gss-ntlmssp otherwise changes the errors (lab §6.2)
 *
 * `step` treats GSS_S_CONTINUE_NEEDED as done and then fails in gss_display_name, so only single-leg
 * Kerberos is accepted (always enough in the lab; Windows never needs a second leg for Kerberos).
 * Tokens never reach a log line or an error message: GSSAPI's messages name principals, not tokens.
 */

/** The part of `kerberos.KerberosServer` used here, so that the tests can put a fake GSS behind it. */
export interface GssServer {
  username: string;
  response: string;
  targetName: string;
  contextComplete: boolean;
  step(token: string): Promise<string>;
}

export interface KerberosAcceptorOptions {
  log: (line: string) => void;
  /** The proxy's HTTP/ names in the joined realm: the only services a ticket may be for. */
  service: ProxyService;
  /** The GSS entry point; the `kerberos` package's by default. */
  initializeServer?: (service: string) => Promise<GssServer>;
  /** Environment read for the start-up warnings; process.env by default. */
  env?: NodeJS.ProcessEnv;
}

export function createKerberosAcceptor(options: KerberosAcceptorOptions): KerberosAcceptor {
  const { log, service } = options;
  const initializeServer = options.initializeServer ?? ((name: string) => kerberos.initializeServer(name));
  const env = options.env ?? process.env;
  // Said once at start: without these the acceptor still runs, on defaults an administrator did not choose.
  if (env.KRB5_KTNAME === undefined || env.KRB5_KTNAME === '') {
    log(
      'KRB5_KTNAME is not set: the Kerberos acceptor reads /etc/krb5.keytab (only HTTP/ tickets are accepted)',
    );
  }
  if (env.KRB5RCACHEDIR === undefined || env.KRB5RCACHEDIR === '') {
    log('KRB5RCACHEDIR is not set: the replay cache is /var/tmp/krb5_<uid>.rcache2');
  }

  return {
    async accept(tokenBase64) {
      const asked = ticketTargetOf(tokenBase64);
      if (!isProxyTicket(asked, service)) {
        throw new KerberosRejectError(
          'WRONG_PRINCIPAL',
          `the ticket is for ${describeTicketTarget(asked)}, not one of the proxy's (${describeProxyService(service)})`,
        );
      }
      let server: GssServer;
      try {
        server = await initializeServer('');
        await server.step(tokenBase64);
      } catch (error) {
        throw rejectionOf(error);
      }
      if (!server.contextComplete) {
        throw new KerberosRejectError(
          'CONTINUE_NEEDED',
          'GSSAPI wants another leg; only single-leg Kerberos is accepted',
        );
      }
      const target = server.targetName;
      if (typeof target !== 'string' || !isProxyPrincipalName(target, service)) {
        throw new KerberosRejectError(
          'WRONG_PRINCIPAL',
          `GSSAPI accepted the ticket with the key of ${JSON.stringify(String(target).slice(0, 128))}, not one of the proxy's (${describeProxyService(service)})`,
        );
      }
      const user = server.username;
      if (typeof user !== 'string' || user === '') {
        throw new KerberosRejectError('FAILED', 'GSSAPI accepted the token but named no client principal');
      }
      const response =
        typeof server.response === 'string' && server.response !== '' ? server.response : undefined;
      return { user, ...(response !== undefined && { response }) };
    },
  };
}

/**
 * The service the client's ticket names: from the raw krb5 token, or from the mechToken of a SPNEGO
 * NegTokenInit. A token that cannot be read is MALFORMED (its reader's code in the message); SPNEGO with no
 * optimistic token would need a second leg, which this acceptor does not take.
 */
function ticketTargetOf(tokenBase64: string): TicketTarget {
  try {
    const classified = classifyNegotiateToken(tokenBase64);
    if (classified.route !== 'kerberos') {
      throw new KerberosRejectError('MALFORMED', `a ${classified.route} token is not a Kerberos token`);
    }
    const krb5Token = classified.form === 'raw' ? classified.token : classified.mechToken;
    if (krb5Token === undefined) {
      throw new KerberosRejectError(
        'CONTINUE_NEEDED',
        'the SPNEGO token carries no Kerberos ticket (no mechToken); only single-leg Kerberos is accepted',
      );
    }
    return readKrb5TokenTarget(krb5Token);
  } catch (error) {
    if (error instanceof TokenError) {
      throw new KerberosRejectError('MALFORMED', `${error.message} (${error.code})`, { cause: error });
    }
    throw error;
  }
}

/**
 * GSSAPI's message (major status, then the mechanism's minor one, e.g. `Unspecified GSS failure.  Minor code
 * may provide more information: Request is a replay`) → a stable code. The phrases are MIT krb5 1.20's, as the
 * lab saw them (REPORT.md §6.2) and as libkrb5's message table has them; first match wins, so the specific
 * keytab cases come before the generic ones. Plain substring tests: linear in the message.
 */
const RULES: readonly (readonly [KerberosRejectCode, readonly string[]])[] = [
  ['CLOCK_SKEW', ['clock skew too great']],
  ['REPLAY', ['request is a replay', 'message is a replay', 'replayed']],
  ['EXPIRED', ['ticket expired', 'credential has expired', 'has expired']],
  [
    'WRONG_PRINCIPAL',
    [
      // "Request ticket server X not found in keytab (ticket kvno N)": the keytab has no key for X at all.
      'not found in keytab (ticket kvno',
      'wrong principal in request',
      'does not match server principal',
      'no principal in keytab matches desired name',
    ],
  ],
  [
    'KEYTAB',
    [
      // "… kvno N not found in keytab; keytab is likely out of date", "… found in keytab but not with
      // enctype", "… cannot decrypt ticket", "Key table file '…' not found", "No key table entry found".
      'keytab',
      'key table',
      'no credentials were supplied',
      'decrypt integrity check failed',
      'cannot find key',
      'permission denied',
    ],
  ],
  [
    'MALFORMED',
    [
      'a required input parameter could not be read',
      'defective token',
      // "Token header is malformed or corrupt": a token cut short (seen on a truncated SPNEGO token).
      'malformed or corrupt',
      'an unsupported mechanism was requested',
      'asn.1',
      'invalid token',
      'no challenge parameter',
      'field is too long',
    ],
  ],
  // The package calls gss_display_name on a context that is not complete when GSSAPI answered
  // CONTINUE_NEEDED: the client name is then GSS_C_NO_NAME and this is the error.
  ['CONTINUE_NEEDED', ['an invalid name was supplied']],
];

/** Bound what GSSAPI's message contributes to a reply line (it names principals, never the token). */
const MAX_MESSAGE_CHARS = 200;

export function kerberosRejectCodeOf(message: string): KerberosRejectCode {
  const lower = message.toLowerCase();
  for (const [code, phrases] of RULES) {
    if (phrases.some((phrase) => lower.includes(phrase))) return code;
  }
  return 'FAILED';
}

function rejectionOf(error: unknown): KerberosRejectError {
  if (error instanceof KerberosRejectError) return error;
  const raw = error instanceof Error ? error.message : String(error);
  // "Unspecified GSS failure.  Minor code may provide more information: X" says nothing X does not.
  const message = raw
    .replace(/^Unspecified GSS failure\. {1,2}Minor code may provide more information: /, '')
    .replace(/\s+/g, ' ')
    .trim();
  const shown = message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message;
  return new KerberosRejectError(kerberosRejectCodeOf(raw), shown || 'GSSAPI failed without a message', {
    cause: error,
  });
}
