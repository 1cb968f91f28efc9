import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { DirectoryError } from '../../../../lib/directory/errors.ts';
import { localMidnight } from '../../../../lib/portal/session-limits.ts';
import { PasswordGuesses } from '../../../../lib/security/password-guesses.ts';
import { openDatabase } from '../../../../lib/store/database.ts';
import { SignInFailureStore } from '../../../../lib/store/sign-in-failure-store.ts';
import type { Reply } from '../harness.ts';
import { codeOf, hiddenOf, ON_LINK_MAC, PASSWORD, RANDOM_MAC, startSplash, type Splash } from './harness.ts';

let splash: Splash | undefined;
afterEach(async () => {
  await splash?.close();
  splash = undefined;
});

const ORIGINAL = 'http://example.com/news?a=1&b=%3Cx%3E';
const HOUR = 3600_000;

const CSP =
  "default-src 'none'; style-src 'self'; form-action 'self' http: https:; frame-ancestors 'none'; base-uri 'none'";

function expectSplashHeaders(reply: Reply, what: string): void {
  expect(reply.headers['cache-control'], what).toBe('no-store');
  expect(reply.headers['content-security-policy'], what).toBe(CSP);
  expect(reply.headers['x-frame-options'], what).toBe('DENY');
  expect(reply.headers['referrer-policy'], what).toBe('no-referrer');
  expect(reply.headers['x-content-type-options'], what).toBe('nosniff');
}

/** A page is one whole document: one h1, lang, no script anywhere. */
function expectPage(reply: Reply, status: number, code: string | undefined): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(codeOf(reply), reply.text).toBe(code);
  expect(reply.text).toContain('<html lang="en">');
  expect(reply.text.match(/<h1[ >]/g)).toHaveLength(1);
  // Attributes are always quoted in the templates: an event handler would show as on…=".
  expect(reply.text).not.toMatch(/<script|(?:href|src|action)="javascript:|\son[a-z]+="/i);
  expectSplashHeaders(reply, `${status} ${code}`);
}

async function start(mode: 'off' | 'agreement' | 'authentication' | 'registration', policy = '') {
  const s = (splash = await startSplash());
  await s.set({ mode, policyText: mode === 'agreement' && policy === '' ? 'Be nice.' : policy });
  return s;
}

describe('mode off', () => {
  it('says the portal is off, with no form', async () => {
    const s = await start('off');
    const page = await s.browser().get('/portal/');
    expectPage(page, 200, 'portal_off');
    expect(page.text).not.toContain('portal-form');
  });

  it('refuses a form posted after the portal was switched off, recording nothing', async () => {
    const s = await start('authentication');
    const b = s.browser();
    const page = await b.get('/portal/');
    await s.set({ mode: 'off' });
    const reply = await b.post('/portal/', {
      csrf: hiddenOf(page, 'csrf'),
      url: '',
      username: 'alice',
      password: PASSWORD,
    });
    expectPage(reply, 409, 'portal_off');
    expect(s.rows()).toEqual([]);
    expect(s.directory.calls).toEqual([]);
  });

  it('answers the RFC 8908 API with captive false', async () => {
    const s = await start('off');
    const reply = await s.browser().get('/portal/api');
    expect(JSON.parse(reply.text)).toEqual({
      captive: false,
      'user-portal-url': 'http://127.0.0.1:8180/portal/',
    });
  });
});

describe('Usage Agreement Only', () => {
  it('shows the policy and an Accept button, no sign-in fields; accepting starts an agreement session', async () => {
    const s = await start('agreement', 'Rule one: <be kind>.\n\nRule two & three.');
    await s.groups.create({ name: 'Library PCs', cidrs: ['127.0.0.0/24'] });
    const b = s.browser();
    const { page, reply } = await b.submit({}, ORIGINAL);
    expectPage(page, 200, undefined);
    expect(page.text).toContain('<form id="portal-form" method="post" action="/portal/">');
    expect(page.text).toMatch(/<button type="submit" id="continue">\s*Accept and continue\s*<\/button>/);
    expect(page.text).toContain('Rule one: &lt;be kind&gt;.');
    expect(page.text).toContain('Rule two &amp; three.');
    expect(page.text).not.toContain('id="username"');
    expect(page.text).not.toContain('id="agree"');
    expect(hiddenOf(page, 'url')).toBe(ORIGINAL);

    expect(reply.status).toBe(303);
    expect(reply.headers.location).toBe(ORIGINAL);
    const session = s.sessions.find({ kind: 'ip', value: '127.0.0.1' });
    expect(session).toMatchObject({
      username: 'agreement:Library PCs',
      source: 'agreement',
      expiresAt: s.clock.now() + 480 * 60_000,
      idleTimeoutMs: 60 * 60_000,
    });
    const done = await b.get('/portal/done');
    expectPage(done, 200, 'connected');
    expect(done.text).toContain('connected as <strong>agreement:Library PCs</strong>');
  });

  it('tells a device outside every active group so, instead of showing the policy again', async () => {
    const s = await start('agreement');
    await s.groups.create({ name: 'Elsewhere', cidrs: ['10.0.0.0/8'] });
    await s.groups.create({ name: 'Off', cidrs: ['127.0.0.0/8'], active: false });
    const page = await s.browser().get('/portal/');
    expectPage(page, 403, 'no_device_group');
    expect(page.text).not.toContain('portal-form');
    expect(page.text).toContain('127.0.0.1');
  });

  it('refuses the Accept of a device whose group was switched off meanwhile, recording nothing', async () => {
    const s = await start('agreement');
    const group = await s.groups.create({ name: 'Lab', cidrs: ['127.0.0.1'] });
    const b = s.browser();
    const page = await b.get('/portal/');
    await s.groups.setActive(group.id, false);
    const reply = await b.post('/portal/', { csrf: hiddenOf(page, 'csrf'), url: '' });
    expectPage(reply, 403, 'no_device_group');
    expect(s.rows()).toEqual([]);
  });

  it('decides the group inside the write: a group switched off after the request was read leaves no session', async () => {
    // The deactivation lands between the request's own reads and the group commit's write, as when
    // `doorman device-group set --inactive` commits while the Accept waits for its transaction.
    const between: { deactivate?: () => Promise<unknown> } = {};
    const s = (splash = await startSplash(
      {},
      {},
      {
        commits: (real) => ({
          run: async (write) => {
            await between.deactivate?.();
            return real.run(write);
          },
        }),
      },
    ));
    await s.set({ mode: 'agreement', policyText: 'Be nice.' });
    const lab = await s.groups.create({ name: 'Lab', cidrs: ['127.0.0.0/24'] });
    between.deactivate = async () => {
      const changed = await s.groups.setActive(lab.id, false);
      // The sweep ran and found nothing yet: the Accept's session was not written.
      expect(changed.endedSessions).toBe(0);
    };
    const { reply } = await s.browser().submit({}, ORIGINAL);
    expectPage(reply, 403, 'no_device_group');
    expect(s.rows()).toEqual([]);
    expect(s.logs.join('\n')).not.toContain('accepted the usage policy');
  });
});

describe('Authentication', () => {
  it('signs in with the directory: the directory’s name on the client address, with both timeouts', async () => {
    const s = await start('authentication');
    const b = s.browser('127.0.0.2');
    const { page, reply } = await b.submit({ username: ' Alice ', password: PASSWORD }, ORIGINAL);
    expectPage(page, 200, undefined);
    for (const id of ['portal-form', 'username', 'password', 'continue'])
      expect(page.text).toContain(`id="${id}"`);
    expect(page.text).toContain('<label for="username">User name</label>');
    expect(page.text).toContain('<label for="password">Password</label>');
    expect(page.text).not.toContain('id="agree"');

    expect(reply.status).toBe(303);
    expect(reply.headers.location).toBe(ORIGINAL);
    expect(s.directory.calls).toEqual([{ login: 'Alice', password: PASSWORD }]);
    expect(s.sessions.list()).toMatchObject([
      {
        key: { kind: 'ip', value: '127.0.0.2' },
        username: 'alice',
        source: 'portal',
        expiresAt: s.clock.now() + 480 * 60_000,
        idleTimeoutMs: 60 * 60_000,
      },
    ]);
    expect(s.logs).toContainEqual('portal: 127.0.0.2 signed in as "alice"');
    expect(s.logs.join('\n')).not.toContain(PASSWORD);

    const again = await b.get(`/portal/?url=${encodeURIComponent(ORIGINAL)}`);
    expectPage(again, 200, 'connected');
    expect(again.text).toContain('You are connected as <strong>alice</strong>');
    expect(again.text).not.toMatch(/log ?out|sign out/i);
  });

  it('shows the form again, not "connected", once the session is idle past its limit (no loop with ICAP)', async () => {
    const s = await start('authentication');
    s.sessions.start({
      key: { kind: 'ip', value: '127.0.0.2' },
      username: 'alice',
      source: 'portal',
      idleTimeoutMs: 60_000,
    });
    const b = s.browser('127.0.0.2');
    expectPage(await b.get('/portal/'), 200, 'connected');
    // One millisecond past the limit by the stored last seen: the helper answers ERR, ICAP redirects here.
    s.clock.advance(60_001);
    const page = await b.get(`/portal/?url=${encodeURIComponent(ORIGINAL)}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="portal-form"');
    expect(page.text).not.toContain('data-code="connected"');
  });

  it('goes to portal/done without a url, and done says who the device is connected as', async () => {
    const s = await start('authentication');
    await s.set({ hardTimeoutMinutes: null, idleTimeoutMinutes: null });
    const b = s.browser();
    const { reply } = await b.submit({ username: 'bob', password: PASSWORD });
    expect(reply).toMatchObject({ status: 303, headers: { location: '/portal/done' } });
    expect(s.sessions.find({ kind: 'ip', value: '127.0.0.1' })).toMatchObject({
      expiresAt: undefined,
      idleTimeoutMs: undefined,
    });
    const done = await b.get('/portal/done');
    expectPage(done, 200, 'connected');
    expect(done.text).toContain('connected as <strong>bob</strong>');
    // Another device is not connected: done sends it to the sign-in page.
    expect(await s.browser('127.0.0.9').get('/portal/done')).toMatchObject({
      status: 303,
      headers: { location: '/portal/' },
    });
  });

  it('asks for the policy box when a policy is set, and refuses without it before asking the directory', async () => {
    const s = await start('authentication', 'Only for school work.');
    const b = s.browser();
    const { page, reply } = await b.submit({ username: 'alice', password: PASSWORD });
    expect(page.text).toMatch(/<input type="checkbox" id="agree" name="agree" value="yes" required \/>/);
    expect(page.text).toContain('<label for="agree">');
    expect(page.text).toContain('Only for school work.');
    expectPage(reply, 400, 'bad_request');
    expect(reply.text).toContain('id="portal-form"');
    expect(s.directory.calls).toEqual([]);
    expect(s.rows()).toEqual([]);

    const { reply: accepted } = await b.submit({ username: 'alice', password: PASSWORD, agree: 'yes' });
    expect(accepted.status).toBe(303);
    expect(s.sessions.list()).toHaveLength(1);
  });

  it('says a wrong password clearly, keeps the name, never shows the password, records nothing', async () => {
    const s = await start('authentication');
    const b = s.browser();
    const { reply } = await b.submit({ username: 'alice', password: 'wrong <pw>' }, ORIGINAL);
    expectPage(reply, 403, 'wrong_password');
    expect(reply.text).toContain('Wrong user name or password.');
    expect(reply.text).toContain('value="alice"');
    expect(reply.text).not.toContain('wrong &lt;pw&gt;');
    expect(reply.text).not.toContain('wrong <pw>');
    expect(hiddenOf(reply, 'url')).toBe(ORIGINAL);
    expect(s.rows()).toEqual([]);
    // An unknown user gets the very same words.
    const { reply: unknown } = await b.submit({ username: 'mallory', password: 'x' });
    expect(unknown.text).toContain('Wrong user name or password.');
  });

  it('never asks the directory twice for the same wrong attempt', async () => {
    // Each still counts as a guess: room for all six here.
    const s = (splash = await startSplash({ passwordGuessing: { account: { maxFailures: 10 } } }));
    await s.set({ mode: 'authentication' });
    const b = s.browser();
    for (let i = 0; i < 3; i++) {
      const { reply } = await b.submit({ username: 'alice', password: 'guess' });
      expect(codeOf(reply)).toBe('wrong_password');
    }
    expect(s.directory.calls).toHaveLength(1);
    // A different password, or the same one after the directory settings changed, is asked.
    await b.submit({ username: 'alice', password: 'guess2' });
    s.directory.version = 2;
    await b.submit({ username: 'alice', password: 'guess' });
    expect(s.directory.calls).toHaveLength(3);
    // And the right one works.
    const { reply } = await b.submit({ username: 'alice', password: PASSWORD });
    expect(reply.status).toBe(303);
  });

  it('rate-limits wrong passwords per address: 429, the directory not asked, other addresses unaffected', async () => {
    const s = (splash = await startSplash({
      passwordGuessing: { address: { maxFailures: 3, windowSeconds: 300 } },
    }));
    await s.set({ mode: 'authentication' });
    const b = s.browser('127.0.0.5');
    for (let i = 0; i < 3; i++) await b.submit({ username: 'alice', password: `guess${i}` });
    expect(s.directory.calls).toHaveLength(3);
    const { reply } = await b.submit({ username: 'alice', password: PASSWORD });
    expectPage(reply, 429, 'rate_limited');
    expect(reply.headers['retry-after']).toBe('300');
    expect(s.directory.calls).toHaveLength(3);
    expect(s.rows()).toEqual([]);
    // Cached wrong attempts count too, and another address is not held back.
    const other = await s.browser('127.0.0.6').submit({ username: 'alice', password: PASSWORD });
    expect(other.reply.status).toBe(303);
    s.clock.advance(300_000);
    expect((await b.submit({ username: 'alice', password: PASSWORD })).reply.status).toBe(303);
  });

  it('limits wrong passwords per account with the Basic helper, in the one DB; not from the owner’s address', async () => {
    const s = (splash = await startSplash(
      { passwordGuessing: { account: { maxFailures: 3, windowSeconds: 900 } } },
      {},
      { file: true },
    ));
    await s.set({ mode: 'authentication' });
    expect(
      (await s.browser('127.0.0.5').submit({ username: 'alice', password: PASSWORD })).reply.status,
    ).toBe(303);
    // The Basic helper (authd: another process, its own handle on the DB) meets three wrong passwords.
    const db = openDatabase(s.file ?? '', { busyTimeoutMs: 0 });
    onTestFinished(() => void db.close());
    const basic = new PasswordGuesses(
      new SignInFailureStore(db),
      { account: { maxFailures: 3, windowSeconds: 900 }, address: { maxFailures: 10, windowSeconds: 300 } },
      { clock: s.clock },
    );
    for (let i = 0; i < 3; i++) {
      await basic.guard('alice', `10.0.0.${i}`, () =>
        Promise.resolve({ ok: false, reason: 'wrong-password' }),
      );
    }
    const asked = s.directory.calls.length;
    const { reply } = await s.browser('127.0.0.7').submit({ username: 'ALICE', password: PASSWORD });
    expectPage(reply, 429, 'rate_limited');
    expect(reply.text).toContain('Too many wrong sign-ins for this user name');
    expect(s.directory.calls).toHaveLength(asked);
    expect(s.logs.join('\n')).toContain('RATE_LIMITED account="alice"');
    // alice's session from her first sign-in ends, and she signs in again from there.
    s.db.prepare('DELETE FROM sessions').run();
    expect(
      (await s.browser('127.0.0.5').submit({ username: 'alice', password: PASSWORD })).reply.status,
    ).toBe(303);
  });

  it('answers 503 directory_unavailable when the directory is down or none is applied, counting nothing', async () => {
    const s = (splash = await startSplash({
      passwordGuessing: { account: { maxFailures: 1 }, address: { maxFailures: 1 } },
    }));
    await s.set({ mode: 'authentication' });
    const b = s.browser();
    s.directory.down = new DirectoryError('UNREACHABLE', 'cannot connect to ldap.example.test:636');
    const { reply } = await b.submit({ username: 'alice', password: PASSWORD });
    expectPage(reply, 503, 'directory_unavailable');
    expect(reply.text).not.toContain('ldap.example.test');
    expect(s.logs.join('\n')).toContain('cannot connect to ldap.example.test:636');
    s.directory.applied = false;
    expectPage(
      (await b.submit({ username: 'alice', password: PASSWORD })).reply,
      503,
      'directory_unavailable',
    );
    expect(s.rows()).toEqual([]);
    // Not a wrong password: neither remembered nor counted (the limit here is one failure).
    s.directory.applied = true;
    s.directory.down = undefined;
    expect((await b.submit({ username: 'alice', password: PASSWORD })).reply.status).toBe(303);
  });
});

describe('Device Registration', () => {
  it('shows the device’s MAC, registers it to the user until the clear date, no idle limit', async () => {
    const s = await start('registration');
    await s.set({ registrationClearDate: '2026-09-01' });
    s.macs.set('127.0.0.3', ON_LINK_MAC);
    const b = s.browser('127.0.0.3');
    const { page, reply } = await b.submit({ username: 'alice', password: PASSWORD }, ORIGINAL);
    expectPage(page, 200, undefined);
    expect(page.text).toContain(`<span class="device" id="device-mac">${ON_LINK_MAC}</span>`);
    expect(page.text).toContain('until the start of 2026-09-01');
    expect(reply).toMatchObject({ status: 303, headers: { location: ORIGINAL } });
    expect(s.sessions.list()).toMatchObject([
      {
        key: { kind: 'mac', value: ON_LINK_MAC },
        username: 'alice',
        source: 'registration',
        expiresAt: localMidnight('2026-09-01'),
        idleTimeoutMs: undefined,
      },
    ]);
    const done = await b.get('/portal/done');
    expectPage(done, 200, 'registered');
    expect(done.text).toContain(ON_LINK_MAC);
    expect(done.text).toContain('registered to\n');
  });

  it('tells a device with a randomised MAC that its registration will change with it', async () => {
    const s = await start('registration');
    s.macs.set('127.0.0.4', RANDOM_MAC, true);
    const b = s.browser('127.0.0.4');
    const page = await b.get('/portal/');
    expectPage(page, 200, 'mac_randomised');
    expect(page.text).toContain('id="portal-form"');
    expect(page.text).toContain(RANDOM_MAC);
    // A refusal is the message then; the notice stays beside it.
    const { reply } = await b.submit({ username: 'alice', password: 'nope' });
    expectPage(reply, 403, 'wrong_password');
    expect(reply.text).toContain('<p class="notice" data-code="mac_randomised">');
    await b.submit({ username: 'alice', password: PASSWORD });
    const done = await b.get('/portal/done');
    expectPage(done, 200, 'registered');
    expect(done.text).toContain('<p class="notice" data-code="mac_randomised">');
  });

  it('binds an IPv6 client’s address to its registration', async () => {
    const s = await start('registration');
    s.macs.set('::1', ON_LINK_MAC);
    const { reply } = await s.browser('::1').submit({ username: 'bob', password: PASSWORD });
    expect(reply.status).toBe(303);
    expect(s.sessions.list()).toMatchObject([
      {
        key: { kind: 'ip', value: '::1' },
        username: 'bob',
        source: 'registration',
        idleTimeoutMs: 60 * 60_000,
      },
      { key: { kind: 'mac', value: ON_LINK_MAC }, username: 'bob', source: 'registration' },
    ]);
  });

  it('explains why a routed device cannot be found, and registers nothing when the MAC is gone by the POST', async () => {
    const s = await start('registration');
    const routed = await s.browser('127.0.0.7').get('/portal/');
    expectPage(routed, 403, 'mac_not_found');
    expect(routed.text).toMatch(/router/);
    expect(routed.text).toMatch(/subnet or VLAN/);
    expect(routed.text).not.toContain('portal-form');
    // The lookup's own details (the router, the proxy's interfaces) go to the log, never to the visitor.
    expect(routed.text).not.toContain('10.9.9.1');

    s.macs.set('127.0.0.8', ON_LINK_MAC);
    const b = s.browser('127.0.0.8');
    const page = await b.get('/portal/');
    s.macs.answers.delete('127.0.0.8');
    const reply = await b.post('/portal/', {
      csrf: hiddenOf(page, 'csrf'),
      url: '',
      username: 'alice',
      password: PASSWORD,
    });
    expectPage(reply, 403, 'mac_not_found');
    expect(s.directory.calls).toEqual([]);
    expect(s.rows()).toEqual([]);
  });
});

describe('CSRF', () => {
  const post = async (s: Splash, fields: Record<string, string>) => {
    const b = s.browser();
    const page = await b.get('/portal/');
    return {
      b,
      page,
      reply: await b.post('/portal/', { url: '', username: 'alice', password: PASSWORD, ...fields }),
    };
  };

  it('sets the nonce cookie HttpOnly, SameSite=Lax, on the portal path', async () => {
    const s = await start('authentication');
    const page = await s.browser().get('/portal/');
    expect(page.headers['set-cookie']).toEqual([
      expect.stringMatching(
        /^doorman_portal=[A-Za-z0-9_-]{43}; Path=\/portal\/; Max-Age=3600; HttpOnly; SameSite=Lax$/,
      ),
    ]);
  });

  it('refuses a missing, wrong, other-address or expired token with 403 csrf, recording nothing', async () => {
    const s = await start('authentication');
    expectPage((await post(s, {})).reply, 403, 'csrf');
    expectPage((await post(s, { csrf: 'x' })).reply, 403, 'csrf');

    const { b, page } = await post(s, { csrf: 'x' });
    const token = hiddenOf(page, 'csrf');
    // The same cookie and token from another address.
    const elsewhere = s.browser('127.0.0.2');
    for (const [name, c] of b.cookies) elsewhere.cookies.set(name, c);
    const moved = await elsewhere.post('/portal/', {
      csrf: token,
      url: '',
      username: 'alice',
      password: PASSWORD,
    });
    expectPage(moved, 403, 'csrf');
    // Without the cookie.
    const bare = await s
      .browser()
      .post('/portal/', { csrf: token, url: '', username: 'alice', password: PASSWORD });
    expectPage(bare, 403, 'csrf');
    // An hour later.
    s.clock.advance(HOUR);
    const late = await b.post('/portal/', { csrf: token, url: '', username: 'alice', password: PASSWORD });
    expectPage(late, 403, 'csrf');
    expect(late.text).toContain('href="/portal/"');
    expect(s.directory.calls).toEqual([]);
    expect(s.rows()).toEqual([]);
  });
});

describe('after the sign-in, only a URL the ICAP service signed is followed', () => {
  const PHISH = 'https://evil.example/sign-in-again';

  it('a crafted portal/?url= link: the form carries no URL, and the sign-in ends on portal/done', async () => {
    const s = await start('authentication');
    const b = s.browser('127.0.0.2');
    const { page, reply } = await b.submit(
      { username: 'alice', password: PASSWORD },
      PHISH,
      `url=${encodeURIComponent(PHISH)}`,
    );
    expectPage(page, 200, undefined);
    expect(hiddenOf(page, 'url')).toBe('');
    expect(hiddenOf(page, 'sig')).toBe('');
    expect(reply).toMatchObject({ status: 303, headers: { location: '/portal/done' } });
    expect(s.sessions.find({ kind: 'ip', value: '127.0.0.2' })).toMatchObject({ username: 'alice' });
  });

  it.each([
    ['no signature', (_s: Splash) => ''],
    ['a signature for another device', (s: Splash) => s.portalUrls.sign(PHISH, '127.0.0.9')],
    ['a signature for another URL', (s: Splash) => s.portalUrls.sign(ORIGINAL, '127.0.0.2')],
    ['a malformed signature', () => 'x'.repeat(40)],
    ['an oversized signature', () => '1'.repeat(5000)],
  ])('a crafted form with %s: signed in, then portal/done, and the log says why', async (_what, sigOf) => {
    const s = await start('authentication');
    const b = s.browser('127.0.0.2');
    const page = await b.get('/portal/');
    const reply = await b.post('/portal/', {
      csrf: hiddenOf(page, 'csrf'),
      url: PHISH,
      sig: sigOf(s),
      username: 'alice',
      password: PASSWORD,
    });
    expect(reply).toMatchObject({ status: 303, headers: { location: '/portal/done' } });
    expect(s.logs.join('\n')).toMatch(
      /127\.0\.0\.2: not going on to the url given \((missing|forged|malformed)\)/,
    );
  });

  it('a signed URL left open past its lifetime (10 minutes) ends on portal/done too', async () => {
    const s = await start('agreement');
    await s.groups.create({ name: 'Lab', cidrs: ['127.0.0.0/24'] });
    const b = s.browser();
    const page = await b.get(`/portal/?${s.signedQuery(ORIGINAL, '127.0.0.1')}`);
    expect(hiddenOf(page, 'url')).toBe(ORIGINAL);
    s.clock.advance(10 * 60_000);
    const reply = await b.post('/portal/', {
      csrf: hiddenOf(page, 'csrf'),
      url: ORIGINAL,
      sig: hiddenOf(page, 'sig'),
    });
    expect(reply).toMatchObject({ status: 303, headers: { location: '/portal/done' } });
    expect(s.logs).toContainEqual('portal: 127.0.0.1: not going on to the url given (expired)');
  });

  it('a connected device is offered "Continue to" only for a signed URL', async () => {
    const s = await start('authentication');
    await s.browser().submit({ username: 'alice', password: PASSWORD });
    const b = s.browser();
    const crafted = await b.get(`/portal/?url=${encodeURIComponent(PHISH)}`);
    expectPage(crafted, 200, 'connected');
    expect(crafted.text).not.toContain('evil.example');
    const signed = await b.get(`/portal/?${s.signedQuery(ORIGINAL, '127.0.0.1')}`);
    expect(signed.text).toContain('id="next"');
  });
});

describe('bad input: a clear 4xx page, nothing recorded', () => {
  it.each([
    ['javascript:', 'javascript:alert(1)'],
    ['data:', 'data:text/html,<script>alert(1)</script>'],
    ['protocol-relative', '//evil.example/'],
    ['no slashes', 'http:evil.example'],
    ['ftp', 'ftp://example.com/'],
    ['credentials', 'http://bank.example@evil.example/'],
    ['a control character', 'http://example.com/\u0000'],
    ['too long', `http://example.com/${'a'.repeat(2000)}`],
  ])('refuses url=%s on the page and in the form', async (_what, url) => {
    const s = await start('authentication');
    const b = s.browser();
    const page = await b.get(`/portal/?url=${encodeURIComponent(url)}`);
    expectPage(page, 400, 'bad_request');
    expect(page.text).toContain('url: ');
    const good = await b.get('/portal/');
    const reply = await b.post('/portal/', {
      csrf: hiddenOf(good, 'csrf'),
      url,
      username: 'alice',
      password: PASSWORD,
    });
    expectPage(reply, 400, 'bad_request');
    expect(s.directory.calls).toEqual([]);
    expect(s.rows()).toEqual([]);
  });

  it('refuses a 10 kB user name, an empty one, a control character, an over-long password', async () => {
    const s = await start('authentication');
    const b = s.browser();
    for (const [username, password] of [
      ['a'.repeat(10_000), PASSWORD],
      ['', PASSWORD],
      ['al\u0007ice', PASSWORD],
      ['alice', ''],
      ['alice', 'p'.repeat(1025)],
    ] as const) {
      const { reply } = await b.submit({ username, password });
      expectPage(reply, 400, 'bad_request');
      expect(reply.text).not.toContain('a'.repeat(300));
    }
    expect(s.directory.calls).toEqual([]);
    expect(s.rows()).toEqual([]);
  });

  it('refuses an oversized body (413), a repeated field, another content type (415)', async () => {
    const s = await start('authentication');
    const b = s.browser();
    const page = await b.get('/portal/');
    const csrf = hiddenOf(page, 'csrf');
    const big = await b.post('/portal/', { csrf, url: '', username: 'alice', password: 'x'.repeat(40_000) });
    expectPage(big, 413, 'bad_request');
    const twice = await b.post('/portal/', `csrf=${csrf}&username=alice&username=bob&password=x`);
    expectPage(twice, 400, 'bad_request');
    expect(twice.text).toContain('username: given more than once');
    const json = await b.send({
      method: 'POST',
      path: '/portal/',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    expectPage(json, 415, 'bad_request');
    const put = await b.send({ method: 'PUT', path: '/portal/' });
    expectPage(put, 405, 'bad_request');
    expect(put.headers.allow).toBe('GET, HEAD, POST');
    expect(s.rows()).toEqual([]);
  });

  it('escapes everything it shows: the typed name, the policy, the URL', async () => {
    const s = await start('authentication', '<b>bold</b> "quoted" & \'single\'');
    const b = s.browser();
    const url = 'http://example.com/?q="><img/src=x>';
    const { page, reply } = await b.submit(
      { username: '<img src=x onerror=alert(1)>', password: 'x', agree: 'yes' },
      url,
    );
    expect(page.text).toContain('&lt;b&gt;bold&lt;/b&gt; &quot;quoted&quot; &amp; &#39;single&#39;');
    expect(page.text).not.toContain('<img');
    expect(reply.text).toContain('value="&lt;img src=x onerror=alert(1)&gt;"');
    expect(reply.text).not.toContain('<img');
  });
});

describe('the RFC 8908 Captive Portal API', () => {
  it('says captive until the device is connected, then the seconds left and that it cannot extend', async () => {
    const s = await start('authentication');
    const b = s.browser();
    const before = await b.get('/portal/api');
    expect(before.status).toBe(200);
    expect(before.headers['content-type']).toBe('application/captive+json');
    expect(before.headers['cache-control']).toBe('private, no-store');
    expect(JSON.parse(before.text)).toEqual({
      captive: true,
      'user-portal-url': 'http://127.0.0.1:8180/portal/',
    });
    await b.submit({ username: 'alice', password: PASSWORD });
    s.clock.advance(60_000);
    expect(JSON.parse((await b.get('/portal/api')).text)).toEqual({
      captive: false,
      'user-portal-url': 'http://127.0.0.1:8180/portal/',
      'seconds-remaining': 479 * 60,
      'can-extend-session': false,
    });
    // Idle past the limit (and the helpers' flush interval): captive again.
    s.clock.advance(61 * 60_000);
    expect(JSON.parse((await b.get('/portal/api')).text)).toMatchObject({ captive: true });
  });

  it('leaves seconds-remaining out for a session without a hard expiry', async () => {
    const s = await start('authentication');
    await s.set({ hardTimeoutMinutes: null });
    const b = s.browser();
    await b.submit({ username: 'alice', password: PASSWORD });
    expect(JSON.parse((await b.get('/portal/api')).text)).toEqual({
      captive: false,
      'user-portal-url': 'http://127.0.0.1:8180/portal/',
      'can-extend-session': false,
    });
  });

  it('counts a registered MAC as connected in registration mode', async () => {
    const s = await start('registration');
    s.macs.set('127.0.0.3', ON_LINK_MAC);
    const b = s.browser('127.0.0.3');
    await b.submit({ username: 'alice', password: PASSWORD });
    expect(JSON.parse((await b.get('/portal/api')).text)).toMatchObject({ captive: false });
  });
});

describe('the pages themselves', () => {
  it('serve under the path of baseUrl, with the cookie and form there', async () => {
    const s = (splash = await startSplash({ baseUrl: 'https://portal.example/doorman/' }));
    await s.set({ mode: 'authentication' });
    const b = s.browser();
    const page = await b.get('/doorman/portal/');
    expect(page.text).toContain('action="/doorman/portal/"');
    expect(page.text).toContain('href="/doorman/portal/style.css"');
    expect(page.headers['set-cookie']?.[0]).toMatch(/; Path=\/doorman\/portal\/; .*SameSite=Lax; Secure$/);
    expect(await b.get('/doorman/portal?url=http%3A%2F%2Fa.example%2F')).toMatchObject({
      status: 303,
      headers: { location: '/doorman/portal/?url=http%3A%2F%2Fa.example%2F' },
    });
    const { reply } = await b.submit({ username: 'alice', password: PASSWORD });
    expect(reply.headers.location).toBe('/doorman/portal/done');
    expect(JSON.parse((await b.get('/doorman/portal/api')).text)['user-portal-url']).toBe(
      'https://portal.example/doorman/portal/',
    );
    const css = await b.get('/doorman/portal/style.css');
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.text).toContain(':focus-visible');
  });

  it('reads the mode on every request: a change applies at once', async () => {
    const s = await start('authentication');
    const b = s.browser();
    expect((await b.get('/portal/')).text).toContain('id="username"');
    await s.set({ mode: 'off' });
    expect(codeOf(await b.get('/portal/'))).toBe('portal_off');
  });

  it('answers 503 when the session DB stays locked by another process, and records nothing', async () => {
    const s = (splash = await startSplash({}, {}, { file: true }));
    await s.set({ mode: 'authentication' });
    const b = s.browser();
    const page = await b.get('/portal/');
    const other = new Database(s.file as string);
    try {
      other.exec('BEGIN IMMEDIATE');
      const pending = b.post('/portal/', {
        csrf: hiddenOf(page, 'csrf'),
        url: '',
        username: 'alice',
        password: PASSWORD,
      });
      // Past the busy deadline while the write is retried on timers.
      await new Promise((resolve) => setTimeout(resolve, 50));
      s.clock.advance(6_000);
      const reply = await pending;
      expectPage(reply, 503, 'unavailable');
      expect(reply.headers['retry-after']).toBe('5');
      other.exec('ROLLBACK');
    } finally {
      other.close();
    }
    expect(s.rows()).toEqual([]);
  });
});
