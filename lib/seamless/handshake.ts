import { isIP } from 'node:net';
import type { Clock } from '../clock.ts';
import { InvalidInputError } from '../errors.ts';
import {
  formatStatefulReply,
  parseStatefulRequest,
  type StatefulReply,
  type StatefulScheme,
} from '../helper-protocol/negotiate.ts';
import {
  KerberosRejectError,
  type KerberosAcceptance,
  type KerberosAcceptor,
  type NtlmBackend,
  type NtlmLease,
  type NtlmLeaseKind,
} from './acceptors.ts';
import { MAX_REASON_CHARS, parseNtlmAuthReply } from './ntlm-auth-reply.ts';
import { PrincipalError, userNameOf, type JoinedDomain } from './principal.ts';
import { classifyNegotiateToken, TokenError, type ClassifiedToken } from './spnego.ts';
import { countKerberos, countNtlm } from '../metrics/seamless.ts';

/**
 * One Squid Negotiate or NTLM child's handshake, as a state machine with no I/O (docs/seamless-design.md §2).
 * One connection = one Squid child = at most one handshake: Squid reserves the child from `YR` to the final
 * answer, so the machine holds at most one ntlm_auth lease. Lines in, reply lines out; the acceptors are
 * injected (acceptors.ts), so the shell (authd's socket per child) and the tests drive the same code.
 *
 * Reply policy, departing on purpose from style.md's "ERR = the user's fault": acceptor failures (skew,
 * replay, wrong SPN, expired, malformed) are BH, as Squid's negotiate_kerberos_auth answers, because only BH
 * reaches cache.log at the default debug level and the administrator needs the reason there. ERR is kept for
 * ntlm_auth's `NA` (it already squashes the reason) and for a principal of another realm or domain.
 */

export interface HandshakeOptions {
  scheme: StatefulScheme;
  /** The joined domain: user names of other realms or domains are refused (ERR). */
  names: JoinedDomain;
  kerberos: KerberosAcceptor;
  ntlm: NtlmBackend;
  clock: Clock;
  /**
   * An ntlm_auth lease is held at most this long from the `YR` that took it (a real client's NTLM handshake
   * takes milliseconds: type-1, the challenge, type-3); then it is released and a late `KK` answered BH, so a
   * client that sends type-1 and goes silent cannot keep a process from others.
   */
  leaseMaxMs: number;
  /**
   * Told of each handshake that starts NTLM (raw, or inside SPNEGO in the Negotiate scheme) with the client's
   * address, when Squid sends it (`key_extras "%>a"`): such clients could not get a Kerberos ticket, mostly
   * because they name the proxy by its IP address. Must be cheap and must not throw (it is on the request path).
   */
  onNtlm?: (client: NtlmClient) => void;
}

/** A handshake that carried NTLM: for the doctor's list of clients that fall back from Kerberos. */
export interface NtlmClient {
  scheme: StatefulScheme;
  /** The client's IP address from the line's first extra; undefined when Squid sent none (or not an address). */
  address: string | undefined;
}

export interface Handshake {
  /** Answer one request line (LF removed) with one reply line (LF included). Never rejects. */
  handle(line: string): Promise<string>;
  /**
   * When the lease held now must be given back (clock ms), or undefined when none is held: the shell sets a
   * timer for it, since a child Squid keeps reserved for a silent client sends no further line.
   */
  leaseDeadline(): number | undefined;
  /** Release the lease if it is past its deadline (leaseMaxMs from its YR). Resolves true if released. */
  releaseIfExpired(): Promise<boolean>;
  /** The connection closed: release the lease (after a step in flight settles); later lines get BH. */
  close(): Promise<void>;
}

interface OpenLease {
  kind: NtlmLeaseKind;
  lease: NtlmLease;
  /** When the YR took it (clock ms). */
  since: number;
}

export function createHandshake(options: HandshakeOptions): Handshake {
  const { scheme, names, kerberos, ntlm, clock, leaseMaxMs } = options;
  if (scheme !== 'negotiate' && scheme !== 'ntlm') {
    throw new InvalidInputError('scheme', `${JSON.stringify(scheme)} is not one of "negotiate", "ntlm"`);
  }
  if (!Number.isSafeInteger(leaseMaxMs) || leaseMaxMs <= 0) {
    throw new InvalidInputError('leaseMaxMs', `${String(leaseMaxMs)} is not a positive whole number of ms`);
  }

  let open: OpenLease | undefined;
  /** Set when the last lease was released at its deadline, so that a late KK says so. */
  let expiredAfterMs: number | undefined;
  let closed = false;
  // Lines are answered one at a time in order (runHelper hands them over as they arrive): a handshake's
  // state is only ever touched by one step.
  let queue: Promise<unknown> = Promise.resolve();
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const result = queue.then(work);
    queue = result.catch(() => undefined);
    return result;
  };

  const release = () => {
    const held = open;
    open = undefined;
    if (held === undefined) return;
    try {
      held.lease.release();
    } catch {
      // The pool's bookkeeping failing must not take the handshake down; the pool reaps its own processes.
    }
  };

  const expireIfLate = (): boolean => {
    if (open === undefined) return false;
    const held = clock.now() - open.since;
    if (held < leaseMaxMs) return false;
    release();
    expiredAfterMs = held;
    return true;
  };

  /** Format a reply; a final one ends the handshake. A reply built from a bad acceptor token becomes BH. */
  const reply = (answer: StatefulReply): string => {
    let text: string;
    try {
      text = formatStatefulReply(scheme, answer);
    } catch (error) {
      release();
      return bh(`the acceptor's reply could not be sent: ${messageOf(error)}`);
    }
    if (answer.result !== 'TT') release();
    return text;
  };
  const bh = (message: string) => formatStatefulReply(scheme, { result: 'BH', message });

  /** OK with the user name normalised; a foreign realm or domain → ERR, a name that is no user → BH. */
  const authenticated = (mech: 'kerberos' | 'ntlm', principal: string, token: string | undefined): string => {
    const count = mech === 'kerberos' ? countKerberos : countNtlm;
    let user: string;
    try {
      user = userNameOf(principal, names);
    } catch (error) {
      if (error instanceof PrincipalError && error.code !== 'INVALID_NAME') {
        count('FOREIGN_NAME');
        return reply({ result: 'ERR', message: error.message });
      }
      count('INVALID_NAME');
      return reply({ result: 'BH', message: messageOf(error) });
    }
    count('OK');
    return reply({ result: 'OK', user, ...(token !== undefined && { token }) });
  };

  const startKerberos = async (token: string): Promise<string> => {
    let accepted: KerberosAcceptance;
    try {
      accepted = await kerberos.accept(token);
    } catch (error) {
      if (error instanceof KerberosRejectError) {
        countKerberos(error.code);
        return reply({ result: 'BH', message: `Kerberos token refused (${error.code}): ${error.message}` });
      }
      countKerberos('ACCEPTOR_FAILED');
      return reply({ result: 'BH', message: `the Kerberos acceptor failed: ${messageOf(error)}` });
    }
    if (closed) return bh('the connection closed during the handshake');
    const response =
      accepted.response === undefined || accepted.response === '' ? undefined : accepted.response;
    return authenticated('kerberos', accepted.user, response);
  };

  /** One ntlm_auth step on the open lease, its reply turned into Squid's. */
  const stepNtlm = async (held: OpenLease, line: string): Promise<string> => {
    let answer: string;
    try {
      answer = await held.lease.step(line);
    } catch (error) {
      countNtlm('HELPER_FAILED');
      return reply({ result: 'BH', message: `ntlm_auth failed: ${messageOf(error)}` });
    }
    if (closed) {
      release();
      return bh('the connection closed during the handshake');
    }
    const parsed = parseNtlmAuthReply(held.kind, answer);
    switch (parsed.result) {
      case 'TT':
        return reply({ result: 'TT', token: parsed.token });
      case 'AF':
        return authenticated('ntlm', parsed.user, scheme === 'negotiate' ? parsed.token : undefined);
      case 'NA':
        countNtlm('REFUSED');
        return reply({ result: 'ERR', message: parsed.reason || 'NTLM authentication refused' });
      case 'BH':
        countNtlm('HELPER_BH');
        return reply({ result: 'BH', message: `ntlm_auth: ${parsed.reason || 'broken helper'}` });
      case 'invalid':
        countNtlm('INVALID_REPLY');
        return reply({ result: 'BH', message: parsed.message });
    }
  };

  const startNtlm = async (kind: NtlmLeaseKind, token: string, extras: string[]): Promise<string> => {
    try {
      options.onNtlm?.({ scheme, address: addressOf(extras) });
    } catch {
      // Bookkeeping for the doctor never costs a client its sign-in.
    }
    let lease: NtlmLease;
    try {
      lease = await ntlm.lease(kind);
    } catch (error) {
      countNtlm('POOL_BUSY');
      return reply({ result: 'BH', message: `no ntlm_auth (${kind}) available: ${messageOf(error)}` });
    }
    // Held before anything else can throw, so that the error boundary releases it.
    open = { kind, lease, since: Number.NaN };
    open.since = clock.now();
    if (closed) {
      release();
      return bh('the connection closed during the handshake');
    }
    return stepNtlm(open, `YR ${token}`);
  };

  const classify = (token: string): ClassifiedToken | string => {
    try {
      return classifyNegotiateToken(token);
    } catch (error) {
      if (error instanceof TokenError) return `${error.message} (${error.code})`;
      throw error;
    }
  };

  const start = async (token: string, extras: string[]): Promise<string> => {
    const classified = classify(token);
    if (typeof classified === 'string') return reply({ result: 'BH', message: classified });
    if (scheme === 'ntlm' && classified.route !== 'ntlm-raw') {
      return reply({
        result: 'BH',
        message: `the NTLM scheme takes raw NTLMSSP messages only, not a ${classified.route} token`,
      });
    }
    switch (classified.route) {
      case 'kerberos':
        return startKerberos(token);
      case 'ntlm-raw':
        if (classified.messageType !== 1) {
          return reply({
            result: 'BH',
            message: `out of sequence: YR carries NTLM message type ${classified.messageType}, not NEGOTIATE (1)`,
          });
        }
        return startNtlm('ntlmssp', token, extras);
      case 'spnego-ntlm':
        return startNtlm('gss-spnego', token, extras);
      case 'continuation':
        return reply({
          result: 'BH',
          message: 'out of sequence: YR carries a SPNEGO continuation (negTokenResp), not a first token',
        });
    }
  };

  const proceed = async (held: OpenLease, token: string): Promise<string> => {
    const classified = classify(token);
    if (typeof classified === 'string') return reply({ result: 'BH', message: classified });
    if (held.kind === 'gss-spnego' && classified.route !== 'continuation') {
      return reply({
        result: 'BH',
        message: `out of sequence: KK in a SPNEGO handshake carries a ${classified.route} token, not a negTokenResp`,
      });
    }
    if (held.kind === 'ntlmssp') {
      if (classified.route !== 'ntlm-raw') {
        return reply({
          result: 'BH',
          message: `out of sequence: KK in an NTLM handshake carries a ${classified.route} token, not NTLMSSP`,
        });
      }
      if (classified.messageType !== 3) {
        return reply({
          result: 'BH',
          message: `out of sequence: KK carries NTLM message type ${classified.messageType}, not AUTHENTICATE (3)`,
        });
      }
    }
    return stepNtlm(held, `KK ${token}`);
  };

  const handle = async (line: string): Promise<string> => {
    if (closed) return bh('the connection is closed');
    expireIfLate();
    const parsed = parseStatefulRequest(line);
    if (!parsed.ok) return reply({ result: 'BH', message: parsed.message });
    const { command, token, extras } = parsed.request;
    if (command === 'YR') {
      // A new handshake: whatever the last one left is dropped (Squid reuses a child after any answer).
      release();
      expiredAfterMs = undefined;
      return start(token, extras);
    }
    if (open === undefined) {
      const why =
        expiredAfterMs === undefined
          ? 'with no handshake under way'
          : `after the handshake was dropped, ${expiredAfterMs} ms after its YR (the limit is ${leaseMaxMs} ms)`;
      expiredAfterMs = undefined;
      return reply({ result: 'BH', message: `out of sequence: KK ${why}` });
    }
    return proceed(open, token);
  };

  return {
    handle: (line) =>
      serially(async () => {
        try {
          return await handle(line);
        } catch (error) {
          // The error boundary: the machine answers, never throws.
          release();
          return bh(`internal error: ${messageOf(error)}`);
        }
      }),
    leaseDeadline: () => (open === undefined ? undefined : open.since + leaseMaxMs),
    releaseIfExpired: () => serially(() => Promise.resolve(expireIfLate())),
    close: () => {
      closed = true;
      return serially(() => {
        release();
        expiredAfterMs = undefined;
        return Promise.resolve();
      });
    },
  };
}

/** The client's address, Squid's `%>a` as the first extra (URL-escaped like every extra); else undefined. */
export function addressOf(extras: readonly string[]): string | undefined {
  const first = extras[0];
  if (first === undefined || first.length > 64) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(first);
  } catch {
    return undefined;
  }
  return isIP(decoded) === 0 ? undefined : decoded;
}

/** Anything can be thrown, undefined included: reading .message off it must not throw in turn. */
function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > MAX_REASON_CHARS ? `${text.slice(0, MAX_REASON_CHARS)}…` : text;
}
