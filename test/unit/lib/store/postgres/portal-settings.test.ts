import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_PORTAL_SETTINGS } from '../../../../../lib/portal/settings.ts';
import { usePgSite } from '../../../../harness/pg-site.ts';
import { rejection, thrown } from '../../../../support/thrown.ts';
import { describePortalSettings } from '../contract/portal-settings.ts';

const T0 = Date.UTC(2026, 2, 10, 12);
const MINUTE = 60_000;
const directoryApplied = () => true;

describe('PgPortalSettings (a real PostgreSQL 15)', { timeout: 30_000 }, () => {
  const { pg, open } = usePgSite();
  describePortalSettings(open);

  const counters = async (sql: Awaited<ReturnType<typeof open>>['sql']) =>
    Object.fromEntries(
      (await sql<{ tab: string; last: number }[]>`SELECT tab, last FROM changes`).map((r) => [r.tab, r.last]),
    );

  it('a save on box A is in force on A at once and on B by notification: settings and version', async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box({ directoryApplied }), await site.box()];
    const saved = await a.store.portal.update({ mode: 'agreement', policyText: 'Be kind.' });
    expect(a.store.portal.load().mode).toBe('agreement');
    expect(a.store.portal.version()).toBe(saved.ok && saved.version);
    await vi.waitFor(() => expect(b.store.portal.version()).toBe(a.store.portal.version()), {
      timeout: 1000,
      interval: 5,
    });
    expect(b.store.portal.load()).toEqual(a.store.portal.load());
  });

  it('the row and every session a save changes are stamped: settings first, then sessions', async () => {
    const site = await open({ now: T0 });
    const box = await site.box({ directoryApplied });
    const alice = await box.store.sessions.start({
      key: { kind: 'ip', value: '10.0.0.1' },
      username: 'alice',
      source: 'portal',
      idleTimeoutMs: 60 * MINUTE,
    });
    const bob = await box.store.sessions.start({
      key: { kind: 'ip', value: '10.0.0.2' },
      username: 'bob',
      source: 'api',
    });
    await box.store.portal.update({ mode: 'authentication', idleTimeoutMinutes: 15 });
    expect(await counters(site.sql)).toMatchObject({ settings: 1, sessions: 3 });
    expect(await site.sql`SELECT name, change FROM settings`).toEqual([{ name: 'portal', change: 1 }]);
    expect(await site.sql`SELECT id, idle_timeout, change FROM sessions ORDER BY id`).toEqual([
      { id: alice.id, idle_timeout: 15 * MINUTE, change: 3 },
      { id: bob.id, idle_timeout: null, change: 2 },
    ]);
  });

  it('a save with problems spends no change number: no box is woken for nothing', async () => {
    const site = await open({ now: T0 });
    const box = await site.box({ directoryApplied });
    const result = await box.store.portal.save({ ...DEFAULT_PORTAL_SETTINGS, idleTimeoutMinutes: 0 });
    expect(result.ok).toBe(false);
    expect(await counters(site.sql)).toMatchObject({ settings: 0, sessions: 0 });
  });

  it('stored settings that are no longer valid are CONFIG_INVALID on load, not the defaults; a save mends them', async () => {
    const site = await open({ now: T0 });
    await site.sql`INSERT INTO settings (name, value, updated_at, change) VALUES ('portal', '{"mode":"bogus"}', 1, 0)`;
    const box = await site.box({ directoryApplied });
    const error = thrown(() => box.store.portal.load());
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('mode: must be one of');
    const mended = await box.store.portal.save({ ...DEFAULT_PORTAL_SETTINGS, mode: 'authentication' });
    expect(mended).toMatchObject({ ok: true, previous: DEFAULT_PORTAL_SETTINGS, changed: ['mode'] });
    expect(box.store.portal.load().mode).toBe('authentication');
  });

  it('what load() returns is the caller’s: changing it changes nothing held', async () => {
    const site = await open({ now: T0 });
    const { portal } = (await site.box({ directoryApplied })).store;
    await portal.update({ mode: 'registration', walledGarden: { hosts: ['example.com'] } });
    portal.load().walledGarden.hosts.push('evil.example');
    expect(portal.load().walledGarden.hosts).toEqual(['example.com']);
  });

  it('PostgreSQL away: the settings in force still answer; a save is STORE_UNAVAILABLE', async () => {
    const site = await open({ now: T0 });
    const { portal } = (await site.box({ directoryApplied })).store;
    await portal.update({ mode: 'agreement', policyText: 'Be kind.' });
    await pg.server.stop();
    try {
      expect(portal.load().mode).toBe('agreement');
      expect(await rejection(portal.update({ mode: 'off' }))).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(portal.load().mode).toBe('agreement');
    } finally {
      await pg.server.start();
    }
  });
});
