import { afterEach, describe, expect, it } from 'vitest';
import { DoormanError } from '../../../../lib/errors.ts';
import type { Reply } from '../harness.ts';
import {
  BIND_PASSWORD,
  csrfOf,
  SETTINGS,
  startAdminPortal,
  type AdminPortal,
  type Browser,
} from './harness.ts';

let portal: AdminPortal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

/** A portal, a signed-in browser, and the CSRF token of its directory page. */
async function signedIn(): Promise<{ p: AdminPortal; b: Browser; csrf: string; page: Reply }> {
  const p = (portal = await startAdminPortal());
  const b = p.browser();
  await b.signIn();
  const page = await b.get('/admin/directory');
  return { p, b, csrf: csrfOf(page), page };
}

const VALID = {
  kind: 'open-directory',
  host: 'ldap.example.test',
  baseDn: 'dc=example,dc=test',
  bindDn: 'uid=squid,cn=users,dc=example,dc=test',
  password: BIND_PASSWORD,
  transport: 'starttls',
  port: '',
  address: '',
  caCertificate: '',
  connectTimeoutMs: '',
  timeoutMs: '',
  passwordCacheSeconds: '',
  groupCacheSeconds: '',
};

/** The `<div class="field…">` block of one form field: where its problem must be shown. */
function fieldBlock(page: string, name: string): string {
  const start = page.search(
    new RegExp(`<div class="field[^"]*">\\s*(<label for="f-${name}"|<span class="label" id="f-${name}")`),
  );
  if (start < 0) throw new Error(`no field ${name} on the page`);
  const end = page.indexOf('</div>', start);
  return page.slice(start, end);
}

describe('the directory page', () => {
  it('shows an empty form for a first set-up, with every field and the Save & apply button', async () => {
    const { page } = await signedIn();
    expect(page.status).toBe(200);
    expect(page.text).toContain('No directory service is configured yet.');
    expect(page.text).toContain('Windows domain (Active Directory)');
    expect(page.text).toContain('Open directory (OpenLDAP, Open Directory)');
    for (const name of [
      'host',
      'baseDn',
      'bindDn',
      'password',
      'transport',
      'port',
      'address',
      'caCertificate',
    ]) {
      expect(page.text, name).toContain(`name="${name}"`);
    }
    expect(page.text).toContain('Fully-qualified domain name of the directory server');
    expect(page.text).toContain('LDAP search base');
    expect(page.text).toContain('Distinguished username');
    expect(page.text).toContain('Save &amp; apply');
    expect(page.text).toContain('Plain LDAP sends the distinguished user’s password');
    expect(page.text).toMatch(/<input\s+type="password"\s+id="f-password"\s+name="password"\s+value=""/);
  });

  it('shows the settings in force, never the stored password', async () => {
    const p = (portal = await startAdminPortal());
    p.directory.stored = { settings: { ...SETTINGS, port: 3269 }, password: BIND_PASSWORD };
    const b = p.browser();
    await b.signIn();
    const page = await b.get('/admin/directory');
    expect(page.text).toMatch(/name="host"\s+value="dc1.example.test"/);
    expect(page.text).toMatch(/name="port"\s+value="3269"/);
    expect(page.text).toMatch(/value="active-directory"\s+checked/);
    expect(page.text).toMatch(/value="ldaps"\s+selected/);
    expect(page.text).toContain('A password is stored. Leave this blank to keep it.');
    expect(page.text).not.toContain(BIND_PASSWORD);
    expect(page.text).not.toContain('No directory service is configured yet.');
  });

  it('says so when the stored settings cannot be read, and still offers the form', async () => {
    const p = (portal = await startAdminPortal());
    p.directory.current = () => {
      throw new DoormanError('STORE_UNAVAILABLE', 'the bind password file /x is missing: apply them again');
    };
    const b = p.browser();
    await b.signIn();
    const page = await b.get('/admin/directory');
    expect(page.status).toBe(200);
    expect(page.text).toContain('The stored settings cannot be read:');
    expect(page.text).toContain('the bind password file /x is missing');
  });
});

describe('Save & apply', () => {
  it('applies valid settings and says how many user groups it found', async () => {
    const { p, b, csrf } = await signedIn();
    const reply = await b.post('/admin/directory', { ...VALID, csrf, port: '389', timeoutMs: '2000' });
    expect(reply.status).toBe(200);
    expect(reply.text).toContain('Found 42 user groups');
    expect(reply.text).toContain('The settings are saved and in force.');
    expect(p.directory.calls).toEqual([
      {
        input: {
          kind: 'open-directory',
          host: 'ldap.example.test',
          baseDn: 'dc=example,dc=test',
          bindDn: 'uid=squid,cn=users,dc=example,dc=test',
          transport: 'starttls',
          port: 389,
          timeoutMs: 2000,
        },
        password: BIND_PASSWORD,
      },
    ]);
    expect(p.directory.stored?.settings).toMatchObject({ host: 'ldap.example.test', port: 389 });
    expect(reply.text).not.toContain(BIND_PASSWORD);
    expect(reply.text).toMatch(/name="host"\s+value="ldap.example.test"/);
    expect(p.logs).toContainEqual('admin: "root" applied directory settings: Found 42 user groups');
    expect(p.logs.join('\n')).not.toContain(BIND_PASSWORD);
  });

  it('"Found 1 user group" in the singular', async () => {
    const { p, b, csrf } = await signedIn();
    p.directory.answer = { ok: true, groupCount: 1, message: 'Found 1 user group' };
    const reply = await b.post('/admin/directory', { ...VALID, csrf });
    expect(reply.text).toContain('Found 1 user group.');
  });

  it('keeps the stored password when the field is left blank', async () => {
    const { p, b } = await signedIn();
    p.directory.stored = { settings: SETTINGS, password: BIND_PASSWORD };
    const csrf = csrfOf(await b.get('/admin/directory'));
    const reply = await b.post('/admin/directory', { ...VALID, password: '', csrf });
    expect(reply.status).toBe(200);
    expect(p.directory.calls[0]?.password).toBeUndefined();
    expect(p.directory.stored.password).toBe(BIND_PASSWORD);
  });

  it('lists every field problem next to its field, keeps what was typed, never the password', async () => {
    const { p, b, csrf } = await signedIn();
    const reply = await b.post('/admin/directory', {
      ...VALID,
      csrf,
      baseDn: 'ou=people',
      bindDn: '',
      port: 'ldap',
      timeoutMs: '5',
    });
    expect(reply.status).toBe(400);
    expect(p.directory.calls).toEqual([]); // the directory was not contacted
    expect(reply.text).toContain('4 fields need attention.');
    expect(reply.text).toContain('Nothing was saved.');
    expect(fieldBlock(reply.text, 'baseDn')).toContain('must be a DN of domain components');
    expect(fieldBlock(reply.text, 'bindDn')).toContain(
      '<p class="problem" id="f-bindDn-problem">required</p>',
    );
    expect(fieldBlock(reply.text, 'port')).toContain('&quot;ldap&quot; is not a whole number');
    expect(fieldBlock(reply.text, 'timeoutMs')).toContain('class="problem"');
    expect(fieldBlock(reply.text, 'address')).not.toContain('class="problem"');
    expect(fieldBlock(reply.text, 'baseDn')).toContain('aria-invalid="true"');
    expect(reply.text).toMatch(/name="baseDn"\s+value="ou=people"/);
    expect(reply.text).toMatch(/name="port"\s+value="ldap"/);
    expect(reply.text).not.toContain(BIND_PASSWORD);
    expect(reply.text).toContain('The password you typed was not kept: type it again before saving.');
  });

  it('refuses an IP address as the host of a Windows domain, next to the host field', async () => {
    const { p, b, csrf } = await signedIn();
    const reply = await b.post('/admin/directory', {
      ...VALID,
      csrf,
      kind: 'active-directory',
      host: '10.0.0.1',
    });
    expect(reply.status).toBe(400);
    expect(fieldBlock(reply.text, 'host')).toContain(
      'an IP address is accepted only for the open-directory kind',
    );
    expect(reply.text).toContain('1 field needs attention.');
    expect(reply.text).toMatch(/name="host"\s+value="10.0.0.1"/);
    expect(reply.text).toMatch(/value="active-directory"\s+checked/);
    expect(p.directory.calls).toEqual([]);
  });

  it('reports every problem in one answer: an IP host for a Windows domain, a missing and a wrong field', async () => {
    const { p, b, csrf } = await signedIn();
    const reply = await b.post('/admin/directory', {
      ...VALID,
      csrf,
      kind: 'active-directory',
      host: '192.0.2.10',
      bindDn: '',
      port: '636x',
    });
    expect(reply.status).toBe(400);
    expect(p.directory.calls).toEqual([]);
    expect(reply.text).toContain('3 fields need attention.');
    // Beside each field, its problem, naming the value given.
    expect(fieldBlock(reply.text, 'host')).toContain(
      '&quot;192.0.2.10&quot;: an IP address is accepted only for the open-directory kind',
    );
    expect(fieldBlock(reply.text, 'bindDn')).toContain(
      '<p class="problem" id="f-bindDn-problem">required</p>',
    );
    expect(fieldBlock(reply.text, 'port')).toContain('&quot;636x&quot; is not a whole number');
    // At the top, all of them in one list, each naming its field.
    const top = reply.text.indexOf('class="banner error"');
    const banner = reply.text.slice(top, reply.text.indexOf('</div>', top));
    expect(banner).toContain(
      '<li><a href="#f-host">Fully-qualified domain name of the directory server</a>: &quot;192.0.2.10&quot;: an IP address',
    );
    expect(banner).toContain('<li><a href="#f-bindDn">Distinguished username</a>: required</li>');
    expect(banner).toContain('<li><a href="#f-port">Port</a>: &quot;636x&quot; is not a whole number</li>');
    expect(banner.match(/<li>/g)).toHaveLength(3);
  });

  it('shows every problem of one field beside it', async () => {
    const { p, b, csrf } = await signedIn();
    p.directory.answer = {
      ok: false,
      problems: [
        { field: 'host', message: 'first problem' },
        { field: 'host', message: 'second problem' },
      ],
    };
    const reply = await b.post('/admin/directory', { ...VALID, csrf });
    expect(reply.status).toBe(400);
    expect(fieldBlock(reply.text, 'host')).toContain(
      '<p class="problem" id="f-host-problem">first problem<br />second problem</p>',
    );
    expect(reply.text).toContain('1 field needs attention.');
  });

  it('requires a password when none is stored', async () => {
    const { p, b, csrf } = await signedIn();
    const reply = await b.post('/admin/directory', { ...VALID, password: '', csrf });
    expect(reply.status).toBe(400);
    expect(fieldBlock(reply.text, 'password')).toContain('required: no password is stored yet');
    expect(p.directory.calls).toEqual([]);
  });

  it('shows problems the settings store reports, next to their fields', async () => {
    const { p, b, csrf } = await signedIn();
    p.directory.answer = {
      ok: false,
      problems: [
        { field: 'password', message: 'must not contain line breaks or NUL characters' },
        { field: '(settings)', message: 'something about the whole' },
      ],
    };
    const reply = await b.post('/admin/directory', { ...VALID, csrf });
    expect(reply.status).toBe(400);
    expect(fieldBlock(reply.text, 'password')).toContain('must not contain line breaks or NUL characters');
    expect(reply.text).toContain('<li>(settings): something about the whole</li>');
  });

  it('shows what the directory said when applying failed; the previous settings stay in force', async () => {
    const { p, b } = await signedIn();
    p.directory.stored = { settings: SETTINGS, password: BIND_PASSWORD };
    const csrf = csrfOf(await b.get('/admin/directory'));
    p.directory.answer = {
      ok: false,
      error: {
        code: 'INVALID_CREDENTIALS',
        message: 'dc1.example.test refused the bind account: invalid credentials (wrong password)',
      },
    };
    const reply = await b.post('/admin/directory', { ...VALID, csrf, password: 'wrong one' });
    expect(reply.status).toBe(502);
    expect(reply.text).toContain(
      '<strong>Not applied:</strong> dc1.example.test refused the bind account: invalid credentials (wrong password)',
    );
    expect(reply.text).toContain('Nothing was changed: the previous settings stay in force.');
    expect(reply.text).toMatch(/name="host"\s+value="ldap.example.test"/); // as typed, not as stored
    expect(reply.text).not.toContain('wrong one');
    expect(p.directory.stored.settings).toEqual(SETTINGS);
    expect(p.logs).toContainEqual('admin: "root": directory settings not applied: INVALID_CREDENTIALS');
  });

  it('escapes hostile input everywhere it is shown', async () => {
    const { p, b, csrf } = await signedIn();
    const reply = await b.post('/admin/directory', {
      ...VALID,
      csrf,
      host: '<script>alert(1)</script>',
      bindDn: 'cn="><script>alert(2)</script>,dc=example,dc=test',
      address: "' onfocus='alert(3)",
      caCertificate: '</textarea><script>alert(4)</script>',
    });
    expect(reply.status).toBe(400);
    expect(p.directory.calls).toEqual([]);
    expect(reply.text).not.toMatch(/<script/i);
    expect(reply.text).not.toContain("' onfocus='");
    expect(reply.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(reply.text).toContain('cn=&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;,dc=example,dc=test');
    expect(reply.text).toContain('&#39; onfocus=&#39;alert(3)');
    expect(reply.text).toContain('&lt;/textarea&gt;&lt;script&gt;alert(4)&lt;/script&gt;</textarea>');
  });

  it('escapes what the directory says, too', async () => {
    const { p, b, csrf } = await signedIn();
    p.directory.answer = { ok: false, error: { code: 'REFUSED', message: 'server said <b>no</b> & "bye"' } };
    const reply = await b.post('/admin/directory', { ...VALID, csrf });
    expect(reply.text).toContain('server said &lt;b&gt;no&lt;/b&gt; &amp; &quot;bye&quot;');
  });

  it('refuses 403 without the session’s CSRF token, and changes nothing', async () => {
    const { p, b } = await signedIn();
    const other = p.browser();
    await other.signIn();
    const otherCsrf = csrfOf(await other.get('/admin/directory'));
    for (const csrf of [undefined, '', 'x'.repeat(43), otherCsrf]) {
      const form = csrf === undefined ? VALID : { ...VALID, csrf };
      const reply = await b.post('/admin/directory', form);
      expect(reply.status, String(csrf)).toBe(403);
      expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(reply.text).toContain('this form has expired or did not come from this site');
      expect(reply.text).not.toContain(BIND_PASSWORD);
    }
    expect(p.directory.calls).toEqual([]);
    expect(p.directory.stored).toBeUndefined();
  });

  it('a token sent twice is refused (400), not one copy picked', async () => {
    const { p, b, csrf } = await signedIn();
    const body = `${new URLSearchParams({ ...VALID, csrf }).toString()}&csrf=${csrf}`;
    const reply = await b.send({
      method: 'POST',
      path: '/admin/directory',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body,
    });
    expect(reply.status).toBe(400);
    expect(reply.text).toContain('csrf: given more than once; send it once');
    expect(p.directory.calls).toEqual([]);
  });

  it('sends a visitor without a session to sign in, and applies nothing', async () => {
    const p = (portal = await startAdminPortal());
    const reply = await p.browser().post('/admin/directory', { ...VALID, csrf: 'x' });
    expect(reply).toMatchObject({ status: 303, headers: { location: '/admin/sign-in' } });
    expect(p.directory.calls).toEqual([]);
  });

  it('an error in the directory store is a 500 page without details; the details go to the log only', async () => {
    const { p, b, csrf } = await signedIn();
    p.directory.apply = async () => {
      throw new Error('SQLITE_IOERR at /var/lib/doorman/doorman.db');
    };
    const reply = await b.post('/admin/directory', { ...VALID, csrf });
    expect(reply.status).toBe(500);
    expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(reply.text).toContain('The details are in its log.');
    expect(reply.text).not.toContain('SQLITE_IOERR');
    expect(p.logs.some((l) => l.includes('SQLITE_IOERR'))).toBe(true);
  });
});
