import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { directorySettingsSchema } from '../../../../lib/directory/settings.ts';
import { DoormanError } from '../../../../lib/errors.ts';
import { DISABLE_STEPS, ENABLE_STEPS, FakeSeamlessControl } from '../../../support/fake-seamless-control.ts';
import { FORM, type Reply } from '../harness.ts';
import { csrfOf, SETTINGS, startAdminPortal, type AdminPortal, type Browser } from './harness.ts';
import { textOf } from './harness.ts';

let portal: AdminPortal | undefined;
let fake: FakeSeamlessControl | undefined;
afterEach(async () => {
  fake?.releaseAll();
  fake = undefined;
  await portal?.close();
  portal = undefined;
});

const JOIN_PASSWORD = 'J0in-pässword secret';

/** A portal with a fake control (or none), the directory applied as `directory`, a signed-in browser. */
async function signedIn(
  options: { control?: boolean; directory?: 'active-directory' | 'open-directory' | 'none' } = {},
): Promise<{ p: AdminPortal; b: Browser; control: FakeSeamlessControl; page: Reply; csrf: string }> {
  const control = (fake = new FakeSeamlessControl(new ManualClock()));
  const withControl = (portal = await startAdminPortal(
    {},
    options.control === false ? {} : { seamless: control },
  ));
  const kind = options.directory ?? 'active-directory';
  if (kind === 'active-directory') withControl.directory.stored = { settings: SETTINGS, password: 'bind' };
  if (kind === 'open-directory') {
    withControl.directory.stored = {
      settings: directorySettingsSchema.parse({
        kind: 'open-directory',
        host: 'ldap.example.test',
        baseDn: 'dc=example,dc=test',
        bindDn: 'uid=squid,cn=users,dc=example,dc=test',
        transport: 'ldaps',
      }),
      password: 'bind',
    };
  }
  const b = withControl.browser();
  await b.signIn();
  const page = await b.get('/admin/seamless');
  return { p: withControl, b, control, page, csrf: page.status === 200 ? csrfOf(page) : '' };
}

const dialogue = (fields: Record<string, string> = {}) => ({
  serverVersion: '2016',
  domain: 'example.test',
  netbiosDomain: '',
  adminUser: 'EXAMPLE\\Administrator',
  adminPassword: JOIN_PASSWORD,
  ...fields,
});

/** The `<div class="field…">` block of one form field. */
function fieldBlock(page: string, id: string): string {
  const start = page.search(new RegExp(`<div class="field[^"]*">\\s*<label (class="choice" )?for="${id}"`));
  if (start < 0) throw new Error(`no field ${id} on the page:\n${page}`);
  return page.slice(start, page.indexOf('</div>', start));
}

/**
 * POST a form and read the answer as it arrives: `until(test)` resolves with the text so far once it passes,
 * `done` with the whole body.
 */
function streamPost(
  p: AdminPortal,
  b: Browser,
  path: string,
  form: Record<string, string>,
): Promise<{
  status: number;
  until(test: (text: string) => boolean): Promise<string>;
  done: Promise<string>;
}> {
  const target = p.server.addresses[0];
  if (target === undefined) throw new Error('no address');
  const cookie = [...b.cookies].map(([name, c]) => `${name}=${c.value}`).join('; ');
  const body = new URLSearchParams(form).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
        method: 'POST',
        path,
        agent: false,
        headers: { 'Content-Type': FORM, Cookie: cookie, 'Content-Length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        const waiters: Array<{ test: (t: string) => boolean; resolve: (t: string) => void }> = [];
        const check = () => {
          for (const w of [...waiters]) {
            if (w.test(text)) {
              waiters.splice(waiters.indexOf(w), 1);
              w.resolve(text);
            }
          }
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          check();
        });
        const done = new Promise<string>((resolveDone, rejectDone) => {
          res.on('end', () => resolveDone(text));
          res.on('error', rejectDone);
        });
        resolve({
          status: res.statusCode ?? 0,
          until: (test) =>
            new Promise((resolveWait) => {
              waiters.push({ test, resolve: resolveWait });
              check();
            }),
          done,
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('the seamless screen', () => {
  it('sends a visitor who is not signed in to the sign-in page, for every page and form', async () => {
    const p = (portal = await startAdminPortal({}, { seamless: new FakeSeamlessControl(new ManualClock()) }));
    const b = p.browser();
    for (const [method, path] of [
      ['GET', '/admin/seamless'],
      ['POST', '/admin/seamless/enable'],
      ['POST', '/admin/seamless/disable'],
      ['GET', '/admin/seamless/doctor'],
    ] as const) {
      const reply = method === 'GET' ? await b.get(path) : await b.post(path, {});
      expect(reply.status, path).toBe(303);
      expect(reply.headers.location, path).toBe('/admin/sign-in');
    }
  });

  it('is in the navigation of every screen', async () => {
    const { b, page } = await signedIn();
    expect(page.text).toMatch(
      /<a href="\/admin\/seamless" aria-current="page"\s*>Seamless authentication<\/a/,
    );
    for (const other of ['/admin/directory', '/admin/portal']) {
      expect((await b.get(other)).text).toMatch(/<a href="\/admin\/seamless"\s*>Seamless authentication<\/a/);
    }
  });

  it('is unavailable, with the reason, until a directory is applied, and refuses an Enable posted anyway', async () => {
    const { p, b, control, page } = await signedIn({ directory: 'none' });
    expect(page.status).toBe(200);
    expect(textOf(page.text)).toContain(
      'Enable seamless is unavailable: no directory service is configured: set up the Windows domain on the Directory service settings screen',
    );
    expect(page.text).not.toContain('name="adminPassword"');
    const posted = await b.post('/admin/seamless/enable', { ...dialogue(), csrf: csrfOf(page) });
    expect(posted.status).toBe(409);
    expect(textOf(posted.text)).toContain(
      'Nothing was changed: Enable seamless is unavailable: no directory service',
    );
    expect(control.calls.filter((c) => c.op === 'enable')).toEqual([]);
    expect(p.logs.join('\n')).not.toContain(JOIN_PASSWORD);
  });

  it('is unavailable for an open directory, naming the kind', async () => {
    const { page } = await signedIn({ directory: 'open-directory' });
    expect(textOf(page.text)).toContain(
      'Enable seamless is unavailable: the directory service is of the open-directory kind; seamless authentication needs a Windows domain',
    );
    expect(page.text).not.toContain('name="adminPassword"');
  });

  it('offers the dialogue for a Windows domain: the five fields labelled, the domain suggested from the search base', async () => {
    const { page } = await signedIn();
    expect(page.status).toBe(200);
    expect(page.text).not.toMatch(/<script/i);
    for (const [name, label] of [
      ['serverVersion', 'Domain controller version'],
      ['domain', 'Domain (FQDN)'],
      ['netbiosDomain', 'NetBIOS domain name'],
      ['adminUser', 'Administrator user name'],
      ['adminPassword', 'Administrator password'],
    ]) {
      expect(page.text).toContain(`<label for="f-${name}">${label}</label>`);
    }
    for (const version of ['2003', '2008', '2012', '2016'])
      expect(page.text).toContain(`<option value="${version}"`);
    expect(fieldBlock(page.text, 'f-domain')).toContain('value="example.test"');
    expect(fieldBlock(page.text, 'f-netbiosDomain')).toContain('value=""');
    expect(fieldBlock(page.text, 'f-adminPassword')).toMatch(/type="password"[^>]*value=""/);
    expect(textOf(page.text)).toContain('Off. The proxy has not joined a domain');
    expect(page.text).not.toContain('action="/admin/seamless/disable"');
  });

  it('lists every problem at its field, keeps what was typed but the password, and joins nothing', async () => {
    const { p, b, control, csrf } = await signedIn();
    const refused = await b.post('/admin/seamless/enable', {
      ...dialogue({
        serverVersion: '',
        domain: 'dc1.example.test',
        netbiosDomain: 'bad/name',
        adminUser: '',
      }),
      csrf,
    });
    expect(refused.status).toBe(400);
    const summary = textOf(refused.text.slice(refused.text.indexOf('id="problem-summary"')));
    expect(summary).toContain('4 fields need attention. Nothing was changed.');
    expect(summary).toContain('The password you typed was not kept: type it again.');
    expect(fieldBlock(refused.text, 'f-serverVersion')).toContain(
      'choose the Windows Server version of the domain&#39;s domain controllers',
    );
    expect(textOf(fieldBlock(refused.text, 'f-domain'))).toContain(
      '"dc1.example.test" is the directory server\'s host name, not the domain',
    );
    expect(fieldBlock(refused.text, 'f-domain')).toContain('value="dc1.example.test"');
    expect(textOf(fieldBlock(refused.text, 'f-netbiosDomain'))).toContain('"bad/name" contains "/"');
    expect(fieldBlock(refused.text, 'f-adminUser')).toContain('required: a member of Domain Admins');
    expect(refused.text).toMatch(/<a href="#f-domain">Domain \(FQDN\)<\/a>/);
    expect(refused.text).not.toContain(JOIN_PASSWORD);
    expect(control.calls.filter((c) => c.op === 'enable')).toEqual([]);
    expect(p.logs.join('\n')).not.toContain(JOIN_PASSWORD);
  });

  it('refuses a post without the CSRF token, and joins nothing', async () => {
    const { b, control } = await signedIn();
    const forged = await b.post('/admin/seamless/enable', dialogue());
    expect(forged.status).toBe(403);
    const wrong = await b.post('/admin/seamless/enable', { ...dialogue(), csrf: 'not-it' });
    expect(wrong.status).toBe(403);
    expect(control.calls.filter((c) => c.op === 'enable')).toEqual([]);
  });
});

describe('Enable', () => {
  it('shows each step as it happens: the page has the first steps while the join still waits', async () => {
    const { p, b, control, csrf } = await signedIn();
    const pause = control.pauseAfter('join');
    const answer = await streamPost(p, b, '/admin/seamless/enable', { ...dialogue(), csrf });
    expect(answer.status).toBe(200);
    await pause.reached;
    // The fake is held after the join: what reached the client by now is the steps so far, no more.
    const sofar = await answer.until((t) => t.includes('id="step-join"') && t.includes('join done'));
    expect(sofar).toContain('<h1>Enable seamless authentication</h1>');
    expect(sofar).toContain('id="step-preconditions"');
    expect(sofar).not.toContain('id="step-keytab"');
    expect(sofar).not.toContain('id="seamless-outcome"');
    // A second Enable meanwhile is refused, not queued.
    const statusCalls = control.calls.filter((c) => c.op === 'status').length;
    const page = await b.get('/admin/seamless');
    expect(textOf(page.text)).toContain('Enable is running now (started by "root"');
    expect(page.text).not.toContain('name="adminPassword"');
    expect(textOf(page.text)).toContain('Being changed now: the status is shown once that has finished.');
    const second = await b.post('/admin/seamless/enable', { ...dialogue(), csrf });
    expect(second.status).toBe(409);
    expect(textOf(second.text)).toContain(
      'Enable is already running (started by "root"); wait for it to finish',
    );
    // Neither page asked the control for its status while the join held it.
    expect(control.calls.filter((c) => c.op === 'status')).toHaveLength(statusCalls);
    pause.release();

    const whole = await answer.done;
    const steps = whole.slice(whole.indexOf('<ol class="steps"'), whole.indexOf('</ol>') + 5);
    expect(steps.match(/<li/g)).toHaveLength(ENABLE_STEPS.length);
    for (const step of ENABLE_STEPS) expect(steps).toContain(`id="step-${step.id}"`);
    expect(textOf(whole)).toContain('Seamless authentication is on. The proxy is a member of example.test.');
    // The report of the joined set-up follows, with its fixes.
    expect(whole.indexOf('id="doctor-report"')).toBeGreaterThan(whole.indexOf('id="seamless-outcome"'));
    expect(whole.trimEnd().endsWith('</html>')).toBe(true);

    // What the control got: the settings, and the password, zeroed once it was done.
    const call = control.calls.find((c) => c.op === 'enable');
    if (call?.op !== 'enable') throw new Error('enable was not called');
    expect(call.settings).toMatchObject({
      serverVersion: '2012',
      realm: 'EXAMPLE.TEST',
      netbiosDomain: 'EXAMPLE',
    });
    expect(call.password).toBe(JOIN_PASSWORD);
    expect(call.buffer.every((byte) => byte === 0)).toBe(true);
    expect(whole).not.toContain(JOIN_PASSWORD);
    const logs = p.logs.join('\n');
    expect(logs).not.toContain(JOIN_PASSWORD);
    expect(logs).toContain(
      'admin: "root" started Enable seamless for EXAMPLE.TEST (version 2012, joining as "EXAMPLE\\\\Administrator")',
    );
    expect(logs).toContain('admin: Enable seamless for EXAMPLE.TEST by "root": done');

    // Joined: the status, Enable again (a repair) with the joined settings, the doctor and Disable.
    const after = await b.get('/admin/seamless');
    const status = textOf(after.text.slice(after.text.indexOf('id="seamless-status"')));
    expect(status).toContain('On. The proxy is a member of example.test.');
    expect(status).toContain('Kerberos realm EXAMPLE.TEST');
    expect(status).toContain('Proxy FQDN proxy.example.test');
    expect(status).toContain('Computer account PROXY$');
    expect(status).toContain('Winbind running');
    expect(status).toContain('Trust with the domain ok');
    expect(after.text).toContain('<h2>Enable again (repair)</h2>');
    expect(fieldBlock(after.text, 'f-adminUser')).toContain('value="EXAMPLE\\Administrator"');
    expect(fieldBlock(after.text, 'f-serverVersion')).toMatch(/<option value="2012" selected/);
    expect(after.text).toContain('action="/admin/seamless/disable"');
  });

  it('after a failed step: the outcome, the step’s fix, and the doctor’s report with its fixes', async () => {
    const { b, control, csrf } = await signedIn();
    control.failAt = 'join';
    const failed = await b.post('/admin/seamless/enable', { ...dialogue(), csrf });
    expect(failed.status).toBe(200);
    const text = textOf(failed.text);
    expect(failed.text).toMatch(/id="step-join">[\s\S]*<span class="status fail">failed<\/span>/);
    expect(text).toContain('failed net ads join: Failed to join domain');
    expect(text).toContain('Fix: check that the proxy resolves the domain through the domain controller');
    expect(text).toContain('Enable did not complete.');
    expect(text).toContain('Seamless authentication is not ready: 2 ok, 1 failed, 0 skipped.');
    expect(text).toContain('Fix: add a PTR record 5.0.0.10.in-addr.arpa → proxy.example.test');
    expect(failed.text).not.toContain('id="step-keytab"');
    const call = control.calls.find((c) => c.op === 'enable');
    expect(call?.op === 'enable' && call.buffer.every((byte) => byte === 0)).toBe(true);
    // And Enable may be pressed again.
    expect((await b.get('/admin/seamless')).text).toContain('name="adminPassword"');
  });

  it('shows a DoormanError’s words, hides any other error’s, and runs the doctor then', async () => {
    const { p, b, control, csrf } = await signedIn();
    control.throwOnEnable = new DoormanError(
      'PRIVILEGES',
      'the privileged helper is not running: restart doorman serve',
    );
    const typed = await b.post('/admin/seamless/enable', { ...dialogue(), csrf });
    expect(textOf(typed.text)).toContain(
      'Enable did not complete: the privileged helper is not running: restart doorman serve',
    );
    expect(typed.text).toContain('id="doctor-report"');
    control.throwOnEnable = new Error('EPIPE /var/lib/doorman/secret-path');
    const internal = await b.post('/admin/seamless/enable', { ...dialogue(), csrf });
    expect(textOf(internal.text)).toContain(
      'Enable did not complete: an internal error stopped it; the details are in the server’s log',
    );
    expect(internal.text).not.toContain('secret-path');
    expect(p.logs.join('\n')).toContain('secret-path');
    for (const call of control.calls) {
      if (call.op === 'enable') expect(call.buffer.every((byte) => byte === 0)).toBe(true);
    }
  });
});

describe('Disable', () => {
  async function joined() {
    const context = await signedIn();
    const enabled = await context.b.post('/admin/seamless/enable', { ...dialogue(), csrf: context.csrf });
    expect(textOf(enabled.text)).toContain('Seamless authentication is on.');
    return context;
  }

  it('leaves the domain with the administrator’s name and password, then says to restart Squid', async () => {
    const { p, b, control, csrf } = await joined();
    const missing = await b.post('/admin/seamless/disable', {
      how: 'leave',
      adminUser: '',
      adminPassword: '',
      csrf,
    });
    expect(missing.status).toBe(400);
    expect(textOf(missing.text)).toContain('2 fields need attention.');
    expect(fieldBlock(missing.text, 'd-adminPassword')).toContain('required to leave the domain');
    expect(control.calls.filter((c) => c.op === 'disable')).toEqual([]);

    const left = await b.post('/admin/seamless/disable', {
      how: 'leave',
      adminUser: 'EXAMPLE\\Administrator',
      adminPassword: JOIN_PASSWORD,
      csrf,
    });
    expect(left.status).toBe(200);
    const steps = left.text.slice(left.text.indexOf('<ol class="steps"'), left.text.indexOf('</ol>'));
    expect(steps.match(/<li/g)).toHaveLength(DISABLE_STEPS.length);
    const text = textOf(left.text);
    expect(text).toContain('Seamless authentication is off.');
    expect(text).toContain('Restart Squid (for example systemctl restart squid');
    expect(text).toContain('Squid cannot unconfigure an authentication scheme on reconfigure');
    expect(text).not.toContain('remains in Active Directory');
    const call = control.calls.find((c) => c.op === 'disable');
    if (call?.op !== 'disable') throw new Error('disable was not called');
    expect(call.user).toBe('EXAMPLE\\Administrator');
    expect(call.password).toBe(JOIN_PASSWORD);
    expect(call.buffer?.every((byte) => byte === 0)).toBe(true);
    expect(left.text).not.toContain(JOIN_PASSWORD);
    expect(p.logs.join('\n')).not.toContain(JOIN_PASSWORD);
    expect(textOf((await b.get('/admin/seamless')).text)).toContain('Off. The proxy has not joined a domain');
  });

  it('disables locally without credentials, saying the account remains in Active Directory', async () => {
    const { b, control, csrf } = await joined();
    const local = await b.post('/admin/seamless/disable', {
      how: 'local',
      adminUser: '',
      adminPassword: '',
      csrf,
    });
    expect(local.status).toBe(200);
    const text = textOf(local.text);
    expect(text).toContain('Leave the domain skipped');
    expect(text).toContain('The computer account PROXY$ remains in Active Directory');
    expect(text).toContain('Restart Squid');
    expect(control.calls.find((c) => c.op === 'disable')).toMatchObject({
      user: undefined,
      password: undefined,
    });
  });
});

describe('the doctor', () => {
  it('shows every check, with the fix for the failing one', async () => {
    const { b } = await signedIn();
    const report = await b.get('/admin/seamless/doctor');
    expect(report.status).toBe(200);
    const text = textOf(report.text);
    expect(text).toContain('Seamless authentication is not ready: 2 ok, 1 failed, 0 skipped.');
    expect(text).toContain("OK The proxy's FQDN has an A record proxy.example.test → 10.0.0.5");
    expect(text).toContain(
      "Failed The proxy's address has a PTR record back to its FQDN 10.0.0.5 has no PTR record (NXDOMAIN) Fix: add a PTR record",
    );
  });
});

describe('without a privileged helper', () => {
  it('shows the availability, says why nothing can be changed, and refuses Enable', async () => {
    const { b, page } = await signedIn({ control: false });
    expect(page.text).toContain('id="seamless-no-control"');
    expect(textOf(page.text)).toContain('doorman serve was not started as root');
    expect(page.text).not.toContain('name="adminPassword"');
    const refused = await b.post('/admin/seamless/enable', { ...dialogue(), csrf: csrfOf(page) });
    expect(refused.status).toBe(409);
    expect((await b.get('/admin/seamless/doctor')).status).toBe(409);
  });
});
