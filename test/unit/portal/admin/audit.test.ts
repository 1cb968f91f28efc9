import { afterEach, describe, expect, it } from 'vitest';
import { localDate } from '../../../../lib/portal/settings.ts';
import { csrfOf, SETTINGS, startAdminPortal, type AdminPortal } from './harness.ts';

let portal: AdminPortal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

const DAY = 86_400_000;
const eventsOf = async (p: AdminPortal) => (await p.audit.list({ limit: 50 })).events.reverse();
/** The rows of the Audit page's table: each row's cells as text. */
const rowsOf = (page: string) =>
  [...page.matchAll(/<tr>\s*<td data-label="Time">([\s\S]*?)<\/tr>/g)].map((m) =>
    [...`<td data-label="Time">${m[1]}`.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) =>
      (c[1] ?? '')
        .replace(/<[^<>]*>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim(),
    ),
  );

describe('the admin screens record their actions', () => {
  it('sign-in failure and success, a settings save with what changed, Clear current sessions', async () => {
    const p = (portal = await startAdminPortal());
    p.directory.stored = { settings: SETTINGS, password: 'bind-password' };
    const b = p.browser('127.0.0.5');
    expect((await b.signIn('root', 'wrong-password-hunter2')).status).toBe(403);
    expect((await b.signIn()).status).toBe(303);
    const csrf = csrfOf(await b.get('/admin/portal'));
    const saved = await b.post('/admin/portal', {
      csrf,
      mode: 'authentication',
      idleTimeoutMinutes: '45',
      hardTimeoutMinutes: '',
      registrationClearDate: localDate(p.clock.now() + 30 * DAY),
      policyText: '',
      walledHosts: '',
      walledCidrs: '',
    });
    expect(saved.status).toBe(200);
    expect((await b.post('/admin/portal/clear-sessions', { csrf })).status).toBe(200);
    const events = await eventsOf(p);
    expect(events.map((e) => [e.kind, e.actor, e.address, e.box])).toEqual([
      ['admin.sign-in-failed', 'admin:-', '127.0.0.5', 'test-box'],
      ['admin.sign-in', 'admin:root', '127.0.0.5', 'test-box'],
      ['settings.saved', 'admin:root', '127.0.0.5', 'test-box'],
      ['sessions.cleared', 'admin:root', '127.0.0.5', 'test-box'],
    ]);
    expect(events[0]?.detail).toEqual({ name: 'root' });
    expect(events[2]?.detail).toMatchObject({
      settings: 'portal',
      changes: { mode: { from: 'off', to: 'authentication' }, idleTimeoutMinutes: { to: 45 } },
    });
    // Never the password typed.
    expect(JSON.stringify(events)).not.toContain('hunter2');
    expect(JSON.stringify(p.shipped)).not.toContain('hunter2');
    expect(p.shipped.map((r) => r.kind)).toEqual(events.map((e) => e.kind));
  });
  it('a failed sign-in keeps the name typed only when it is an administrator’s (else it may be a password)', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser('127.0.0.5');
    // The password typed into the name field, and anything into the password field.
    expect((await b.signIn('Tr0ub4dor&3-in-the-wrong-field', 'x')).status).toBe(403);
    expect((await b.signIn('root', 'wrong')).status).toBe(403);
    const failed = (await eventsOf(p)).filter((e) => e.kind === 'admin.sign-in-failed');
    expect(failed.map((e) => [e.actor, e.address, e.detail])).toEqual([
      ['admin:-', '127.0.0.5', { name: null }],
      ['admin:-', '127.0.0.5', { name: 'root' }],
    ]);
    expect(JSON.stringify(p.shipped)).not.toContain('Tr0ub4dor');
  });

  it('a Device Group added, changed and removed: settings.saved with the group and what changed', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser('127.0.0.5');
    expect((await b.signIn()).status).toBe(303);
    const csrf = csrfOf(await b.get('/admin/portal'));
    const form = { csrf, name: 'Guests', cidrs: '10.20.0.0/16', active: 'on' };
    expect((await b.post('/admin/portal/groups', form)).status).toBe(200);
    const [group] = p.deviceGroups.list();
    if (group === undefined) throw new Error('not added');
    const edited = { csrf, name: 'Visitors', cidrs: '10.20.0.0/16' };
    expect((await b.post(`/admin/portal/groups/${group.id}`, edited)).status).toBe(200);
    expect((await b.post(`/admin/portal/groups/${group.id}/remove`, { csrf })).status).toBe(200);
    const saved = (await eventsOf(p)).filter((e) => e.kind === 'settings.saved');
    expect(saved.map((e) => [e.actor, e.address, e.detail])).toEqual([
      [
        'admin:root',
        '127.0.0.5',
        {
          settings: 'device-group',
          action: 'added',
          group: 'Guests',
          changes: {
            name: { from: null, to: 'Guests' },
            cidrs: { from: null, to: '10.20.0.0/16' },
            active: { from: null, to: true },
          },
        },
      ],
      [
        'admin:root',
        '127.0.0.5',
        {
          settings: 'device-group',
          action: 'changed',
          group: 'Visitors',
          changes: { name: { from: 'Guests', to: 'Visitors' }, active: { from: true, to: false } },
        },
      ],
      [
        'admin:root',
        '127.0.0.5',
        {
          settings: 'device-group',
          action: 'removed',
          group: 'Visitors',
          changes: {
            name: { from: 'Visitors', to: null },
            cidrs: { from: '10.20.0.0/16', to: null },
            active: { from: false, to: null },
          },
        },
      ],
    ]);
  });
});

describe('the Audit screen', () => {
  const withEvents = async () => {
    const p = (portal = await startAdminPortal());
    // Signed in first: that is the oldest event (00:00).
    const b = p.browser();
    await b.signIn();
    for (let i = 0; i < 120; i++) {
      p.clock.advance(60_000);
      await p.audit.record({
        kind: i % 2 === 0 ? 'api.login' : 'api.logout',
        actor: 'api-key:wifi',
        user: `user${i % 3}`,
        address: `10.0.0.${i % 4}`,
      });
    }
    return { p, b };
  };

  it('is for signed-in admins only, and is in the navigation of every screen', async () => {
    const p = (portal = await startAdminPortal());
    const visitor = await p.browser().get('/admin/audit');
    expect(visitor.status).toBe(303);
    expect(visitor.headers.location).toBe('/admin/sign-in');
    const b = p.browser();
    await b.signIn();
    expect((await b.get('/admin/portal')).text).toContain('<a href="/admin/audit"');
    const page = await b.get('/admin/audit');
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<a href="\/admin\/audit"\s+aria-current="page"/);
  });

  it('shows the newest first, 50 a page, older pages by link (the cursor), each event once', async () => {
    const { b } = await withEvents();
    const seen: string[][] = [];
    let page = await b.get('/admin/audit');
    for (let pages = 0; ; pages++) {
      expect(page.status).toBe(200);
      seen.push(...rowsOf(page.text));
      const older = /<a href="([^"]+)" rel="next">Older events<\/a>/.exec(page.text)?.[1];
      if (older === undefined) break;
      page = await b.get(older.replaceAll('&amp;', '&'));
      expect(page.text).toContain('Newest events');
    }
    expect(seen).toHaveLength(121);
    expect(seen.at(-1)?.slice(0, 2)).toEqual(['2026-01-01 00:00:00', 'admin.sign-in']);
    const times = seen.map((row) => row[0] ?? '');
    expect([...times].sort().reverse()).toEqual(times);
    expect(new Set(times).size).toBe(121);
    expect(seen[0]).toEqual([
      expect.stringMatching(/^2026-01-01 02:00:00$/),
      'api.logout',
      'user2',
      'api-key:wifi',
      '10.0.0.3',
      'test-box',
      '',
    ]);
  });

  it('filters by user, address, kind and time, and keeps the filters on the older pages', async () => {
    const { b } = await withEvents();
    const page = await b.get('/admin/audit?user=user1&kind=api.login&address=10.0.0.0');
    const rows = rowsOf(page.text);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows)
      expect(row.slice(1, 5)).toEqual(['api.login', 'user1', 'api-key:wifi', '10.0.0.0']);
    expect(page.text).toContain('value="user1"');
    expect(page.text).toMatch(/<option value="api.login"\s+selected/);
    const ranged = rowsOf((await b.get('/admin/audit?from=2026-01-01T01:00&to=2026-01-01T01:10')).text);
    expect(ranged.map((r) => r[0])).toEqual(
      Array.from({ length: 10 }, (_, i) => `2026-01-01 01:${String(9 - i).padStart(2, '0')}:00`),
    );
    const all = await b.get('/admin/audit?kind=api.logout');
    const older = /<a href="([^"]+)" rel="next">/.exec(all.text)?.[1] ?? '';
    expect(older).toContain('kind=api.logout');
    expect(older).toContain('before=');
  });

  it('a bad filter is a 400 naming the field, with no events; every field has a label', async () => {
    const { b } = await withEvents();
    const page = await b.get('/admin/audit?address=not-an-ip&from=2026-02-31&kind=nonsense&before=x');
    expect(page.status).toBe(400);
    expect(rowsOf(page.text)).toEqual([]);
    for (const [field, problem] of [
      ['address', 'not an IP address'],
      ['from', 'not a time'],
      ['kind', 'no such kind of event'],
    ] as const) {
      expect(page.text).toContain(`<label for="a-${field}">`);
      expect(page.text).toMatch(new RegExp(`id="a-${field}-problem">${problem}`));
    }
    expect(page.text).toContain('start again from the newest');
    // Typed back, escaped.
    const xss = await b.get('/admin/audit?user=%3Cscript%3E');
    expect(xss.text).not.toContain('<script>');
    expect(xss.text).toContain('&lt;script&gt;');
  });

  it('shows a redacted change as redacted, and every recorded value escaped', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    await b.signIn();
    await p.audit.record({
      kind: 'settings.saved',
      actor: 'admin:root',
      user: '<img src=x>\n"admin"',
      detail: {
        settings: 'directory',
        changes: { host: { from: 'a', to: '<b>' }, bindPassword: { from: 'x', to: 'y' } },
      },
    });
    const page = await b.get('/admin/audit?kind=settings.saved');
    const [row] = rowsOf(page.text);
    expect(row?.[2]).toBe('&lt;img src=x&gt; &quot;admin&quot;');
    expect(row?.[6]).toBe(
      'settings: directory host: &quot;a&quot; → &quot;&lt;b&gt;&quot; bindPassword: [redacted]',
    );
  });
});

describe('the Sessions, API keys and Admins screens record their actions', () => {
  it('end a session, end all of a user, make and revoke a key, add, reset and remove an admin', async () => {
    const p = (portal = await startAdminPortal());
    await p.sessions.start({ key: { kind: 'ip', value: '10.0.0.5' }, username: 'alice', source: 'api' });
    await p.sessions.start({ key: { kind: 'ip', value: '10.0.0.6' }, username: 'bob', source: 'api' });
    const b = p.browser('127.0.0.5');
    await b.signIn();
    const csrf = csrfOf(await b.get('/admin/sessions'));
    expect((await b.post('/admin/sessions/end', { csrf, key: 'ip:10.0.0.5' })).status).toBe(200);
    expect((await b.post('/admin/sessions/end-user', { csrf, username: 'bob' })).status).toBe(200);
    const made = await b.post('/admin/api-keys', { csrf, name: 'door' });
    expect(made.status).toBe(200);
    expect((await b.post('/admin/api-keys/revoke', { csrf, name: 'door' })).status).toBe(200);
    const pw = { password: 'Carol pw 1-hunter7', confirm: 'Carol pw 1-hunter7' };
    expect((await b.post('/admin/admins', { csrf, user: 'carol', ...pw })).status).toBe(200);
    expect((await b.post('/admin/admins/password', { csrf, user: 'carol', ...pw })).status).toBe(200);
    expect((await b.post('/admin/admins/remove', { csrf, user: 'carol' })).status).toBe(200);
    const events = (await eventsOf(p)).filter((e) => e.kind !== 'admin.sign-in');
    expect(events.map((e) => [e.kind, e.actor, e.user, e.address, e.detail])).toEqual([
      ['session.ended', 'admin:root', 'alice', '127.0.0.5', { ip: '10.0.0.5' }],
      ['session.ended', 'admin:root', 'bob', '127.0.0.5', { allOfUser: true }],
      ['api-key.created', 'admin:root', undefined, '127.0.0.5', { name: 'door' }],
      ['api-key.revoked', 'admin:root', undefined, '127.0.0.5', { name: 'door' }],
      ['admin.created', 'admin:root', undefined, '127.0.0.5', { name: 'carol' }],
      ['admin.password-reset', 'admin:root', undefined, '127.0.0.5', { name: 'carol' }],
      ['admin.removed', 'admin:root', undefined, '127.0.0.5', { name: 'carol' }],
    ]);
    // Never the password, nor the key made.
    const key = /dm\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/.exec(made.text)?.[0] ?? 'no key on the page';
    expect(key).toMatch(/^dm\./);
    for (const secret of ['hunter7', key]) expect(JSON.stringify([events, p.shipped])).not.toContain(secret);
  });
});
