import { describe, expect, it } from 'vitest';
import { csrfOf, textOf, useAdminPortal, type AdminPortal, type Browser } from './harness.ts';
import { unlabelled } from './page-text.ts';
import { ip, mac } from '../../../support/session-keys.ts';

const { start } = useAdminPortal();

/** A portal with Alice on two addresses and a MAC, Bob on one, and a signed-in browser. */
async function seeded(): Promise<{ p: AdminPortal; b: Browser; csrf: string }> {
  const p = await start();
  p.sessions.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', idleTimeoutMs: 600_000 });
  p.sessions.start({
    key: ip('10.0.0.6'),
    username: 'Alice',
    source: 'portal',
    expiresAt: p.clock.now() + 3_600_000,
  });
  p.sessions.start({ key: mac('aa:bb:cc:dd:ee:01'), username: 'alice', source: 'registration' });
  p.sessions.start({ key: ip('10.0.1.7'), username: 'bob', source: 'api' });
  const b = p.browser();
  await b.signIn();
  const page = await b.get('/admin/sessions');
  return { p, b, csrf: csrfOf(page) };
}

const rowsOf = (page: string) =>
  [
    ...page.matchAll(
      /<tr>\s*<td data-label="User">([^<]*)<\/td>\s*<td data-label="Address" class="key">\s*<span\s*>([^<\s]*)/g,
    ),
  ].map((m) => `${m[1]}@${m[2]}`);

describe('the Sessions screen', () => {
  it('sends a visitor who is not signed in to the sign-in page, for the page and both buttons', async () => {
    const p = await start();
    const b = p.browser();
    for (const [method, path] of [
      ['GET', '/admin/sessions'],
      ['POST', '/admin/sessions/end'],
      ['POST', '/admin/sessions/end-user'],
    ] as const) {
      const reply = method === 'GET' ? await b.get(path) : await b.post(path, {});
      expect(reply.status, path).toBe(303);
      expect(reply.headers.location, path).toBe('/admin/sign-in');
    }
  });

  it('lists every live session a page at a time, with source, created, last seen, idle and hard ends; every field labelled', async () => {
    const { b } = await seeded();
    const page = await b.get('/admin/sessions');
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<a href="\/admin\/sessions" aria-current="page"\s*>Sessions<\/a/);
    expect(rowsOf(page.text)).toEqual([
      'alice@10.0.0.5',
      'Alice@10.0.0.6',
      'bob@10.0.1.7',
      'alice@aa:bb:cc:dd:ee:01',
    ]);
    const text = textOf(page.text);
    expect(text).toContain(
      'alice 10.0.0.5 Login API 2026-01-01 00:00:00 UTC 2026-01-01 00:00:00 UTC 2026-01-01 00:10:00 UTC none',
    );
    expect(text).toContain(
      'Alice 10.0.0.6 Captive portal sign-in 2026-01-01 00:00:00 UTC 2026-01-01 00:00:00 UTC none 2026-01-01 01:00:00 UTC',
    );
    expect(unlabelled(page.text)).toEqual([]);
    expect(page.text).not.toMatch(/<script/i);
  });

  it('searches by user (case-insensitive, whole or start), by address and by MAC (as typed: AA-BB-…)', async () => {
    const { b } = await seeded();
    const search = async (q: string, by: string, match = 'exact') =>
      rowsOf((await b.get(`/admin/sessions?${new URLSearchParams({ q, by, match })}`)).text);
    expect(await search('ALICE', 'user')).toEqual([
      'alice@10.0.0.5',
      'Alice@10.0.0.6',
      'alice@aa:bb:cc:dd:ee:01',
    ]);
    expect(await search('b', 'user', 'prefix')).toEqual(['bob@10.0.1.7']);
    expect(await search('10.0.0.', 'ip', 'prefix')).toEqual(['alice@10.0.0.5', 'Alice@10.0.0.6']);
    expect(await search('10.0.1.7', 'ip')).toEqual(['bob@10.0.1.7']);
    expect(await search('AA-BB-CC-DD-EE-01', 'mac')).toEqual(['alice@aa:bb:cc:dd:ee:01']);
    expect(textOf((await b.get('/admin/sessions?q=carol&by=user')).text)).toContain(
      'No live session matches.',
    );
  });

  it('pages: 50 a page, a Next page link after the last key, a First page link back', async () => {
    const p = await start();
    for (let i = 0; i < 120; i++)
      p.sessions.start({
        key: ip(`10.9.${Math.floor(i / 100)}.${i % 100}`),
        username: `u${i}`,
        source: 'api',
      });
    const b = p.browser();
    await b.signIn();
    const first = await b.get('/admin/sessions?q=10.9.&by=ip&match=prefix');
    expect(rowsOf(first.text)).toHaveLength(50);
    const next = /<a href="([^"]*)" rel="next">Next page<\/a>/.exec(first.text)?.[1]?.replace(/&amp;/g, '&');
    expect(next).toBeDefined();
    const second = await b.get(next ?? '');
    expect(rowsOf(second.text)).toHaveLength(50);
    expect(rowsOf(second.text)[0]).not.toBe(rowsOf(first.text)[0]);
    expect(second.text).toContain('>First page</a>');
  });

  it.each([
    ['q=not-an-ip&by=ip', 'Search for: "not-an-ip" is not an IP address'],
    ['q=zz:zz&by=mac&match=prefix', 'Search for: "zz:zz" cannot start a MAC address'],
    ['q=alice&by=shoe', 'Search by: "shoe" is not one of user, ip, mac'],
    ['q=alice&match=sometimes', 'Match: "sometimes" is not one of exact, prefix'],
    [`q=${'x'.repeat(300)}`, 'is longer than 256 characters'],
    ['after=ip:nowhere', 'Page: "ip:nowhere" is not a session key'],
  ])('a bad search (%s) is a 400 naming the field and value, and lists nothing', async (query, message) => {
    const { b } = await seeded();
    const page = await b.get(`/admin/sessions?${query}`);
    expect(page.status).toBe(400);
    expect(textOf(page.text)).toContain(message);
    expect(rowsOf(page.text)).toEqual([]);
  });

  it('escapes what was typed and what is stored', async () => {
    const { p, b } = await seeded();
    p.sessions.start({ key: ip('10.0.0.66'), username: '<b>mallory</b>', source: 'api' });
    const page = await b.get('/admin/sessions?q=%3Cb%3E&by=user&match=prefix');
    expect(page.text).not.toContain('<b>');
    expect(page.text).toContain('&lt;b&gt;mallory&lt;/b&gt;');
    expect(page.text).toContain('value="&lt;b&gt;"');
  });

  it('End ends that session only, says so, shows the same search again and logs who did it', async () => {
    const { p, b, csrf } = await seeded();
    const reply = await b.post('/admin/sessions/end', {
      csrf,
      key: 'ip:10.0.0.5',
      q: 'alice',
      by: 'user',
      match: 'exact',
    });
    expect(reply.status).toBe(200);
    expect(textOf(reply.text)).toContain('Ended the session of alice on 10.0.0.5.');
    expect(rowsOf(reply.text)).toEqual(['Alice@10.0.0.6', 'alice@aa:bb:cc:dd:ee:01']);
    expect(p.sessions.find(ip('10.0.0.5'))).toBeUndefined();
    expect(p.sessions.list()).toHaveLength(3);
    expect(p.logs).toContainEqual('admin: "root" ended the session of "alice" on 10.0.0.5');
    const again = await b.post('/admin/sessions/end', { csrf, key: 'ip:10.0.0.5' });
    expect(again.status).toBe(404);
    expect(textOf(again.text)).toContain('There is no session on 10.0.0.5 any more');
  });

  it('End all of a user ends exactly that user name’s sessions, and says how many', async () => {
    const { p, b, csrf } = await seeded();
    const reply = await b.post('/admin/sessions/end-user', { csrf, username: 'alice' });
    expect(reply.status).toBe(200);
    expect(textOf(reply.text)).toContain('Ended 2 sessions of alice.');
    expect(p.sessions.list().map((s) => s.username)).toEqual(['Alice', 'bob']);
  });

  it.each([
    ['/admin/sessions/end', { key: 'ip:10.0.0.999' }, 'key: "ip:10.0.0.999" is not a session key'],
    ['/admin/sessions/end', { key: 'host:x' }, 'key: "host:x" is not a session key'],
    ['/admin/sessions/end-user', { username: '' }, 'username: "" must be 1 to 256 characters'],
  ])('%s with %j: 400 naming the field and value; nothing ended', async (path, fields, message) => {
    const { p, b, csrf } = await seeded();
    const reply = await b.post(path, { csrf, ...fields });
    expect(reply.status).toBe(400);
    expect(textOf(reply.text)).toContain(message);
    expect(p.sessions.list()).toHaveLength(4);
  });

  it.each([
    ['/admin/sessions/end', { key: 'ip:10.0.0.5' }],
    ['/admin/sessions/end-user', { username: 'alice' }],
  ])('%s refuses a missing or wrong CSRF token and ends nothing', async (path, fields) => {
    const { p, b } = await seeded();
    expect((await b.post(path, fields)).status).toBe(403);
    expect((await b.post(path, { ...fields, csrf: 'forged' })).status).toBe(403);
    expect(p.sessions.list()).toHaveLength(4);
  });
});
