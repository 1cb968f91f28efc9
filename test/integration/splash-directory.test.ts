import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyDirectory } from '../harness/apply-directory.ts';
import { http } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { openSplashForm, splashCode } from '../harness/splash-sign-in.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../harness/slapd.ts';

/**
 * The splash page's Authentication mode end to end: a running `doorman serve` with a real slapd applied, a
 * client reaching the splash page through Squid (which proves the client's address with the proxy key), a
 * wrong password refused by the directory and not asked again, the right one starting a portal session, and
 * the client's next request through Squid logged under the directory's name for the user.
 */
let slapd: Slapd;
let lab: Lab;

beforeAll(async () => {
  slapd = await startSlapd();
  lab = await startLab({ beforeSquid: async (doorman) => void (await applyDirectory(doorman, slapd)) });
  await lab.cli('portal', 'set', '--mode', 'authentication', '--idle-minutes', '30', '--hard-minutes', '120');
}, 90_000);
afterAll(async () => {
  await lab?.stop();
  await slapd?.stop();
});

describe('the splash page with a real directory', () => {
  it('refuses a wrong password, signs in with the right one, and Squid then names the user', async () => {
    const original = `${lab.originUrl}news`;
    const { page, browse, signIn } = await openSplashForm(lab, original);
    expect(page.status).toBe(200);
    expect(page.body).toContain('id="username"');

    const wrong = await signIn('Alice', 'not-the-password');
    expect(wrong.status).toBe(403);
    expect(splashCode(wrong)).toBe('wrong_password');
    expect((await lab.cli('sessions', 'list')).stdout).not.toContain('alice');

    const right = await signIn('Alice', USER_PASSWORD);
    expect(right.status).toBe(303);
    expect(right.headers.location).toBe(original);
    expect((await lab.cli('sessions', 'list')).stdout).toMatch(/^127\.0\.0\.1\talice\tportal\t/m);

    const done = await browse('portal/done');
    expect(splashCode(done)).toBe('connected');
    expect(done.body).toContain('You are connected as <strong>alice</strong>');
    const api = await browse('portal/api');
    expect(api.headers['content-type']).toBe('application/captive+json');
    expect(JSON.parse(api.body)).toMatchObject({ captive: false, 'can-extend-session': false });
    expect(JSON.parse(api.body)['seconds-remaining']).toBeGreaterThan(119 * 60);

    const origin = await http(original, { proxy: { host: '127.0.0.1', port: lab.squidPort } });
    expect(origin.status).toBe(200);
    expect(lab.accessLog().at(-1)).toMatch(/ alice /);
  });
});
