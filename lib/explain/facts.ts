import type { SeamlessQueryAnswer } from '../helper-protocol/seamless-query.ts';
import type { MacLookupReason } from '../net/mac-lookup.ts';
import type { PortalMode } from '../portal/settings.ts';
import type { Session } from '../store/session.ts';

/**
 * What `doorman explain` found about one client, gathered by a shell (cli/explain-gather.ts) from the store,
 * authd, the directory, the neighbour table and the ICAP decision, and judged by explain.ts with no I/O at
 * all. Every fact says what it is or why it could not be had; nothing here is a guess.
 */
export interface ExplainFacts {
  /** The client address, normaliseIp form. */
  ip: string;
  /** Clock ms: when the facts were gathered (every "now" in the explanation). */
  now: number;
  /** The base URL of Doorman's site (config baseUrl, ending in "/"), for links in the advice. */
  baseUrl: string;
  mac: MacFact;
  /** The store's session on the IP (live by its hard expiry; idleness is judged here), if any. */
  session: Session | undefined;
  /** The store's session on the MAC (a Device Registration), if a MAC is known and there is one. */
  registration: Session | undefined;
  portal: { mode: PortalMode; registrationClearDate: string | null };
  authd: AuthdFact;
  groups: GroupsFact;
  squid: SquidTtls;
  icap: IcapFact;
  seamless: SeamlessFact;
}

export type MacFact =
  | { kind: 'given'; mac: string }
  | { kind: 'found'; mac: string; source: 'squid' | 'neighbour-table' }
  | { kind: 'none'; reason: MacLookupReason; message: string };

/** authd's answer to the session lookup Squid would send (`%SRC %>eui`), or why there was none. */
export type AuthdFact =
  | {
      kind: 'answered';
      /** The request line sent, without its channel-ID and LF (`10.0.0.5 3a:48:7a:63:96:26`). */
      asked: string;
      result: 'OK' | 'ERR' | 'BH';
      user: string | undefined;
      message: string | undefined;
      ms: number;
      /** The socket asked (<stateDir>/run/session.sock). */
      socket: string;
    }
  | {
      kind: 'unreachable';
      reason: 'no-socket' | 'refused' | 'timeout' | 'closed';
      detail: string;
      socket: string;
    };

export type GroupsFact = {
  /** squid.groups.allow. */
  allow: readonly string[];
  lookup: GroupLookup;
};

export type GroupLookup =
  /** No user to look up (nobody is identified), or no groups to check against. */
  | { kind: 'not-asked' }
  | { kind: 'groups'; user: string; groups: readonly string[]; member: boolean }
  | { kind: 'unknown-user'; user: string }
  | { kind: 'no-directory'; user: string }
  | { kind: 'failed'; user: string; detail: string };

/** Squid's caching of the helpers' answers, seconds (config squid.ttl, negativeTtl, squid.groups.*). */
export interface SquidTtls {
  ttl: number;
  negativeTtl: number;
  groupsTtl: number;
  groupsNegativeTtl: number;
}

/**
 * What icap-server/decision.ts decides for a page load (GET http://example.com/, Accept text/html) from the
 * client.
 */
export type IcapFact =
  | { kind: 'off' }
  | { kind: 'decided'; status: 'no-change' | 302 | 511 | number; location: string | undefined }
  | { kind: 'failed'; detail: string };

export type SeamlessFact =
  | { kind: 'not-enabled' }
  /** Whether it is enabled could not be read (this box's session DB). */
  | { kind: 'unknown'; detail: string }
  | { kind: 'enabled'; realm: string; last: SeamlessQueryAnswer | { kind: 'unreachable'; detail: string } };
