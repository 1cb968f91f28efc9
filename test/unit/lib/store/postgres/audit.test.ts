import { describe, expect, it } from 'vitest';
import { usePgSite } from '../../../../harness/pg-site.ts';
import { describeAudit } from '../contract/audit.ts';
import { ip } from '../../../../support/session-keys.ts';
import { T0 } from '../contract/sessions.ts';

/** The audit trail on a real PostgreSQL: the contract, and what only this engine has. */
describe('the audit trail on PostgreSQL (a real PostgreSQL 15)', { timeout: 30_000 }, () => {
  const { open } = usePgSite();
  describeAudit(open);

  it('is not replicated: an audit write takes no change number and sends no notification', async () => {
    const site = await open({ now: T0 });
    const a = await site.box();
    const before = await site.sql`SELECT tab, last FROM changes ORDER BY tab`;
    await a.store.audit.record({ kind: 'admin.sign-in', actor: 'admin:root' });
    expect(await site.sql`SELECT tab, last FROM changes ORDER BY tab`).toEqual(before);
    // With a login, the login's one change number only.
    await a.store.sessions.start(
      { key: ip('10.0.0.5'), username: 'alice', source: 'api' },
      { kind: 'api.login', actor: 'api-key:wifi', user: 'alice', address: '10.0.0.5' },
    );
    expect(await site.sql`SELECT count(*)::int AS n FROM audit_events`).toEqual([{ n: 2 }]);
  });
});
