import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useMetricsRegistry } from '../../../../lib/metrics/registry.ts';
import { sessionMetrics } from '../../../../lib/metrics/sessions.ts';
import { hiddenOf, ON_LINK_MAC, PASSWORD, startSplash, type Splash } from './harness.ts';

/**
 * A splash sign-in or registration that takes a key (the address, the MAC) from another user's live session
 * says so as the login API does: the replaced user in its event's detail, and doorman_session_ends_total
 * {reason="replaced"} by the replaced session's source. The same user again is a renewal: neither.
 */
let splash: Splash;
let registry: Registry;
beforeEach(() => {
  registry = useMetricsRegistry(new Registry());
  sessionMetrics(() => undefined);
});
afterEach(async () => {
  await splash.close();
});

const replacedCount = async (source: string) => {
  const series = `doorman_session_ends_total{source="${source}",reason="replaced"}`;
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return Number(line?.slice(series.length + 1));
};
const events = () =>
  (
    splash.db.prepare('SELECT kind, username, detail FROM audit_events ORDER BY id').all() as Array<{
      kind: string;
      username: string;
      detail: string;
    }>
  ).map((e) => ({ kind: e.kind, user: e.username, detail: JSON.parse(e.detail) as unknown }));

/**
 * The splash form as a client at `from` got it before anyone was identified there (an identified client is
 * shown who it is, not the form), posted as `username` each time.
 */
async function formAt(from: string) {
  const browser = splash.browser(from);
  const page = await browser.get('/portal/');
  const hidden = { csrf: hiddenOf(page, 'csrf'), url: hiddenOf(page, 'url'), sig: hiddenOf(page, 'sig') };
  return async (username: string) => {
    const reply = await browser.post('/portal/', { ...hidden, username, password: PASSWORD });
    expect(reply.status, reply.text).toBe(303);
  };
}

describe('a splash sign-in replacing another user', () => {
  it("on an address with another user's API session: the event names that user, and it is counted", async () => {
    splash = await startSplash();
    await splash.set({ mode: 'authentication' });
    const signIn = await formAt('127.0.0.2');
    await splash.sessions.start({ key: { kind: 'ip', value: '127.0.0.2' }, username: 'bob', source: 'api' });
    await signIn('alice');
    expect(events()).toEqual([
      { kind: 'portal.sign-in', user: 'alice', detail: { replaced: 'bob', source: 'api' } },
    ]);
    expect(await replacedCount('api')).toBe(1);

    // alice again on the same address: a renewal
    await signIn('alice');
    expect(events()[1]).toEqual({ kind: 'portal.sign-in', user: 'alice', detail: {} });
    expect(await replacedCount('portal')).toBe(0);
  });

  it('a device registered to another user: the registration names that user', async () => {
    splash = await startSplash();
    await splash.set({ mode: 'registration', registrationClearDate: '2026-09-01' });
    splash.macs.set('127.0.0.3', ON_LINK_MAC);
    const register = await formAt('127.0.0.3');
    await register('bob');
    await register('alice');
    expect(events()).toEqual([
      { kind: 'portal.registration', user: 'bob', detail: { mac: ON_LINK_MAC } },
      {
        kind: 'portal.registration',
        user: 'alice',
        detail: { mac: ON_LINK_MAC, replaced: 'bob', source: 'registration' },
      },
    ]);
    expect(await replacedCount('registration')).toBe(1);
  });
});
