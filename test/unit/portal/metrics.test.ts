import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useMetricsRegistry } from '../../../lib/metrics/registry.ts';
import { sessionMetrics } from '../../../lib/metrics/sessions.ts';
import { webMetrics } from '../../../lib/metrics/web.ts';
import { startPortal, type Portal } from './harness.ts';

/** The login API's counts (lib/metrics/sessions.ts, web.ts), on the app as serve builds it. */
let registry: Registry;
let portal: Portal;
beforeEach(async () => {
  registry = useMetricsRegistry(new Registry());
  portal = await startPortal({ api: { maxKeyFailures: 2 } });
  sessionMetrics((source) => portal.sessions.countBySource([source]));
  webMetrics();
});
afterEach(async () => {
  await portal.close();
});

const sample = async (series: string) => {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('login API metrics', () => {
  it("counts logins, a login replacing another user's session (not a renewal), and a logout, by source; live sessions by source", async () => {
    const login = (username: string, from: string) =>
      portal.post('/api/login/', { api_key: portal.key, username }, from);
    expect((await login('alice', '127.0.0.2')).status).toBe(200);
    expect((await login('bob', '127.0.0.3')).status).toBe(200);
    expect((await login('carol', '127.0.0.2')).status).toBe(200);
    // carol again: a renewal, not a replacement
    expect((await login('carol', '127.0.0.2')).status).toBe(200);
    expect((await portal.post('/api/logout/', { api_key: portal.key }, '127.0.0.3')).status).toBe(200);
    expect((await portal.post('/api/logout/', { api_key: portal.key }, '127.0.0.4')).status).toBe(200);
    expect(await sample('doorman_logins_total{source="api"}')).toBe(4);
    expect(await sample('doorman_logins_total{source="portal"}')).toBe(0);
    expect(await sample('doorman_session_ends_total{source="api",reason="replaced"}')).toBe(1);
    expect(await sample('doorman_session_ends_total{source="api",reason="logout"}')).toBe(1);
    expect(await sample('doorman_sessions_live{source="api"}')).toBe(1);
    expect(await registry.metrics()).not.toMatch(/alice|carol|127\.0\.0\.2/);
  });

  it('counts wrong keys, and the 429s among them', async () => {
    const wrong = () => portal.post('/api/login/', { api_key: 'dm.wrong', username: 'x' }, '127.0.0.5');
    expect((await wrong()).status).toBe(401);
    expect((await wrong()).status).toBe(401);
    expect((await wrong()).status).toBe(429);
    expect(await sample('doorman_api_key_failures_total')).toBe(3);
    expect(await sample('doorman_api_rate_limited_total')).toBe(1);
    expect(await sample('doorman_logins_total{source="api"}')).toBe(0);
  });
});
