import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/clock.ts';
import { parseConfig } from '../../lib/config/load.ts';
import { PortalUrlSigner } from '../../lib/security/portal-url-signature.ts';
import { proxyKeyPath, readProxyKey } from '../../lib/security/proxy-key.ts';
import { applyDirectory } from '../harness/apply-directory.ts';
import { browser, http, type Response } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';
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

/** A browser configured to use Squid: one cookie jar. */
const viaSquid = () => browser(() => lab.doormanUrl, { proxy: { host: '127.0.0.1', port: lab.squidPort } });

const hidden = (page: Response, name: string) =>
  new RegExp(`<input type="hidden" name="${name}" value="([^"]*)"`).exec(page.body)?.[1] ?? '';
const codeOf = (page: Response) => /<p\s+id="portal-message"\s+data-code="([a-z_]+)"/.exec(page.body)?.[1];

describe('the splash page with a real directory', () => {
  it('refuses a wrong password, signs in with the right one, and Squid then names the user', async () => {
    const browse = viaSquid();
    const original = `${lab.originUrl}news`;
    // As the ICAP service sends it (signed for the address Squid names, 127.0.0.1): followed after the sign-in.
    const config = parseConfig(JSON.parse(readFileSync(lab.configFile, 'utf8')), lab.configFile);
    const sig = new PortalUrlSigner(readProxyKey(proxyKeyPath(config)), systemClock).sign(
      original,
      '127.0.0.1',
    );
    const page = await browse(`portal/?url=${encodeURIComponent(original)}&sig=${sig}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('id="username"');
    const form = (password: string) => ({
      csrf: hidden(page, 'csrf'),
      url: hidden(page, 'url'),
      sig: hidden(page, 'sig'),
      username: 'Alice',
      password,
    });

    const wrong = await browse('portal/', form('not-the-password'));
    expect(wrong.status).toBe(403);
    expect(codeOf(wrong)).toBe('wrong_password');
    expect((await lab.cli('sessions', 'list')).stdout).not.toContain('alice');

    const right = await browse('portal/', form(USER_PASSWORD));
    expect(right.status).toBe(303);
    expect(right.headers.location).toBe(original);
    expect((await lab.cli('sessions', 'list')).stdout).toMatch(/^127\.0\.0\.1\talice\tportal\t/m);

    const done = await browse('portal/done');
    expect(codeOf(done)).toBe('connected');
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
