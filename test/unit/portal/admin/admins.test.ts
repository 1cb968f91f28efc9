import { describe, expect, it } from 'vitest';
import { ADMIN, ADMIN_PASSWORD, csrfOf, useAdminPortal, type AdminPortal, textOf } from './harness.ts';
import { unlabelled } from './page-text.ts';

const { start, signedIn: signedInAt } = useAdminPortal();
const signedIn = () => signedInAt('/admin/admins');

const names = (p: AdminPortal) => p.store.list().map((a) => a.name);

describe('the Admins screen', () => {
  it('sends a visitor who is not signed in to the sign-in page', async () => {
    const p = await start();
    const b = p.browser();
    for (const path of ['/admin/admins', '/admin/admins/password', '/admin/admins/remove']) {
      const reply = path === '/admin/admins' ? await b.get(path) : await b.post(path, {});
      expect(reply.status, path).toBe(303);
      expect(reply.headers.location, path).toBe('/admin/sign-in');
    }
  });

  it('lists the admins, marks you, labels every field; adds one who can then sign in', async () => {
    const { p, b, csrf } = await signedIn();
    const page = await b.get('/admin/admins');
    expect(textOf(page.text)).toContain(`${ADMIN} (you)`);
    expect(unlabelled(page.text)).toEqual([]);
    const added = await b.post('/admin/admins', {
      csrf,
      user: 'carol',
      password: 'Carol pw 1',
      confirm: 'Carol pw 1',
    });
    expect(added.status).toBe(200);
    expect(textOf(added.text)).toContain('Added the administrator carol.');
    expect(added.text).not.toContain('Carol pw 1');
    expect(names(p)).toEqual(['carol', ADMIN]);
    expect((await p.browser().signIn('carol', 'Carol pw 1')).headers.location).toBe('/admin/');
    expect(p.logs).toContainEqual('admin: "root" added the administrator "carol"');
  });

  it.each([
    [{ user: 'bad name!', password: 'x', confirm: 'x' }, 400, 'User name: "bad name!" is not allowed'],
    [
      { user: 'carol', password: 'one', confirm: 'two' },
      400,
      'Password again: is not the same as the password above',
    ],
    [{ user: 'carol', password: '', confirm: '' }, 400, 'Password: type a password'],
    [{ user: ADMIN, password: 'x', confirm: 'x' }, 409, `User name: "${ADMIN}" is an administrator already`],
  ])(
    'refuses to add %j with %i naming the field; the name stays typed; nothing added',
    async (fields, status, message) => {
      const { p, b, csrf } = await signedIn();
      const reply = await b.post('/admin/admins', { csrf, ...fields });
      expect(reply.status).toBe(status);
      expect(textOf(reply.text)).toContain(message);
      expect(textOf(reply.text)).toContain('Nothing was changed.');
      expect(reply.text).toContain(`value="${fields.user}"`);
      expect(names(p)).toEqual([ADMIN]);
    },
  );

  it('a new password for another admin ends their sign-ins; your own keeps you signed in here only', async () => {
    const { p, b, csrf } = await signedIn();
    await b.post('/admin/admins', { csrf, user: 'carol', password: 'Carol pw 1', confirm: 'Carol pw 1' });
    const carol = p.browser();
    await carol.signIn('carol', 'Carol pw 1');
    const reset = await b.post('/admin/admins/password', {
      csrf,
      user: 'carol',
      password: 'Carol pw 2',
      confirm: 'Carol pw 2',
    });
    expect(reset.status).toBe(200);
    expect(textOf(reset.text)).toContain('Set a new password for carol; their sign-ins have ended.');
    expect((await carol.get('/admin/')).headers.location).toBe('/admin/sign-in');
    expect(await p.store.verify('carol', 'Carol pw 2')).toBe(true);

    const other = p.browser();
    await other.signIn();
    const mine = await b.post('/admin/admins/password', {
      csrf,
      user: ADMIN,
      password: 'New root pw',
      confirm: 'New root pw',
    });
    expect(mine.status).toBe(200);
    expect(textOf(mine.text)).toContain('your other sign-ins have ended');
    // This browser goes on, with the new session's CSRF token on the page; the other sign-in has ended.
    const next = await b.get('/admin/admins');
    expect(next.status).toBe(200);
    expect(csrfOf(next)).toBe(csrfOf(mine));
    expect((await other.get('/admin/')).headers.location).toBe('/admin/sign-in');
  });

  it('refuses a password reset typed differently twice (400) or for no such admin (404); nothing changes', async () => {
    const { p, b, csrf } = await signedIn();
    const differs = await b.post('/admin/admins/password', {
      csrf,
      user: ADMIN,
      password: 'a',
      confirm: 'b',
    });
    expect(differs.status).toBe(400);
    expect(textOf(differs.text)).toContain(`Password again (${ADMIN}): is not the same`);
    const unknown = await b.post('/admin/admins/password', {
      csrf,
      user: 'nobody',
      password: 'a',
      confirm: 'a',
    });
    expect(unknown.status).toBe(404);
    expect(textOf(unknown.text)).toContain('There is no administrator named "nobody"');
    expect(await p.store.verify(ADMIN, ADMIN_PASSWORD)).toBe(true);
  });

  it('removes another admin and ends their sign-ins; never the last one', async () => {
    const { p, b, csrf } = await signedIn();
    const last = await b.post('/admin/admins/remove', { csrf, user: ADMIN, yourself: 'on' });
    expect(last.status).toBe(409);
    expect(textOf(last.text)).toContain(`"${ADMIN}" is the only administrator: add another first`);
    await b.post('/admin/admins', { csrf, user: 'carol', password: 'Carol pw 1', confirm: 'Carol pw 1' });
    const carol = p.browser();
    await carol.signIn('carol', 'Carol pw 1');
    const removed = await b.post('/admin/admins/remove', { csrf, user: 'carol' });
    expect(removed.status).toBe(200);
    expect(textOf(removed.text)).toContain('Removed the administrator carol and ended their sign-ins.');
    expect(names(p)).toEqual([ADMIN]);
    expect((await carol.get('/admin/')).headers.location).toBe('/admin/sign-in');
  });

  it('removes yourself only with the box ticked, then signs you out', async () => {
    const { p, b, csrf } = await signedIn();
    await b.post('/admin/admins', { csrf, user: 'carol', password: 'Carol pw 1', confirm: 'Carol pw 1' });
    const page = await b.get('/admin/admins');
    expect(textOf(page.text)).toContain('Yes, remove my own account');
    const unticked = await b.post('/admin/admins/remove', { csrf, user: ADMIN });
    expect(unticked.status).toBe(400);
    expect(textOf(unticked.text)).toContain(
      'tick the box to remove your own account: you will be signed out',
    );
    expect(names(p)).toEqual(['carol', ADMIN]);
    const gone = await b.post('/admin/admins/remove', { csrf, user: ADMIN, yourself: 'on' });
    expect(gone.status).toBe(303);
    expect(gone.headers.location).toBe('/admin/sign-in');
    expect(names(p)).toEqual(['carol']);
    expect((await b.get('/admin/')).headers.location).toBe('/admin/sign-in');
  });

  it.each([
    ['/admin/admins', { user: 'carol', password: 'x', confirm: 'x' }],
    ['/admin/admins/password', { user: ADMIN, password: 'x', confirm: 'x' }],
    ['/admin/admins/remove', { user: ADMIN, yourself: 'on' }],
  ])('%s refuses a missing or wrong CSRF token and changes nothing', async (path, fields) => {
    const { p, b } = await signedIn();
    expect((await b.post(path, fields)).status).toBe(403);
    expect((await b.post(path, { ...fields, csrf: 'forged' })).status).toBe(403);
    expect(names(p)).toEqual([ADMIN]);
    expect(await p.store.verify(ADMIN, ADMIN_PASSWORD)).toBe(true);
  });
});
