import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { auditRecord, type AuditRecord } from '../../../../lib/audit/event.ts';
import { expiryEvents } from '../../../../lib/audit/expiry.ts';
import { useMetricsRegistry } from '../../../../lib/metrics/registry.ts';
import { countExpiries } from '../../../../lib/metrics/sessions.ts';
import type { Session } from '../../../../lib/store/session.ts';

const T0 = Date.UTC(2026, 0, 1);
const session = (over: Partial<Session>): Session => ({
  id: 1,
  key: { kind: 'ip', value: '10.0.0.5' },
  username: 'alice',
  source: 'api',
  createdAt: T0,
  lastSeen: T0,
  expiresAt: undefined,
  idleTimeoutMs: undefined,
  ...over,
});
const committed = (sessions: Session[]): AuditRecord[] =>
  expiryEvents(sessions).map((e) => auditRecord(e, T0, 'a'));

describe('doorman_sessions_expired_total', () => {
  it('counts the committed expiries by source and reason, and nothing else', async () => {
    const registry = useMetricsRegistry(new Registry());
    countExpiries(
      committed([
        session({ idleTimeoutMs: 60_000 }),
        session({ idleTimeoutMs: 60_000, source: 'portal' }),
        session({ expiresAt: T0 + 1000, source: 'portal' }),
        session({
          key: { kind: 'mac', value: '02:00:00:00:00:01' },
          source: 'registration',
          expiresAt: T0 + 5,
        }),
      ]),
    );
    countExpiries([
      auditRecord({ kind: 'api.login', actor: 'api-key:k', user: 'bob' }, T0, 'a'),
      auditRecord(
        { kind: 'session.expired', actor: 'system', detail: { source: 'x', reason: 'idle' } },
        T0,
        'a',
      ),
    ]);
    const text = await registry.metrics();
    expect(text).toContain('doorman_sessions_expired_total{source="api",reason="idle"} 1');
    expect(text).toContain('doorman_sessions_expired_total{source="portal",reason="idle"} 1');
    expect(text).toContain('doorman_sessions_expired_total{source="portal",reason="hard"} 1');
    expect(text).toContain('doorman_sessions_expired_total{source="registration",reason="date"} 1');
    expect(text).toContain('doorman_sessions_expired_total{source="agreement",reason="hard"} 0');
    expect(text).not.toContain('source="x"');
  });
});
