import type { KerberosRejectCode } from './reject-codes.ts';

/**
 * What a handshake is handed to do its work: the Kerberos acceptor (kerberos-acceptor.ts, GSSAPI on the HTTP
 * keytab) and the ntlm_auth processes it leases (helpers/authd/ntlm-pool.ts). The handshake (handshake.ts)
 * only knows these interfaces, so authd and the tests inject real ones or fakes.
 */

export class KerberosRejectError extends Error {
  readonly code: KerberosRejectCode;
  constructor(code: KerberosRejectCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KerberosRejectError';
    this.code = code;
  }
}

export interface KerberosAcceptance {
  /** The client principal, `alice@EXAMPLE.TEST`. */
  user: string;
  /** The AP-REP for mutual authentication, base64; absent or empty when GSSAPI gives none. */
  response?: string;
}

/** A single-leg Kerberos acceptor (the `kerberos` package on the HTTP keytab). Rejects with KerberosRejectError. */
export interface KerberosAcceptor {
  accept(tokenBase64: string): Promise<KerberosAcceptance>;
}

/** ntlm_auth's helper protocols: `squid-2.5-ntlmssp` for raw NTLMSSP, `gss-spnego` for NTLM inside SPNEGO. */
export type NtlmLeaseKind = 'ntlmssp' | 'gss-spnego';

/** One ntlm_auth process, held by one handshake from its `YR` to its final answer. */
export interface NtlmLease {
  /**
   * Send `YR <b64>` or `KK <b64>`; resolve with ntlm_auth's reply line, without LF:
   *   ntlmssp:     `TT <b64>` / `AF <user>` / `NA <reason>` / `BH <reason>`
   *   gss-spnego:  `TT <b64> *` / `AF <b64|*> <user>` / `NA <b64|*> <reason>` / `BH <reason>`
   */
  step(line: string): Promise<string>;
  /** Give the process back to the pool. Called exactly once per lease. */
  release(): void;
}

export interface NtlmBackend {
  lease(kind: NtlmLeaseKind): Promise<NtlmLease>;
}
