import { afterEach, describe, expect, it } from 'vitest';
import { FORM, startPortal, type Reply } from '../harness.ts';
import { ADMIN, ADMIN_PASSWORD, csrfOf, setCookies, startAdminPortal, type AdminPortal } from './harness.ts';

let portal: AdminPortal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

const CSP =
  "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

function expectAdminHeaders(reply: Reply, what: string): void {
  expect(reply.headers['cache-control'], what).toBe('no-store');
  expect(reply.headers['content-security-policy'], what).toBe(CSP);
  expect(reply.headers['x-frame-options'], what).toBe('DENY');
  expect(reply.headers['referrer-policy'], what).toBe('no-referrer');
  expect(reply.headers['x-content-type-options'], what).toBe('nosniff');
}

const cookieNamed = (reply: Reply, name: string) => setCookies(reply).find((c) => c.startsWith(`${name}=`));

describe('pages need a signed-in admin', () => {
  it('sends a visitor without a session to the sign-in page, from every page', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    expect(await b.get('/admin')).toMatchObject({ status: 303, headers: { location: '/admin/' } });
    expect(await b.get('/admin/')).toMatchObject({ status: 303, headers: { location: '/admin/sign-in' } });
    expect(await b.get('/admin/directory')).toMatchObject({
      status: 303,
      headers: { location: '/admin/sign-in' },
    });
  });

  it('signs in and lands on the Home page; the sign-in page then goes there too', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    const reply = await b.signIn();
    expect(reply.status).toBe(303);
    expect(reply.headers.location).toBe('/admin/');
    const page = await b.get('/admin/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.text).toContain(`Signed in as <strong>${ADMIN}</strong>`);
    expect(page.text).toContain('Is Doorman working?');
    expect(await b.get('/admin/sign-in')).toMatchObject({
      status: 303,
      headers: { location: '/admin/' },
    });
    expect(p.logs).toContainEqual(`admin: "${ADMIN}" signed in from 127.0.0.1`);
  });

  it('serves the screens under the path of baseUrl, with redirects and cookies there', async () => {
    const p = (portal = await startAdminPortal({ baseUrl: 'http://proxy.example/doorman/' }));
    const b = p.browser();
    expect((await b.get('/doorman/admin/')).headers.location).toBe('/doorman/admin/sign-in');
    const reply = await b.signIn();
    expect(reply.headers.location).toBe('/doorman/admin/');
    expect(cookieNamed(reply, 'doorman_admin')).toMatch(/; Path=\/doorman\/admin\/;/);
    expect((await b.get('/doorman/admin/directory')).status).toBe(200);
    expect((await b.get('/admin/sign-in')).status).toBe(404);
  });

  it('ends the session after 8 hours', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    await b.signIn();
    p.clock.advance(8 * 3600_000);
    const reply = await b.get('/admin/directory');
    expect(reply).toMatchObject({ status: 303, headers: { location: '/admin/sign-in' } });
    // The dead cookie is deleted.
    expect(cookieNamed(reply, 'doorman_admin')).toMatch(/^doorman_admin=; .*Max-Age=0/);
  });
});

describe('the session cookie', () => {
  it('is HttpOnly, SameSite=Strict, scoped to the admin path, with the session lifetime', async () => {
    const p = (portal = await startAdminPortal());
    const reply = await p.browser().signIn();
    const cookie = cookieNamed(reply, 'doorman_admin') ?? '';
    expect(cookie).toMatch(
      /^doorman_admin=[A-Za-z0-9_-]{43}; Path=\/admin\/; Max-Age=28800; HttpOnly; SameSite=Strict$/,
    );
    // The sign-in form's nonce is spent.
    expect(cookieNamed(reply, 'doorman_admin_sign_in')).toMatch(
      /^doorman_admin_sign_in=; Path=\/admin\/; Max-Age=0;/,
    );
  });

  it('is Secure when baseUrl is https (also the sign-in nonce)', async () => {
    const p = (portal = await startAdminPortal({ baseUrl: 'https://proxy.example/' }));
    const b = p.browser();
    const form = await b.get('/admin/sign-in');
    expect(cookieNamed(form, 'doorman_admin_sign_in')).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
    const reply = await b.post('/admin/sign-in', {
      csrf: csrfOf(form),
      user: ADMIN,
      password: ADMIN_PASSWORD,
    });
    expect(cookieNamed(reply, 'doorman_admin')).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
  });

  it('a token that is not a live session finds nothing', async () => {
    const p = (portal = await startAdminPortal());
    for (const token of ['x', 'A'.repeat(43), '']) {
      const reply = await p.send({ path: '/admin/directory', headers: { Cookie: `doorman_admin=${token}` } });
      expect(reply.status, token).toBe(303);
    }
  });
});

describe('sign-in', () => {
  it('shows a form with a CSRF token tied to a nonce cookie; never a password', async () => {
    const p = (portal = await startAdminPortal());
    const page = await p.browser().get('/admin/sign-in');
    expect(page.status).toBe(200);
    expectAdminHeaders(page, 'sign-in');
    expect(page.text).toMatch(/<form method="post" action="\/admin\/sign-in">/);
    expect(page.text).toContain(
      '<input type="password" id="f-password" name="password" autocomplete="current-password" required />',
    );
    expect(csrfOf(page)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookieNamed(page, 'doorman_admin_sign_in')).toMatch(
      /^doorman_admin_sign_in=[A-Za-z0-9_-]{43}; Path=\/admin\/; Max-Age=3600; HttpOnly; SameSite=Strict$/,
    );
    expect(page.text).not.toMatch(/<script/i);
  });

  it('refuses a wrong password and an unknown user with one message, keeping the name typed', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    const wrong = await b.signIn(ADMIN, 'not it');
    const unknown = await b.signIn('nobody', ADMIN_PASSWORD);
    for (const reply of [wrong, unknown]) {
      expect(reply.status).toBe(403);
      expect(reply.text).toContain('Wrong user name or password.');
      expect(setCookies(reply).some((c) => c.startsWith('doorman_admin='))).toBe(false);
      expect(reply.text).not.toContain(ADMIN_PASSWORD);
      expect(reply.text).not.toContain('not it');
      expectAdminHeaders(reply, 'refusal');
    }
    expect(unknown.text).toMatch(/name="user"\s+value="nobody"/);
    // The form on the refusal page works: its token still matches the nonce cookie.
    const retry = await b.post('/admin/sign-in', {
      csrf: csrfOf(wrong),
      user: ADMIN,
      password: ADMIN_PASSWORD,
    });
    expect(retry.status).toBe(303);
    expect(p.logs.filter((l) => l.startsWith('admin: failed sign-in'))).toEqual([
      'admin: failed sign-in from 127.0.0.1',
      'admin: failed sign-in from 127.0.0.1',
    ]);
    expect(p.logs.join('\n')).not.toContain(ADMIN_PASSWORD);
    expect(p.logs.join('\n')).not.toContain('not it');
  });

  it('asks for both fields when one is empty, without counting a failure', async () => {
    const p = (portal = await startAdminPortal({}, { signInLimits: { maxFailures: 1, windowSeconds: 60 } }));
    const b = p.browser();
    const reply = await b.signIn(ADMIN, '');
    expect(reply.status).toBe(400);
    expect(reply.text).toContain('Enter a user name and a password.');
    expect((await b.signIn()).status).toBe(303);
  });

  it('refuses 429 with Retry-After once an address has used up its failures, even the right password', async () => {
    const p = (portal = await startAdminPortal({}, { signInLimits: { maxFailures: 3, windowSeconds: 60 } }));
    const b = p.browser('127.0.0.1');
    for (let i = 0; i < 3; i++) expect((await b.signIn(ADMIN, `guess ${i}`)).status).toBe(403);
    const limited = await b.signIn();
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(limited.text).toContain('too many wrong sign-ins from this address; try again in 60 seconds');
    expectAdminHeaders(limited, '429');
    // Another address is not affected.
    expect((await p.browser('127.0.0.2').signIn()).status).toBe(303);
    p.clock.advance(59_000);
    expect((await b.signIn()).headers['retry-after']).toBe('1');
    p.clock.advance(1_000);
    expect((await b.signIn()).status).toBe(303);
  });

  it('refuses 403 a post without the nonce cookie, with a wrong token, or with another browser’s token', async () => {
    const p = (portal = await startAdminPortal());
    const mine = p.browser();
    const theirs = p.browser();
    const myToken = csrfOf(await mine.get('/admin/sign-in'));
    const theirToken = csrfOf(await theirs.get('/admin/sign-in'));
    const posts: Array<[string, Promise<Reply>]> = [
      [
        'no cookie',
        p.browser().post('/admin/sign-in', { csrf: myToken, user: ADMIN, password: ADMIN_PASSWORD }),
      ],
      ['no token', mine.post('/admin/sign-in', { user: ADMIN, password: ADMIN_PASSWORD })],
      [
        'wrong token',
        mine.post('/admin/sign-in', { csrf: 'x'.repeat(43), user: ADMIN, password: ADMIN_PASSWORD }),
      ],
      [
        'their token',
        mine.post('/admin/sign-in', { csrf: theirToken, user: ADMIN, password: ADMIN_PASSWORD }),
      ],
    ];
    for (const [what, sent] of posts) {
      const reply = await sent;
      expect(reply.status, what).toBe(403);
      expect(reply.text, what).toContain('this form has expired or did not come from this site');
      expect(
        setCookies(reply).some((c) => c.startsWith('doorman_admin=')),
        what,
      ).toBe(false);
    }
    expect(p.db.prepare('SELECT COUNT(*) AS n FROM admin_sessions').get()).toEqual({ n: 0 });
  });

  it('a new sign-in in a browser that has a session ends that session', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    await b.signIn();
    const first = b.cookies.get('doorman_admin')?.value ?? '';
    // A signed-in browser is redirected away from the form; take one from elsewhere and post it with both cookies.
    const form = await p.browser().get('/admin/sign-in');
    const reply = await p.send({
      method: 'POST',
      path: '/admin/sign-in',
      headers: {
        'Content-Type': FORM,
        Cookie: `doorman_admin=${first}; doorman_admin_sign_in=${cookieValue(form, 'doorman_admin_sign_in')}`,
      },
      body: new URLSearchParams({ csrf: csrfOf(form), user: ADMIN, password: ADMIN_PASSWORD }).toString(),
    });
    expect(reply.status).toBe(303);
    expect(p.store.findSession(first)).toBeUndefined();
    expect(p.store.findSession(cookieValue(reply, 'doorman_admin'))).toMatchObject({ userName: ADMIN });
  });
});

function cookieValue(reply: Reply, name: string): string {
  const cookie = cookieNamed(reply, name) ?? '';
  return cookie.slice(name.length + 1, cookie.indexOf(';'));
}

describe('sign-out', () => {
  it('ends the session: the old cookie no longer works', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    await b.signIn();
    const token = b.cookies.get('doorman_admin')?.value ?? '';
    const page = await b.get('/admin/directory');
    const reply = await b.post('/admin/sign-out', { csrf: csrfOf(page) });
    expect(reply).toMatchObject({ status: 303, headers: { location: '/admin/sign-in' } });
    expect(cookieNamed(reply, 'doorman_admin')).toMatch(/^doorman_admin=; Path=\/admin\/; Max-Age=0;/);
    expect(p.store.findSession(token)).toBeUndefined();
    const replay = await p.send({ path: '/admin/directory', headers: { Cookie: `doorman_admin=${token}` } });
    expect(replay.status).toBe(303);
    expect(p.logs).toContainEqual(`admin: "${ADMIN}" signed out`);
  });

  it('needs the session’s CSRF token: without it 403 and the session stays', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    await b.signIn();
    const other = p.browser();
    await other.signIn();
    const otherToken = csrfOf(await other.get('/admin/directory'));
    for (const form of [{}, { csrf: '' }, { csrf: otherToken }]) {
      const reply = await b.post('/admin/sign-out', form);
      expect(reply.status).toBe(403);
      expectAdminHeaders(reply, 'sign-out 403');
    }
    expect((await b.get('/admin/directory')).status).toBe(200);
  });

  it('without a session just goes to the sign-in page', async () => {
    const p = (portal = await startAdminPortal());
    const reply = await p.browser().post('/admin/sign-out', { csrf: 'x' });
    expect(reply).toMatchObject({ status: 303, headers: { location: '/admin/sign-in' } });
  });

  it('a password change from the CLI signs the admin out everywhere', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    await b.signIn();
    await p.store.setPassword(ADMIN, 'a new one');
    expect((await b.get('/admin/directory')).status).toBe(303);
  });
});

describe('admin routing', () => {
  it('answers HTML 404 for an unknown admin page and 405 with Allow for a wrong method', async () => {
    const p = (portal = await startAdminPortal());
    const missing = await p.send({ path: '/admin/nope' });
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(missing.text).toContain('there is no such admin page');
    expectAdminHeaders(missing, '404');
    const cases = [
      ['PUT', '/admin/directory', 'GET, HEAD, POST'],
      ['DELETE', '/admin/sign-in', 'GET, HEAD, POST'],
      ['GET', '/admin/sign-out', 'POST'],
      ['POST', '/admin/', 'GET, HEAD'],
    ] as const;
    for (const [method, path, allow] of cases) {
      const reply = await p.send({ method, path });
      expect(reply.status, `${method} ${path}`).toBe(405);
      expect(reply.headers.allow).toBe(allow);
      expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
    }
  });

  it('serves its stylesheet to anyone, which the CSP allows as the only style source', async () => {
    const p = (portal = await startAdminPortal());
    const css = await p.send({ path: '/admin/style.css' });
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    const page = await p.send({ path: '/admin/sign-in' });
    expect(page.text).toContain('<link rel="stylesheet" href="/admin/style.css" />');
    expect(page.text).not.toMatch(/style=|<style/);
  });

  it('leaves the API as it was: JSON, and no admin headers', async () => {
    const p = (portal = await startAdminPortal());
    const reply = await p.send({ method: 'GET', path: '/api/login/' });
    expect(reply.status).toBe(405);
    expect(reply.json).toMatchObject({ ok: false, error: 'method_not_allowed' });
    expect(reply.headers['content-security-policy']).toBeUndefined();
  });

  it('without admin dependencies there are no admin screens: a JSON 404', async () => {
    const p = await startPortal();
    try {
      const reply = await p.send({ path: '/admin/' });
      expect(reply.status).toBe(404);
      expect(reply.json).toMatchObject({ ok: false, error: 'not_found' });
    } finally {
      await p.close();
    }
  });
});

describe('sign-in guessing in parallel', () => {
  it('checks one sign-in per address at a time: the rest get 429 and are not checked', async () => {
    const p = (portal = await startAdminPortal({}, { signInLimits: { maxFailures: 3, windowSeconds: 60 } }));
    const b = p.browser();
    const csrf = csrfOf(await b.get('/admin/sign-in'));
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        b.post('/admin/sign-in', { csrf, user: ADMIN, password: `guess ${i}` }),
      ),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 403).length).toBeLessThanOrEqual(3);
    expect(statuses.filter((s) => s === 403).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 403 || s === 429)).toBe(true);
    const busy = replies.find((r) => r.text.includes('being checked already'));
    expect(busy?.headers['retry-after']).toBe('1');
  });
});
