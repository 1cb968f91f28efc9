import { afterEach, describe, expect, it } from 'vitest';
import { localDate, type PortalSettings } from '../../../../lib/portal/settings.ts';
import type { Schedule } from '../../../../lib/store/busy.ts';
import type { SessionKey, SessionSource } from '../../../../lib/store/session.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import type { Reply } from '../harness.ts';
import {
  csrfOf,
  SETTINGS,
  startAdminPortal,
  type AdminPortal,
  type AdminPortalOptions,
  type Browser,
  textOf,
} from './harness.ts';
import { ip } from '../../../support/session-keys.ts';

let portal: AdminPortal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

const DAY = 24 * 60 * 60 * 1000;

/**
 * A portal, a signed-in browser, and the CSRF token of its portal page; a directory is applied unless
 * `noDirectory` (the sign-in modes need one).
 */
async function signedIn(setup: AdminPortalOptions & { noDirectory?: boolean } = {}): Promise<{
  p: AdminPortal;
  b: Browser;
  csrf: string;
  page: Reply;
}> {
  const { noDirectory, ...options } = setup;
  const p = (portal = await startAdminPortal({}, {}, options));
  if (noDirectory !== true) p.directory.stored = { settings: SETTINGS, password: 'bind-password' };
  const b = p.browser();
  await b.signIn();
  const page = await b.get('/admin/portal');
  return { p, b, csrf: csrfOf(page), page };
}

/** The settings form as a browser sends it: every field, the given ones changed. */
function settingsForm(p: AdminPortal, fields: Record<string, string> = {}): Record<string, string> {
  return {
    mode: 'authentication',
    idleTimeoutMinutes: '30',
    hardTimeoutMinutes: '240',
    registrationClearDate: localDate(p.clock.now() + 30 * DAY),
    policyText: 'Be nice.\r\nNo torrents.',
    walledHosts: 'Help.Example.com\r\n\r\n*.cdn.example.net',
    walledCidrs: '192.0.2.9/24\r\n2001:db8::1',
    ...fields,
  };
}

/** The `<div class="field…">` block of one form field (ids f-NAME, or g-NAME for a Device Group's). */
function fieldBlock(page: string, id: string): string {
  const start = page.search(new RegExp(`<div class="field[^"]*">\\s*<label (class="choice" )?for="${id}"`));
  if (start < 0) throw new Error(`no field ${id} on the page:\n${page}`);
  return page.slice(start, page.indexOf('</div>', start));
}

/** The error summary at the top of a page. */
function summaryOf(page: string): string {
  const at = page.indexOf('id="problem-summary"');
  if (at < 0) throw new Error(`no error summary on the page:\n${page}`);
  const start = page.indexOf('>', at) + 1;
  return page.slice(start, page.indexOf('</div>', start));
}

function noticeOf(page: string): string {
  const at = page.indexOf('id="portal-notice"');
  if (at < 0) throw new Error(`no notice on the page:\n${page}`);
  const start = page.indexOf('>', at) + 1;
  return page.slice(start, page.indexOf('</div>', start));
}

function startSession(p: AdminPortal, source: SessionSource, key: SessionKey, username = 'someone'): void {
  p.sessions.start({ key, source, username });
}

describe('the captive portal screen', () => {
  it('sends a visitor who is not signed in to the sign-in page, for every page and form', async () => {
    const p = (portal = await startAdminPortal());
    const b = p.browser();
    for (const [method, path] of [
      ['GET', '/admin/portal'],
      ['POST', '/admin/portal'],
      ['POST', '/admin/portal/clear-sessions'],
      ['POST', '/admin/portal/groups'],
      ['GET', '/admin/portal/groups/1'],
      ['POST', '/admin/portal/groups/1/remove'],
    ] as const) {
      const reply = method === 'GET' ? await b.get(path) : await b.post(path, {});
      expect(reply.status, path).toBe(303);
      expect(reply.headers.location, path).toBe('/admin/sign-in');
    }
  });

  it('shows the settings in force, the server’s time zone, the session count and the groups; no-store, no script', async () => {
    const { p, page } = await signedIn({ timeZone: 'Pacific/Chatham' });
    expect(page.status).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.text).not.toMatch(/<script/i);
    // The mode is a radio group with a legend; each mode has a one-line explanation tied to its button.
    expect(page.text).toMatch(/<fieldset[^>]*>\s*<legend id="f-mode">Mode<\/legend>/);
    for (const [mode, label] of [
      ['off', 'Off'],
      ['agreement', 'Usage Agreement Only'],
      ['authentication', 'Authentication'],
      ['registration', 'Device Registration'],
    ]) {
      expect(page.text).toContain(`<label for="f-mode-${mode}">${label}</label>`);
      expect(page.text).toMatch(new RegExp(`id="f-mode-${mode}"[^>]*aria-describedby="f-mode-${mode}-hint"`));
    }
    expect(page.text).toMatch(/id="f-mode-off"[^>]*checked/);
    // Every other input has its label; the hard timeout says its unit; the date names the time zone.
    for (const name of [
      'idleTimeoutMinutes',
      'hardTimeoutMinutes',
      'registrationClearDate',
      'policyText',
      'walledHosts',
      'walledCidrs',
    ]) {
      expect(page.text, name).toMatch(new RegExp(`<label for="f-${name}">`));
      expect(page.text, name).toMatch(new RegExp(`id="f-${name}"\\s+name="${name}"`));
    }
    expect(page.text).toContain('<label for="f-hardTimeoutMinutes">Hard timeout (minutes)</label>');
    expect(page.text).toMatch(/type="date"\s+id="f-registrationClearDate"/);
    expect(textOf(page.text)).toContain(
      `in the server’s time zone, Pacific/Chatham; today there is ${localDate(p.clock.now())}`,
    );
    // The defaults: 60 and 480 minutes.
    expect(fieldBlock(page.text, 'f-idleTimeoutMinutes')).toContain('value="60"');
    expect(fieldBlock(page.text, 'f-hardTimeoutMinutes')).toContain('value="480"');
    expect(page.text).toContain(
      '<p id="portal-session-count">0 devices are signed in through the portal.</p>',
    );
    expect(page.text).toContain('There are no Device Groups yet.');
    // Navigation between the two screens, this one marked.
    expect(page.text).toMatch(/<a href="\/admin\/portal" aria-current="page"\s*>Captive portal<\/a/);
    expect(page.text).toMatch(/<a href="\/admin\/directory"\s*>Directory service<\/a/);
  });

  it('the directory screen links to this one', async () => {
    const { b } = await signedIn();
    const directory = await b.get('/admin/directory');
    expect(directory.text).toMatch(/<a href="\/admin\/portal"\s*>Captive portal<\/a/);
    expect(directory.text).toMatch(
      /<a href="\/admin\/directory" aria-current="page"\s*>Directory service<\/a/,
    );
  });
});

describe('saving the portal settings', () => {
  const tmp = useTempDb('doorman-admin-portal-');
  it('saves every field, says what changed, and offers Clear current sessions', async () => {
    const { p, b, csrf } = await signedIn();
    startSession(p, 'portal', ip('10.0.0.2'));
    const form = settingsForm(p);
    const saved = await b.post('/admin/portal', { ...form, csrf });
    expect(saved.status).toBe(200);
    const stored = p.portalSettings.load();
    expect(stored).toEqual<PortalSettings>({
      mode: 'authentication',
      idleTimeoutMinutes: 30,
      hardTimeoutMinutes: 240,
      registrationClearDate: form.registrationClearDate ?? '',
      policyText: 'Be nice.\nNo torrents.',
      walledGarden: {
        hosts: ['help.example.com', '*.cdn.example.net'],
        cidrs: ['192.0.2.0/24', '2001:db8::1/128'],
      },
    });
    const notice = textOf(noticeOf(saved.text));
    expect(notice).toContain('The settings are saved and in force.');
    expect(notice).toContain('Mode: Off → Authentication');
    expect(notice).toContain('Idle timeout: 60 minutes → 30 minutes');
    expect(notice).toContain('Hard timeout: 480 minutes → 240 minutes');
    expect(notice).toContain(`Registration clear date: never → ${form.registrationClearDate}`);
    expect(notice).toContain('Usage policy: added');
    expect(notice).toContain('Walled garden: 0 host names, 0 networks → 2 host names, 2 networks');
    expect(notice).toContain('1 device is signed in through the portal.');
    expect(notice).toContain('a change of mode does not end them');
    // The offer: a POST form to clear-sessions with this session's CSRF token.
    expect(noticeOf(saved.text)).toMatch(
      new RegExp(
        `<form method="post" action="/admin/portal/clear-sessions">\\s*<input type="hidden" name="csrf" value="${csrf}" />\\s*<button type="submit" id="clear-sessions">Clear current sessions</button>`,
      ),
    );
    // The form shows what is stored now, normalised.
    expect(fieldBlock(saved.text, 'f-walledCidrs')).toContain('192.0.2.0/24\n2001:db8::1/128</textarea');
    expect(saved.text).toMatch(/id="f-mode-authentication"[^>]*checked/);
    expect(p.logs.some((l) => l.includes('admin: "root" saved the portal settings (changed: mode,'))).toBe(
      true,
    );

    // Saving the same again: still a notice, nothing changed, still the offer.
    const again = await b.post('/admin/portal', { ...form, csrf });
    expect(textOf(noticeOf(again.text))).toContain('Nothing changed.');
    expect(noticeOf(again.text)).toContain('Clear current sessions');
  });

  it('blank timeouts and date are none; the policy may be blank outside Usage Agreement Only', async () => {
    const { p, b, csrf } = await signedIn();
    const saved = await b.post('/admin/portal', {
      ...settingsForm(p, {
        idleTimeoutMinutes: '',
        hardTimeoutMinutes: ' ',
        registrationClearDate: '',
        policyText: '',
      }),
      csrf,
    });
    expect(saved.status).toBe(200);
    expect(p.portalSettings.load()).toMatchObject({
      idleTimeoutMinutes: null,
      hardTimeoutMinutes: null,
      registrationClearDate: null,
      policyText: '',
    });
    expect(textOf(noticeOf(saved.text))).toContain('Idle timeout: 60 minutes → none');
  });

  const today = () => localDate(portal?.clock.now() ?? 0);
  it.each([
    ['mode', 'sometimes', /"sometimes" is not one of the four modes/],
    ['mode', '', /choose one of the four modes/],
    ['idleTimeoutMinutes', 'ten', /"ten" is not a whole number of minutes from 1 to 525600/],
    ['idleTimeoutMinutes', '0', /"0" is not a whole number of minutes from 1 to 525600 .*blank for none/],
    ['idleTimeoutMinutes', '1.5', /"1.5" is not a whole number of minutes/],
    ['hardTimeoutMinutes', '-5', /"-5" is not a whole number of minutes/],
    ['hardTimeoutMinutes', '525601', /"525601" is not a whole number of minutes from 1 to 525600/],
    ['registrationClearDate', '2027-02-30', /"2027-02-30" is not a date written YYYY-MM-DD/],
    ['registrationClearDate', 'next week', /"next week" is not a date written YYYY-MM-DD/],
    [
      'registrationClearDate',
      '2020-01-01',
      /"2020-01-01" is not in the future \(today is \d{4}-\d\d-\d\d, server local time\)/,
    ],
    ['registrationClearDate', 'TODAY', /is not in the future/],
    ['policyText', 'Bell\u0007', /must be plain text: no control characters/],
    ['walledHosts', 'ok.example.com\n\nnot a host', /line 3: "not a host" is not a host name or \*\.domain/],
    ['walledHosts', '10.0.0.1', /line 1: "10.0.0.1" is not a host name/],
    [
      'walledCidrs',
      '10.0.0.0/8\n10.0.0.0/33',
      /line 2: "10.0.0.0\/33" is not an IPv4 or IPv6 address or network/,
    ],
  ])(
    '%s = %j: refused next to the field, named with its value; the form as typed; nothing saved',
    async (field, typed, message) => {
      const { p, b, csrf } = await signedIn();
      const value = typed === 'TODAY' ? today() : typed;
      const versionBefore = p.portalSettings.version();
      const refused = await b.post('/admin/portal', { ...settingsForm(p, { [field]: value }), csrf });
      expect(refused.status).toBe(400);
      expect(p.portalSettings.version()).toBe(versionBefore);
      expect(p.portalSettings.load().mode).toBe('off');
      const summary = textOf(summaryOf(refused.text));
      expect(summary).toContain('1 field needs attention. Nothing was saved');
      expect(summary).toMatch(message);
      const shown =
        field === 'mode'
          ? refused.text.slice(refused.text.indexOf('<legend id="f-mode">'))
          : fieldBlock(refused.text, `f-${field}`);
      expect(textOf(shown)).toMatch(message);
      if (field !== 'mode') {
        expect(shown).toContain(`<p class="problem" id="f-${field}-problem">`);
        expect(shown).toMatch(
          new RegExp(`aria-invalid="true"\\s+aria-describedby="f-${field}-problem f-${field}-hint"`),
        );
        // What was typed is there again (escaped; a textarea's lines with LF).
        const escaped = value.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
        expect(shown).toContain(escaped);
        // The summary links to the field.
        expect(summaryOf(refused.text)).toContain(`<a href="#f-${field}">`);
      } else {
        expect(summaryOf(refused.text)).toContain('<a href="#f-mode-off">Mode</a>');
      }
      // The other fields keep what was typed too.
      if (field !== 'idleTimeoutMinutes')
        expect(fieldBlock(refused.text, 'f-idleTimeoutMinutes')).toContain('value="30"');
      expect(fieldBlock(refused.text, 'f-policyText')).toContain(
        field === 'policyText' ? 'Bell\u0007' : 'Be nice.\nNo torrents.',
      );
    },
  );

  it.each(['authentication', 'registration'])(
    'refuses the %s mode while no directory is applied, next to the mode, saving nothing',
    async (mode) => {
      const { p, b, csrf } = await signedIn({ noDirectory: true });
      const refused = await b.post('/admin/portal', { ...settingsForm(p, { mode }), csrf });
      expect(refused.status).toBe(400);
      expect(p.portalSettings.version()).toBe(0);
      const said = `"${mode}" signs users in with a directory account, and no directory is applied: apply one first`;
      expect(textOf(summaryOf(refused.text))).toContain(said);
      expect(textOf(refused.text.slice(refused.text.indexOf('<legend id="f-mode">')))).toContain(said);
      // Usage Agreement Only asks no directory: saved.
      const agreement = await b.post('/admin/portal', { ...settingsForm(p, { mode: 'agreement' }), csrf });
      expect(agreement.status).toBe(200);
      expect(p.portalSettings.load().mode).toBe('agreement');
    },
  );

  it('Usage Agreement Only needs a policy', async () => {
    const { p, b, csrf } = await signedIn();
    const refused = await b.post('/admin/portal', {
      ...settingsForm(p, { mode: 'agreement', policyText: '  \r\n ' }),
      csrf,
    });
    expect(refused.status).toBe(400);
    expect(textOf(fieldBlock(refused.text, 'f-policyText'))).toContain(
      'is required in the agreement mode (Usage Agreement Only)',
    );
    expect(p.portalSettings.version()).toBe(0);
  });

  it('lists every problem at once, each next to its field, and saves nothing', async () => {
    const { p, b, csrf } = await signedIn();
    const refused = await b.post('/admin/portal', {
      ...settingsForm(p, {
        mode: 'agreement',
        policyText: '',
        idleTimeoutMinutes: 'x',
        registrationClearDate: '2020-01-01',
        walledHosts: 'bad host',
        walledCidrs: 'nope',
      }),
      csrf,
    });
    expect(refused.status).toBe(400);
    expect(p.portalSettings.version()).toBe(0);
    const summary = textOf(summaryOf(refused.text));
    expect(summary).toContain('5 fields need attention.');
    for (const field of [
      'idleTimeoutMinutes',
      'registrationClearDate',
      'policyText',
      'walledHosts',
      'walledCidrs',
    ]) {
      expect(summaryOf(refused.text), field).toContain(`<a href="#f-${field}">`);
      expect(fieldBlock(refused.text, `f-${field}`), field).toContain('class="problem"');
    }
    expect(refused.text).toMatch(/id="f-mode-agreement"[^>]*checked/);
  });

  it('keeps a clear date that has passed since it was saved, but refuses to set a new past one', async () => {
    const { p, b, csrf } = await signedIn();
    const date = localDate(p.clock.now() + 2 * DAY);
    expect(
      (await b.post('/admin/portal', { ...settingsForm(p, { registrationClearDate: date }), csrf })).status,
    ).toBe(200);
    p.clock.advance(5 * DAY);
    // A new admin session: the first has expired meanwhile.
    await b.signIn();
    const fresh = csrfOf(await b.get('/admin/portal'));
    const kept = await b.post('/admin/portal', {
      ...settingsForm(p, { registrationClearDate: date, idleTimeoutMinutes: '10' }),
      csrf: fresh,
    });
    expect(kept.status).toBe(200);
    expect(p.portalSettings.load()).toMatchObject({ registrationClearDate: date, idleTimeoutMinutes: 10 });
    const earlier = localDate(p.clock.now() - DAY);
    const refused = await b.post('/admin/portal', {
      ...settingsForm(p, { registrationClearDate: earlier }),
      csrf: fresh,
    });
    expect(refused.status).toBe(400);
    expect(textOf(fieldBlock(refused.text, 'f-registrationClearDate'))).toContain(
      `"${earlier}" is not in the future`,
    );
  });

  it('escapes what was typed: a policy with markup is text on the page', async () => {
    const { p, b, csrf } = await signedIn();
    const policy = '</textarea><script>alert(1)</script> & "quotes"';
    const saved = await b.post('/admin/portal', { ...settingsForm(p, { policyText: policy }), csrf });
    expect(saved.status).toBe(200);
    expect(saved.text).not.toContain('<script>');
    expect(fieldBlock(saved.text, 'f-policyText')).toContain(
      '&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;</textarea',
    );
    const refused = await b.post('/admin/portal', {
      ...settingsForm(p, { idleTimeoutMinutes: '"><b>' }),
      csrf,
    });
    expect(refused.text).not.toContain('"><b>');
    expect(refused.text).toContain('value="&quot;&gt;&lt;b&gt;"');
  });

  it('names the shortest idle timeout the configuration allows beside the field', async () => {
    const { page } = await signedIn({ leastIdleMinutes: 3 });
    expect(textOf(page.text)).toContain(
      'a session ends after this long without web traffic. From 3 to 525600',
    );
  });

  it('Clear current sessions waits on timers while another process holds the lock, then clears', async () => {
    const holder = tmp.connect();
    let waits = 0;
    const schedule: Schedule = (task) => {
      // The first wait: the other process commits and lets go.
      if (waits++ === 0) holder.exec('ROLLBACK');
      setImmediate(task);
    };
    const { p, b, csrf } = await signedIn({ db: tmp.connect({ busyTimeoutMs: 0 }), schedule });
    startSession(p, 'portal', ip('10.9.0.5'), 'alice');
    holder.exec('BEGIN IMMEDIATE');
    const cleared = await b.post('/admin/portal/clear-sessions', { csrf });
    expect(cleared.status).toBe(200);
    expect(waits).toBeGreaterThan(0);
    expect(textOf(noticeOf(cleared.text))).toContain('1 portal session ended.');
    expect(p.sessions.list()).toEqual([]);
  });

  it('answers the clear 503 while another process holds the session DB, and saves nothing', async () => {
    // The store's waits happen at once, moving the test's clock on: its 5-second deadline passes in no time.
    const clockRef: { advance?: (ms: number) => void } = {};
    const schedule: Schedule = (task, ms) => {
      clockRef.advance?.(ms);
      setImmediate(task);
    };
    const { p, b, csrf } = await signedIn({ db: tmp.connect({ busyTimeoutMs: 0 }), schedule });
    clockRef.advance = (ms) => p.clock.advance(ms);
    const holder = tmp.connect();
    holder.exec('BEGIN IMMEDIATE');
    const refused = await b.post('/admin/portal', { ...settingsForm(p), csrf });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.headers['content-type']).toMatch(/^text\/html/);
    expect(textOf(refused.text)).toContain(
      'the session database is locked by another process; try again in 5 seconds',
    );
    holder.exec('ROLLBACK');
    expect(p.portalSettings.version()).toBe(0);
    // Once the lock is free, the same form saves.
    expect((await b.post('/admin/portal', { ...settingsForm(p), csrf })).status).toBe(200);
  });
});

describe('the forms refuse a missing or wrong CSRF token and change nothing', () => {
  it.each([
    ['missing', undefined],
    ['wrong', 'not-the-token'],
  ])('%s token', async (_, token) => {
    const { p, b } = await signedIn();
    const group = await p.deviceGroups.create({ name: 'Lab', cidrs: ['10.9.0.0/16'] });
    startSession(p, 'agreement', ip('10.9.0.5'), 'agreement:Lab');
    const csrf = token === undefined ? {} : { csrf: token };
    const posts: [string, Record<string, string>][] = [
      ['/admin/portal', settingsForm(p)],
      ['/admin/portal/clear-sessions', {}],
      ['/admin/portal/groups', { name: 'Guests', cidrs: '10.8.0.0/16', active: 'on' }],
      [`/admin/portal/groups/${group.id}`, { name: 'Renamed', cidrs: '10.7.0.0/16' }],
      [`/admin/portal/groups/${group.id}/remove`, {}],
    ];
    for (const [path, form] of posts) {
      const refused = await b.post(path, { ...form, ...csrf });
      expect(refused.status, path).toBe(403);
      expect(textOf(refused.text), path).toContain('this form has expired or did not come from this site');
    }
    expect(p.portalSettings.version()).toBe(0);
    expect(p.deviceGroups.list()).toEqual([group]);
    expect(p.sessions.list()).toHaveLength(1);
  });
});

describe('Clear current sessions', () => {
  it('ends every session the portal made and says how many; API sessions stay', async () => {
    const { p, b, csrf } = await signedIn();
    startSession(p, 'api', ip('10.0.0.1'), 'alice');
    startSession(p, 'portal', ip('10.0.0.2'), 'bob');
    startSession(p, 'agreement', ip('10.0.0.3'), 'agreement:Guests');
    startSession(p, 'registration', { kind: 'mac', value: '52:54:00:aa:bb:cc' }, 'carol');
    startSession(p, 'registration', ip('2001:db8::5'), 'carol');
    const page = await b.get('/admin/portal');
    expect(page.text).toContain(
      '<p id="portal-session-count">4 devices are signed in through the portal.</p>',
    );

    const cleared = await b.post('/admin/portal/clear-sessions', { csrf });
    expect(cleared.status).toBe(200);
    expect(textOf(noticeOf(cleared.text))).toContain('4 portal sessions ended.');
    expect(cleared.text).toContain(
      '<p id="portal-session-count">0 devices are signed in through the portal.</p>',
    );
    expect(p.sessions.list().map((s) => [s.source, s.username])).toEqual([['api', 'alice']]);
    expect(p.logs.some((l) => l.includes('cleared the current portal sessions: 4 ended'))).toBe(true);

    const again = await b.post('/admin/portal/clear-sessions', { csrf });
    expect(textOf(noticeOf(again.text))).toContain('0 portal sessions ended.');
  });

  it('is a POST only', async () => {
    const { b } = await signedIn();
    const reply = await b.get('/admin/portal/clear-sessions');
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe('POST');
  });
});

describe('Device Groups', () => {
  it('adds, lists, edits and removes a group', async () => {
    const { p, b, csrf } = await signedIn();
    const added = await b.post('/admin/portal/groups', {
      csrf,
      name: 'Guests',
      cidrs: '10.20.0.9/16\r\n\r\n2001:DB8:5::/48',
      active: 'on',
    });
    expect(added.status).toBe(200);
    expect(textOf(noticeOf(added.text))).toBe('The Device Group Guests is added.');
    const [group] = p.deviceGroups.list();
    expect(group).toMatchObject({ name: 'Guests', cidrs: ['10.20.0.0/16', '2001:db8:5::/48'], active: true });
    if (group === undefined) throw new Error('not added');
    const table = added.text.slice(added.text.indexOf('<table class="groups">'));
    expect(table).toContain(
      `<a href="/admin/portal/groups/${group.id}">Guests<span class="visually-hidden"> (edit)</span></a>`,
    );
    expect(textOf(table)).toContain('10.20.0.0/16 2001:db8:5::/48 Yes');

    const edit = await b.get(`/admin/portal/groups/${group.id}`);
    expect(edit.status).toBe(200);
    expect(edit.text).toContain('<h1>Device Group “Guests”</h1>');
    expect(fieldBlock(edit.text, 'g-name')).toContain('value="Guests"');
    expect(fieldBlock(edit.text, 'g-cidrs')).toContain('10.20.0.0/16\n2001:db8:5::/48</textarea');
    expect(fieldBlock(edit.text, 'g-active')).toMatch(/checked/);
    expect(edit.text).toContain('Remove the group “Guests”');

    // Unticked: the browser sends no "active" at all.
    startSession(p, 'agreement', ip('10.20.3.4'), 'agreement:Guests');
    const saved = await b.post(`/admin/portal/groups/${group.id}`, {
      csrf: csrfOf(edit),
      name: 'Visitors',
      cidrs: '10.20.0.0/16',
    });
    expect(saved.status).toBe(200);
    const notice = textOf(noticeOf(saved.text));
    expect(notice).toContain('The Device Group Visitors is saved.');
    expect(notice).toContain('1 agreement session ended (devices the change no longer admits).');
    expect(p.deviceGroups.get(group.id)).toMatchObject({
      name: 'Visitors',
      cidrs: ['10.20.0.0/16'],
      active: false,
    });
    expect(textOf(saved.text.slice(saved.text.indexOf('<table class="groups">')))).toContain(
      'Visitors (edit) 10.20.0.0/16 No',
    );

    const removed = await b.post(`/admin/portal/groups/${group.id}/remove`, { csrf });
    expect(removed.status).toBe(200);
    expect(textOf(noticeOf(removed.text))).toContain(
      'The Device Group Visitors is removed. 0 agreement sessions ended',
    );
    expect(p.deviceGroups.list()).toEqual([]);
    expect(removed.text).toContain('There are no Device Groups yet.');
    expect(p.logs.filter((l) => l.includes('Device Group'))).toEqual([
      'admin: "root" added the Device Group "Guests"',
      'admin: "root" changed the Device Group "Visitors"',
      'admin: "root" removed the Device Group "Visitors"',
    ]);
  });

  it('refuses a bad new group with every problem at its field, keeps what was typed, adds nothing', async () => {
    const { p, b, csrf } = await signedIn();
    const refused = await b.post('/admin/portal/groups', {
      csrf,
      name: '',
      cidrs: '10.0.0.0/8\r\n\r\n300.1.2.3',
    });
    expect(refused.status).toBe(400);
    expect(p.deviceGroups.list()).toEqual([]);
    const summary = textOf(summaryOf(refused.text));
    expect(summary).toContain('2 fields need attention. The group was not added.');
    expect(summaryOf(refused.text)).toContain('<a href="#g-name">Name</a>');
    expect(textOf(fieldBlock(refused.text, 'g-name'))).toMatch(/must be 1-64 characters/);
    expect(textOf(fieldBlock(refused.text, 'g-cidrs'))).toContain(
      'line 3: "300.1.2.3" is not an IPv4 or IPv6 address or network',
    );
    expect(fieldBlock(refused.text, 'g-cidrs')).toContain('10.0.0.0/8\n\n300.1.2.3</textarea');
    // Unticked stays unticked.
    expect(fieldBlock(refused.text, 'g-active')).not.toMatch(/checked/);
    // The settings form above is untouched by the group's problems.
    expect(refused.text).not.toContain('id="f-idleTimeoutMinutes-problem"');
  });

  it('refuses a name another group has (in any case), and no networks at all', async () => {
    const { p, b, csrf } = await signedIn();
    await p.deviceGroups.create({ name: 'Guests', cidrs: ['10.1.0.0/16'] });
    const refused = await b.post('/admin/portal/groups', {
      csrf,
      name: 'GUESTS',
      cidrs: '\r\n',
      active: 'on',
    });
    expect(refused.status).toBe(400);
    expect(textOf(fieldBlock(refused.text, 'g-name'))).toContain('"GUESTS" is taken by the group "Guests"');
    expect(textOf(fieldBlock(refused.text, 'g-cidrs'))).toContain('must have at least one entry');
    expect(p.deviceGroups.list()).toHaveLength(1);
  });

  it('refuses a bad edit on the edit page, naming the field and value; the group stays as it was', async () => {
    const { p, b, csrf } = await signedIn();
    const group = await p.deviceGroups.create({ name: 'Lab', cidrs: ['10.9.0.0/16'] });
    const refused = await b.post(`/admin/portal/groups/${group.id}`, {
      csrf,
      name: 'Lab',
      cidrs: '10.9.0.0/16\r\nfe80::/300',
      active: 'on',
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('<h1>Device Group “Lab”</h1>');
    expect(textOf(summaryOf(refused.text))).toContain(
      'Networks: line 2: "fe80::/300" is not an IPv4 or IPv6 address or network',
    );
    expect(fieldBlock(refused.text, 'g-cidrs')).toContain('10.9.0.0/16\nfe80::/300</textarea');
    expect(p.deviceGroups.get(group.id)).toEqual(group);
  });

  it('answers 404 for a group that does not exist, on every route', async () => {
    const { b, csrf } = await signedIn();
    for (const [method, path] of [
      ['GET', '/admin/portal/groups/99'],
      ['POST', '/admin/portal/groups/99'],
      ['POST', '/admin/portal/groups/99/remove'],
      ['GET', '/admin/portal/groups/abc'],
      ['GET', '/admin/portal/groups/007'],
    ] as const) {
      const reply =
        method === 'GET'
          ? await b.get(path)
          : await b.post(path, { csrf, name: 'X', cidrs: '10.0.0.0/8', active: 'on' });
      expect(reply.status, path).toBe(404);
      expect(reply.headers['content-type'], path).toMatch(/^text\/html/);
      expect(textOf(reply.text), path).toMatch(/there is no Device Group/);
    }
  });

  it('escapes a group’s name everywhere it is shown', async () => {
    const { p, b } = await signedIn();
    const group = await p.deviceGroups.create({ name: '<i>x</i> & "y"', cidrs: ['10.9.0.0/16'] });
    for (const path of ['/admin/portal', `/admin/portal/groups/${group.id}`]) {
      const page = await b.get(path);
      expect(page.text, path).not.toContain('<i>x</i>');
      expect(page.text, path).toContain('&lt;i&gt;x&lt;/i&gt; &amp; &quot;y&quot;');
    }
  });
});
