import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyDirectory } from '../harness/apply-directory.ts';
import {
  launchChromium,
  newPage,
  screenshot,
  type ViewportName,
  expectNoSidewaysScroll,
  signInAdmin,
} from '../harness/browser.ts';
import { curlViaProxy } from '../harness/curl.ts';
import { form, http } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { startSlapd, type Slapd } from '../harness/slapd.ts';
import type { Explanation } from '../../lib/explain/explain.ts';

/**
 * `doorman explain` against the real thing: a real Squid on `doorman squid-conf`, `doorman serve` and its
 * authd, OpenLDAP for the group rule (squid.groups.allow = Staff Users: alice is in it, bob is not). What
 * explain says is checked against what Squid does with the same client.
 */
let slapd: Slapd;
let lab: Lab;
let browser: Browser | undefined;
const ADMIN_PASSWORD = 'Explain admin pass 1';

beforeAll(async () => {
  slapd = await startSlapd();
  lab = await startLab({
    config: {
      squid: { ttl: 0, negativeTtl: 0, groups: { ttl: 0, negativeTtl: 0, allow: ['Staff Users'] } },
    },
    beforeSquid: async (doorman) => void (await applyDirectory(doorman, slapd)),
  });
  await lab.doorman(['admin', 'passwd', '--user', 'admin'], { input: `${ADMIN_PASSWORD}\n` });
  browser = await launchChromium(join(lab.dir, 'chromium'));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await lab?.stop();
  await slapd?.stop();
});

const login = (username: string, from: string) =>
  http(`${lab.doormanUrl}api/login/`, { method: 'POST', from, ...form({ api_key: lab.apiKey, username }) });
const browse = (from: string) =>
  curlViaProxy(`${lab.originUrl}page`, `http://127.0.0.1:${lab.squidPort}`, { from });

async function explainJson(...args: string[]): Promise<{ code: number | null; e: Explanation }> {
  const result = await lab.doorman(['explain', ...args, '--json'], { allowFailure: true });
  return { code: result.code, e: JSON.parse(result.stdout) as Explanation };
}
const status = (e: Explanation) => Object.fromEntries(e.steps.map((s) => [s.id, s.status]));

describe('doorman explain through a real Squid', () => {
  it('a client logged in through the API: identified, and authd answers OK user=alice (exit 0)', async () => {
    expect((await login('alice', '127.0.0.21')).status).toBe(200);
    expect((await browse('127.0.0.21')).status).toBe(200);
    const { code, e } = await explainJson('127.0.0.21');
    expect(code).toBe(0);
    expect(e).toMatchObject({ ip: '127.0.0.21', verdict: 'identified', via: 'session', user: 'alice' });
    expect(status(e)).toEqual({
      session: 'ok',
      registration: 'not-applicable',
      authd: 'ok',
      groups: 'ok',
      'squid-cache': 'ok',
      icap: 'not-applicable',
      seamless: 'not-applicable',
    });
    const authd = e.steps.find((s) => s.id === 'authd');
    expect(authd?.found).toMatch(
      /^Asked "127\.0\.0\.21 -" on .*\/run\/session\.sock as Squid's helper would: OK user=alice/,
    );
    expect(e.steps.find((s) => s.id === 'groups')?.found).toMatch(/^alice is in one of "Staff Users"/);
    expect(e.steps.find((s) => s.id === 'session')?.found).toMatch(/^alice, from the login API, since /);
  });

  it('a client with no login: not identified, the session step decides with the login API as advice (exit 1)', async () => {
    // With a directory applied, Squid asks an unidentified client for a password: the prompt explain is for.
    expect((await browse('127.0.0.22')).status).toBe(407);
    const { code, e } = await explainJson('127.0.0.22');
    expect(code).toBe(1);
    expect(e).toMatchObject({ verdict: 'not-identified', decidingStep: 'session', user: null });
    expect(status(e)).toMatchObject({ session: 'fails', authd: 'fails', groups: 'not-applicable' });
    expect(e.steps.find((s) => s.id === 'authd')?.found).toContain(
      ': ERR: no live session for this address.',
    );
    expect(e.steps.find((s) => s.id === 'session')?.advice).toContain(`POST ${lab.doormanUrl}api/login/`);
  });

  it("a user outside squid.groups.allow: Squid refuses, and the group step fails with the user's groups", async () => {
    expect((await login('bob', '127.0.0.23')).status).toBe(200);
    expect((await browse('127.0.0.23')).status).toBe(403);
    const { code, e } = await explainJson('127.0.0.23');
    expect(code).toBe(1);
    expect(e).toMatchObject({ verdict: 'not-identified', decidingStep: 'groups', user: 'bob' });
    expect(status(e)).toMatchObject({ session: 'ok', authd: 'ok', groups: 'fails' });
    const groups = e.steps.find((s) => s.id === 'groups');
    expect(groups?.found).toMatch(/^bob is in none of "Staff Users"; the user's groups: .*proxy-users/);
    expect(groups?.advice).toContain('add bob to one of "Staff Users"');
  });

  it('the text form: the summary first, then each step numbered with what to do', async () => {
    const result = await lab.doorman(['explain', '127.0.0.22'], { allowFailure: true });
    expect(result.code).toBe(1);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(/^127\.0\.0\.22 is not identified: No session on 127\.0\.0\.22\. To do: /);
    expect(lines).toContain('1. Session on the address: fails');
    expect(lines).toContain('3. What authd answers Squid: fails');
    expect(result.stdout).toContain('   To do: log the user in through the login API');
  });

  it('bad input: exit 2 naming the field, the value and what is allowed', async () => {
    const ip = await lab.doorman(['explain', '10.0.0.300'], { allowFailure: true });
    expect(ip.code).toBe(2);
    expect(ip.stderr).toContain(
      'explain: ip: "10.0.0.300" is not an IP address (allowed: IPv4 like 10.0.0.5',
    );
    const mac = await lab.doorman(['explain', '127.0.0.22', '--mac', 'zz:00'], { allowFailure: true });
    expect(mac.code).toBe(2);
    expect(mac.stderr).toContain('explain: mac: "zz:00" is not a MAC address');
  });

  it('the captive portal on: the ICAP decision for a page load from an unidentified client is the splash page', async () => {
    await lab.doorman(['portal', 'set', '--mode', 'authentication']);
    try {
      const { e } = await explainJson('127.0.0.22');
      const icap = e.steps.find((s) => s.id === 'icap');
      expect(icap?.status).toBe('fails');
      expect(icap?.found).toBe(
        `An intercepted page load (GET http://example.com/) gets a 302 to the splash page (${lab.doormanUrl}portal/): the client is sent to the portal.`,
      );
      expect(icap?.advice).toMatch(/^sign in on the splash page/);
      // An identified client never reaches ICAP.
      const alice = await explainJson('127.0.0.21');
      expect(alice.e.steps.find((s) => s.id === 'icap')?.status).toBe('not-applicable');
    } finally {
      await lab.doorman(['portal', 'set', '--mode', 'off']);
    }
  });

  it('authd stopped: the authd step says so and how to start it', async () => {
    await lab.doorman(['authd', 'stop']);
    try {
      const { code, e } = await explainJson('127.0.0.21');
      expect(code).toBe(1);
      expect(e).toMatchObject({ verdict: 'not-identified', decidingStep: 'authd' });
      const authd = e.steps.find((s) => s.id === 'authd');
      expect(authd?.found).toMatch(/^authd does not answer on .*session\.sock \((no-socket|refused)/);
      expect(authd?.advice).toContain('systemctl start doorman-authd');
    } finally {
      await lab.doorman(['authd', 'start']);
    }
  });
});

/** Nothing wider than the viewport: no sideways scrolling on a phone (see admin-portal.e2e.test.ts). */
describe.each<ViewportName>(['desktop', 'phone'])('the Explain screen in Chromium (%s)', (viewport) => {
  it('signs in, reaches Explain from the navigation, and explains two clients typed with the keyboard', async () => {
    if (browser === undefined) throw new Error('no browser');
    expect((await login('alice', '127.0.0.24')).status).toBe(200);
    expect((await login('bob', '127.0.0.25')).status).toBe(200);
    const { context, page } = await newPage(browser, viewport);
    try {
      await page.goto(`${lab.doormanUrl}admin/explain`);
      await signInAdmin(page, 'admin', ADMIN_PASSWORD);
      await page
        .getByRole('navigation', { name: 'Screens' })
        .getByRole('link', { name: 'Explain a client' })
        .click();
      await page.waitForURL(/\/admin\/explain$/);
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-explain-form');

      // Typed and sent with Enter: the URL carries the question, the verdict comes first.
      await page.getByLabel('Client IP address').fill('127.0.0.24');
      await page.getByLabel('Client IP address').press('Enter');
      await page.waitForURL(/\/admin\/explain\?ip=127\.0\.0\.24&mac=$/);
      const verdict = page.getByRole('status');
      expect(await verdict.textContent()).toContain('Identified. 127.0.0.24 is identified as alice');
      expect(await page.locator('#step-authd').textContent()).toContain('OK user=alice');
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-explain-identified');

      // Keyboard only: Tab from the address field to the MAC field and on to the button.
      await page.getByLabel('Client IP address').fill('127.0.0.25');
      await page.getByLabel('Client IP address').press('Tab');
      await page.keyboard.press('Tab');
      await page.keyboard.press('Enter');
      await page.waitForURL(/ip=127\.0\.0\.25/);
      expect(await page.getByRole('status').textContent()).toContain('Not identified.');
      const groups = page.locator('#step-groups');
      expect(await groups.textContent()).toMatch(/Fails\s*The group rule/);
      expect(await groups.textContent()).toContain('To do: add bob to one of "Staff Users"');
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-explain-group-fails');

      // A bad address: the summary links to the field, which says why.
      await page.getByLabel('Client IP address').fill('10.0.0.300');
      await page.getByLabel('Client IP address').press('Enter');
      await expect.poll(() => page.getByRole('alert').textContent()).toContain('1 field needs attention.');
      expect(await page.locator('#x-ip-problem').textContent()).toContain(
        '"10.0.0.300" is not an IP address',
      );
      await expectNoSidewaysScroll(page);
    } finally {
      await context.close();
    }
  });
});
