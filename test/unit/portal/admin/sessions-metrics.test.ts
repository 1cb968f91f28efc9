import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { useMetricsRegistry } from '../../../../lib/metrics/registry.ts';
import { csrfOf, useAdminPortal } from './harness.ts';

const { start } = useAdminPortal();

describe('the Sessions screen, counted', () => {
  it('counts the sessions an administrator ends, one or all of a user (doorman_sessions_ended_by_admin_total)', async () => {
    const registry = useMetricsRegistry(new Registry());
    const p = await start();
    for (const [value, username] of [
      ['10.0.0.5', 'alice'],
      ['10.0.0.6', 'alice'],
      ['10.0.0.7', 'bob'],
    ] as const)
      p.sessions.start({ key: { kind: 'ip', value }, username, source: 'api' });
    const b = p.browser();
    await b.signIn();
    const csrf = csrfOf(await b.get('/admin/sessions'));
    expect((await b.post('/admin/sessions/end', { csrf, key: 'ip:10.0.0.7' })).status).toBe(200);
    expect((await b.post('/admin/sessions/end', { csrf, key: 'ip:10.0.0.7' })).status).toBe(404);
    expect((await b.post('/admin/sessions/end-user', { csrf, username: 'alice' })).status).toBe(200);
    expect(await registry.metrics()).toContain('doorman_sessions_ended_by_admin_total 3\n');
  });
});
