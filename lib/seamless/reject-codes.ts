/** Why the Kerberos acceptor refused a token. The helper answers BH with it (Squid logs it in cache.log). */
export const KerberosRejectCodes = [
  /** The client's clock is more than the allowed skew (5 minutes) from ours. */
  'CLOCK_SKEW',
  /** The authenticator was seen before (the replay cache). */
  'REPLAY',
  /** The ticket is for a service other than the proxy's `HTTP/` names, or one the keytab does not hold. */
  'WRONG_PRINCIPAL',
  /** The ticket has expired. */
  'EXPIRED',
  /** GSSAPI could not read the token. */
  'MALFORMED',
  /** The acceptor wanted another leg: Doorman's acceptor takes single-leg Kerberos only. */
  'CONTINUE_NEEDED',
  /** The keytab is missing or unreadable, or holds no key of the ticket's version or type. */
  'KEYTAB',
  /** Anything else GSSAPI reported. */
  'FAILED',
] as const;
export type KerberosRejectCode = (typeof KerberosRejectCodes)[number];
