import { ResultCodeError } from 'ldapts';

/**
 * Why the directory could not be used. These are never the user's fault (a wrong user password is a
 * PasswordCheck result, not an error): a helper answers BH for them, the settings screen shows the message.
 * Callers branch on `code`; messages are for people, name the server, and never carry a password.
 */
export const DirectoryErrorCodes = [
  /** Could not connect, or the connection was lost: refused, no route, unknown host name, reset. */
  'UNREACHABLE',
  /** Connecting or an operation took longer than the configured timeout. */
  'TIMEOUT',
  /** TLS failed: the certificate is not trusted or not for this host, or the server refused StartTLS. */
  'TLS',
  /** The bind account's DN or password was refused (AD sub-codes such as `data 52e` turned into words). */
  'INVALID_CREDENTIALS',
  /** The search base does not exist on this server. */
  'NO_SUCH_BASE',
  /** The server wants an encrypted connection for a simple bind (AD over plain LDAP). */
  'STRONG_AUTH_REQUIRED',
  /** The bind account may not read what Doorman needs. */
  'INSUFFICIENT_ACCESS',
  /** The server answered with another error result (busy, unwilling to perform, …). */
  'REFUSED',
  /** The server's answer made no sense to us. */
  'PROTOCOL',
  /** Used after close(). */
  'CLOSED',
] as const;
export type DirectoryErrorCode = (typeof DirectoryErrorCodes)[number];

export class DirectoryError extends Error {
  readonly code: DirectoryErrorCode;
  /** The LDAP result code the server sent, when it sent one. */
  readonly resultCode: number | undefined;
  /** Active Directory's sub-code from the diagnostic message (`52e`), when there was one. */
  readonly adSubCode: string | undefined;
  constructor(
    code: DirectoryErrorCode,
    message: string,
    options: { cause?: unknown; resultCode?: number; adSubCode?: string } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DirectoryError';
    this.code = code;
    this.resultCode = options.resultCode;
    this.adSubCode = options.adSubCode;
  }
}

/**
 * Active Directory puts the Windows error behind a failed bind in the diagnostic message:
 * `80090308: LdapErr: DSID-0C09042A, comment: AcceptSecurityContext error, data 52e, v3839`.
 * Samba sends the same form. These are the ones a bind can give, in words.
 */
export const AD_BIND_SUB_CODES = {
  '525': 'user not found',
  '52e': 'invalid credentials (wrong password)',
  '530': 'not permitted to log on at this time (logon hours)',
  '531': 'not permitted to log on from this workstation',
  '532': 'password expired',
  '533': 'account disabled',
  '534': 'the user has not been granted this logon type',
  '568': 'too many security IDs (group memberships) in the logon token',
  '701': 'account expired',
  '773': 'the user must reset the password',
  '775': 'account locked out',
} as const satisfies Record<string, string>;
export type AdBindSubCode = keyof typeof AD_BIND_SUB_CODES;

/** The AD sub-code in a diagnostic message (`data 52e` → `52e`), lower-case; undefined when there is none. */
export function adSubCodeOf(message: string): string | undefined {
  return /\bdata ([0-9a-f]{1,8})\b/i.exec(message)?.[1]?.toLowerCase();
}

/** `52e` → `invalid credentials (wrong password)`; an unknown sub-code is said as it is. */
export function describeAdSubCode(subCode: string): string {
  return Object.hasOwn(AD_BIND_SUB_CODES, subCode)
    ? AD_BIND_SUB_CODES[subCode as AdBindSubCode]
    : `Windows error ${subCode}`;
}

/** The phase an error happened in: it decides what a lost connection or a refusal means. */
export type Phase = 'connect' | 'starttls' | 'bind' | 'search';

export interface ErrorContext {
  /** `ldap.example.test:636`, named in every message. */
  server: string;
  phase: Phase;
  /** The DN bound as (phase 'bind'): the bind account's is named; never a password. */
  bindDn?: string;
  /** The search base (phase 'search'). */
  base?: string;
}

/** Node's TLS verification error codes, in words an administrator can act on. */
const TLS_WORDS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT:
    'the server certificate is self-signed; give its certificate (or the CA that issued it) as the CA certificate',
  SELF_SIGNED_CERT_IN_CHAIN:
    'the server certificate was issued by a CA that is not trusted (self-signed CA in the chain); give that CA certificate',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    'the server certificate was issued by an unknown CA; give the CA certificate that issued it',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    'the server certificate was issued by an unknown CA; give the CA certificate that issued it',
  UNABLE_TO_GET_ISSUER_CERT: 'the server certificate was issued by an unknown CA; give the CA certificate',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the server certificate is not for this host name (name mismatch)',
  CERT_HAS_EXPIRED: 'the server certificate has expired',
  CERT_NOT_YET_VALID: 'the server certificate is not valid yet (check the clocks)',
  CERT_SIGNATURE_FAILURE: 'the server certificate signature is invalid',
  CERT_REVOKED: 'the server certificate has been revoked',
  ERR_SSL_WRONG_VERSION_NUMBER:
    'the server did not answer in TLS (is this port plain LDAP? use StartTLS, or the LDAPS port)',
  ERR_SSL_PACKET_LENGTH_TOO_LONG: 'the server did not answer in TLS (is this port plain LDAP?)',
};

const UNREACHABLE_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused (is the directory server running, and is the port right?)',
  ENOTFOUND: 'unknown host name (DNS has no address for it)',
  EAI_AGAIN: 'the host name could not be resolved (DNS did not answer)',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'the connection was reset by the server',
  EPIPE: 'the connection was closed by the server',
  ECONNABORTED: 'the connection was aborted',
  EADDRNOTAVAIL: 'address not available',
};

/**
 * Turn whatever ldapts or Node threw into a DirectoryError that says what happened, in words. A
 * DirectoryError passes through unchanged.
 */
export function toDirectoryError(error: unknown, context: ErrorContext): DirectoryError {
  if (error instanceof DirectoryError) return error;
  const at = context.server;
  const nodeCode = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);

  if (error instanceof ResultCodeError) return fromResult(error, context);

  if (typeof nodeCode === 'string') {
    const tls = TLS_WORDS[nodeCode];
    if (tls !== undefined) {
      return new DirectoryError('TLS', `TLS with ${at} failed: ${tls} (${nodeCode})`, { cause: error });
    }
    if (nodeCode === 'ETIMEDOUT') {
      return new DirectoryError('TIMEOUT', `${at}: connection timed out`, { cause: error });
    }
    if (/before secure TLS connection was established/.test(message)) {
      return new DirectoryError(
        'TLS',
        `TLS with ${at} failed: the server closed the connection during the TLS handshake (is this port plain LDAP? use StartTLS, or the LDAPS port)`,
        { cause: error },
      );
    }
    const words = UNREACHABLE_CODES[nodeCode];
    if (words !== undefined) {
      return new DirectoryError('UNREACHABLE', `cannot reach ${at}: ${words}`, { cause: error });
    }
    if (nodeCode.startsWith('ERR_SSL') || nodeCode.startsWith('ERR_TLS') || nodeCode === 'EPROTO') {
      return new DirectoryError('TLS', `TLS with ${at} failed: ${message} (${nodeCode})`, { cause: error });
    }
    if (/CERT/.test(nodeCode)) {
      return new DirectoryError('TLS', `TLS with ${at} failed: certificate not accepted (${nodeCode})`, {
        cause: error,
      });
    }
  }
  // ldapts's own errors are plain Errors told apart by their text.
  if (/^Connection timeout/.test(message)) {
    return new DirectoryError('TIMEOUT', `${at}: no connection within the connect timeout`, { cause: error });
  }
  if (/Operation timed out/.test(message)) {
    return new DirectoryError('TIMEOUT', `${at}: no answer within the timeout (${context.phase})`, {
      cause: error,
    });
  }
  if (/Connection closed|Socket error|socket connection not established|connection lost/i.test(message)) {
    return new DirectoryError('UNREACHABLE', `${at}: the connection was lost (${context.phase})`, {
      cause: error,
    });
  }
  if (context.phase === 'starttls') {
    return new DirectoryError('TLS', `TLS with ${at} failed during StartTLS: ${message}`, { cause: error });
  }
  return new DirectoryError('PROTOCOL', `${at}: unexpected ${context.phase} failure: ${message}`, {
    cause: error,
  });
}

function fromResult(error: ResultCodeError, context: ErrorContext): DirectoryError {
  const at = context.server;
  // ldapts appends " Code: 0x31" to the server's diagnostic message.
  const diagnostic = error.message.replace(/Code: 0x[0-9a-f]+$/i, '').trim();
  const subCode = adSubCodeOf(diagnostic);
  const options = {
    cause: error,
    resultCode: error.code,
    ...(subCode === undefined ? {} : { adSubCode: subCode }),
  };
  const said = diagnostic.length > 0 ? ` (server said: ${diagnostic})` : '';
  switch (error.code) {
    case 49: {
      const who = context.bindDn === undefined ? 'the bind' : `the bind as ${JSON.stringify(context.bindDn)}`;
      const why =
        subCode === undefined
          ? 'invalid credentials: wrong DN or password'
          : `${describeAdSubCode(subCode)} (AD data ${subCode})`;
      return new DirectoryError('INVALID_CREDENTIALS', `${at} refused ${who}: ${why}`, options);
    }
    case 8:
    case 13:
      return new DirectoryError(
        'STRONG_AUTH_REQUIRED',
        `${at} refuses a simple bind over an unencrypted connection: use LDAPS or StartTLS${said}`,
        options,
      );
    case 32:
      if (context.phase === 'search') {
        return new DirectoryError(
          'NO_SUCH_BASE',
          `the search base ${JSON.stringify(context.base ?? '')} does not exist on ${at}`,
          options,
        );
      }
      return new DirectoryError(
        'INVALID_CREDENTIALS',
        `${at} refused the bind: no such entry${context.bindDn === undefined ? '' : ` ${JSON.stringify(context.bindDn)}`}`,
        options,
      );
    case 10:
      // A referral: the server does not hold that part of the tree. We do not chase referrals.
      return new DirectoryError(
        'NO_SUCH_BASE',
        `${at} does not hold the search base ${JSON.stringify(context.base ?? '')} (it answered with a referral elsewhere)`,
        options,
      );
    case 34:
      return new DirectoryError(
        context.phase === 'search' ? 'NO_SUCH_BASE' : 'INVALID_CREDENTIALS',
        `${at}: invalid DN syntax${said}`,
        options,
      );
    case 50:
      return new DirectoryError(
        'INSUFFICIENT_ACCESS',
        `${at}: the bind account may not do this (${context.phase})${said}`,
        options,
      );
    case 48:
    case 7:
      return new DirectoryError('INVALID_CREDENTIALS', `${at} does not accept simple binds${said}`, options);
    case 2:
      if (context.phase === 'starttls') {
        return new DirectoryError('TLS', `${at} does not support StartTLS${said}`, options);
      }
      return new DirectoryError('PROTOCOL', `${at}: protocol error${said}`, options);
    case 3:
      return new DirectoryError('TIMEOUT', `${at}: the server's time limit was exceeded${said}`, options);
    case 51:
    case 52:
      if (context.phase === 'starttls') {
        return new DirectoryError('TLS', `${at} cannot start TLS${said}`, options);
      }
      return new DirectoryError('UNREACHABLE', `${at} is unavailable or busy${said}`, options);
    default:
      if (context.phase === 'starttls') {
        return new DirectoryError('TLS', `${at} refused StartTLS${said}`, options);
      }
      return new DirectoryError(
        'REFUSED',
        `${at} refused the ${context.phase} (LDAP result ${error.code})${said}`,
        options,
      );
  }
}
