import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browser, type Response } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../harness/slapd.ts';
import { HelperProcess } from '../harness/helper-process.ts';

/**
 * The admin screen end to end: an admin made with `doorman admin passwd`, a browser signing in to a running
 * `doorman serve`, Save & apply against a real slapd, then a Basic helper using what was applied.
 */
let slapd: Slapd;
let lab: Lab;
const ADMIN_PASSWORD = 'S3cret admin pass';

beforeAll(async () => {
  slapd = await startSlapd();
  lab = await startLab();
  await lab.doorman(['admin', 'passwd', '--user', 'admin'], { input: `${ADMIN_PASSWORD}\n` });
}, 60_000);
afterAll(async () => {
  await lab?.stop();
  await slapd?.stop();
});

/** Just enough of a browser for the admin screens: one cookie jar. */
const browse = browser(() => lab.doormanUrl);
const csrfOf = (page: Response) => /name="csrf" value="([^"]*)"/.exec(page.body)?.[1] ?? '';

const form = () => ({
  kind: 'open-directory',
  host: slapd.host,
  port: String(slapd.port),
  transport: 'starttls',
  caCertificate: slapd.caPem,
  baseDn: slapd.baseDn,
  bindDn: slapd.bindDn,
  address: '',
  connectTimeoutMs: '',
  timeoutMs: '',
  passwordCacheSeconds: '',
  groupCacheSeconds: '',
});

describe('the directory admin screen with a real directory', () => {
  it('sends a visitor who is not signed in to the sign-in page', async () => {
    const res = await browse('admin/directory');
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(/admin\/sign-in$/);
  });

  it('signs in, saves and applies: "Found 9 user groups"', async () => {
    const signInPage = await browse('admin/sign-in');
    const signedIn = await browse('admin/sign-in', {
      csrf: csrfOf(signInPage),
      user: 'admin',
      password: ADMIN_PASSWORD,
    });
    expect(signedIn.status).toBe(303);
    const page = await browse('admin/directory');
    expect(page.status).toBe(200);
    const saved = await browse('admin/directory', {
      ...form(),
      csrf: csrfOf(page),
      password: slapd.bindPassword,
    });
    expect(saved.status).toBe(200);
    expect(saved.body).toContain('Found 9 user groups');
    expect(saved.body).not.toContain(slapd.bindPassword);
  });

  it('refuses a bad password with its own message and keeps the applied settings working', async () => {
    const page = await browse('admin/directory');
    const refused = await browse('admin/directory', { ...form(), csrf: csrfOf(page), password: 'not-it' });
    expect(refused.status).toBe(502);
    expect(refused.body).toMatch(/refused the bind as/);
    const show = await lab.cli('directory', 'show');
    expect(JSON.parse(show.stdout)).toMatchObject({ host: slapd.host, port: slapd.port });
    const basic = new HelperProcess('basic-auth.js', ['--config', lab.configFile]);
    try {
      expect(await basic.ask(`alice ${encodeURIComponent(USER_PASSWORD)}`)).toBe('OK user=alice');
    } finally {
      await basic.end();
    }
  });

  it('refuses a post without the CSRF token and changes nothing', async () => {
    const before = (await lab.cli('directory', 'show')).stdout;
    const res = await browse('admin/directory', { ...form(), host: 'elsewhere.example.test', password: 'x' });
    expect(res.status).toBe(403);
    expect((await lab.cli('directory', 'show')).stdout).toBe(before);
  });
});
