import type { ExplainFacts } from '../../lib/explain/facts.ts';
import type { Session } from '../../lib/store/session.ts';

/** Facts for lib/explain's tests (the pure reasoning and the screen that shows it), at one fixed time. */

export const NOW = Date.UTC(2026, 5, 1, 9);
export const MIN = 60_000;

/** An API session of alice on 10.0.0.5: started 30 min ago, seen a minute ago, 10 min idle limit, 1 h left. */
export const session = (over: Partial<Session> = {}): Session => ({
  id: 1,
  key: { kind: 'ip', value: '10.0.0.5' },
  username: 'alice',
  source: 'api',
  createdAt: NOW - 30 * MIN,
  lastSeen: NOW - MIN,
  expiresAt: NOW + 60 * MIN,
  idleTimeoutMs: 10 * MIN,
  ...over,
});

/** An identified client by default: a session, authd OK, no groups, no portal, no seamless. */
export function facts(over: Partial<ExplainFacts> = {}): ExplainFacts {
  return {
    ip: '10.0.0.5',
    now: NOW,
    baseUrl: 'https://proxy.example.test/',
    mac: { kind: 'none', reason: 'not-on-link', message: '10.0.0.5 is behind a router' },
    session: session(),
    registration: undefined,
    portal: { mode: 'off', registrationClearDate: null },
    authd: {
      kind: 'answered',
      asked: '10.0.0.5 -',
      result: 'OK',
      user: 'alice',
      message: undefined,
      ms: 0.4,
      socket: '/var/lib/doorman/run/session.sock',
    },
    groups: { allow: [], lookup: { kind: 'not-asked' } },
    squid: { ttl: 5, negativeTtl: 0, groupsTtl: 60, groupsNegativeTtl: 60 },
    icap: { kind: 'off' },
    seamless: { kind: 'not-enabled' },
    ...over,
  };
}

/** No session, and authd answers ERR. */
export const notIdentified: Partial<ExplainFacts> = {
  session: undefined,
  authd: {
    kind: 'answered',
    asked: '10.0.0.5 -',
    result: 'ERR',
    user: undefined,
    message: undefined,
    ms: 0.3,
    socket: '/var/lib/doorman/run/session.sock',
  },
};
