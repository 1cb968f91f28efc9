import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/clock.ts';
import { dbPath, loadConfig } from '../../lib/config/load.ts';
import { openDatabase, type Db } from '../../lib/store/database.ts';
import { SessionStore } from '../../lib/store/session-store.ts';
import { applyDirectory } from '../harness/apply-directory.ts';
import {
  launchChromium,
  newPage,
  screenshot,
  type ViewportName,
  expectNoSidewaysScroll,
  signInAdmin,
} from '../harness/browser.ts';
import { startServe, type ServeSite } from '../harness/serve.ts';
import { startSlapd, type Slapd } from '../harness/slapd.ts';

/**
 * The captive portal admin screen in a real browser against a real `doorman serve`: sign in, choose
 * Authentication with timeouts, save, read the notice, press Clear current sessions; at a desktop and a phone
 * viewport, with screenshots in test-artifacts/screenshots/admin-portal-*.png. The sessions the button must
 * end (and the API one it must not) are written straight into serve's session DB beforehand.
 */
const ADMIN_PASSWORD = 'Portal admin pass 1';

let site: ServeSite | undefined;
let baseUrl: string;
let db: Db | undefined;
let sessions: SessionStore;
let browser: Browser | undefined;
/** Applied before the screen chooses Authentication, which needs a directory. */
let slapd: Slapd | undefined;

const doorman = async (...args: string[]) => {
  if (site === undefined) throw new Error('serve not started');
  return site.doorman(args);
};

beforeAll(async () => {
  slapd = await startSlapd();
  const directory = slapd;
  site = await startServe({
    name: 'doorman-admin-portal',
    adminPassword: ADMIN_PASSWORD,
    beforeServe: (run) => applyDirectory(run, directory),
  });
  baseUrl = site.baseUrl;
  db = openDatabase(dbPath(loadConfig(site.configFile).config));
  sessions = new SessionStore(db, systemClock);
  browser = await launchChromium(join(site.dir, 'chromium'));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  db?.close();
  await site?.stop();
  await slapd?.stop();
});

/** The settings in force, as `doorman portal show` prints them. */
async function portalShow(): Promise<Record<string, unknown>> {
  return JSON.parse((await doorman('portal', 'show')).stdout) as Record<string, unknown>;
}

/** Nothing wider than the viewport: no sideways scrolling on a phone. */
describe.each<ViewportName>(['desktop', 'phone'])('the captive portal admin screen (%s)', (viewport) => {
  it('signs in, saves Authentication with timeouts, sees the notice, and clears the portal sessions', async () => {
    if (browser === undefined) throw new Error('no browser');
    await doorman('portal', 'set', '--mode', 'off', '--idle-minutes', '60', '--hard-minutes', '480');
    sessions.clear();
    sessions.start({ key: { kind: 'ip', value: '10.0.0.1' }, source: 'api', username: 'alice' });
    sessions.start({ key: { kind: 'ip', value: '10.0.0.2' }, source: 'portal', username: 'bob' });
    sessions.start({
      key: { kind: 'ip', value: '10.0.0.3' },
      source: 'agreement',
      username: 'agreement:Guests',
    });

    const { context, page } = await newPage(browser, viewport);
    try {
      // Not signed in: the sign-in page, then the Home screen, and the navigation to this one.
      await page.goto(`${baseUrl}admin/portal`);
      expect(new URL(page.url()).pathname).toBe('/admin/sign-in');
      await signInAdmin(page, 'admin', ADMIN_PASSWORD);
      await page
        .getByRole('navigation', { name: 'Screens' })
        .getByRole('link', { name: 'Captive portal' })
        .click();
      await page.waitForURL(/\/admin\/portal$/);
      expect(await page.locator('#portal-session-count').textContent()).toBe(
        '2 devices are signed in through the portal.',
      );
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-portal-form');

      // A bad value first: the summary names the field, the field says why, what was typed stays.
      await page.getByRole('radio', { name: 'Authentication' }).check();
      await page.getByLabel('Idle timeout (minutes)').fill('fifteen');
      await page.getByLabel('Hard timeout (minutes)').fill('120');
      await page.getByRole('button', { name: 'Save settings' }).click();
      const summary = page.getByRole('alert');
      await expect.poll(() => summary.textContent()).toContain('1 field needs attention.');
      expect(await summary.getByRole('link', { name: 'Idle timeout (minutes)' }).getAttribute('href')).toBe(
        '#f-idleTimeoutMinutes',
      );
      expect(await page.locator('#f-idleTimeoutMinutes-problem').textContent()).toContain(
        '"fifteen" is not a whole number of minutes',
      );
      expect(await page.getByLabel('Idle timeout (minutes)').inputValue()).toBe('fifteen');
      expect(await page.getByRole('radio', { name: 'Authentication' }).isChecked()).toBe(true);
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-portal-problems');
      expect((await portalShow()).mode).toBe('off');

      // Corrected and saved: the notice says what changed and offers Clear current sessions.
      await page.getByLabel('Idle timeout (minutes)').fill('15');
      await page.getByRole('button', { name: 'Save settings' }).click();
      const notice = page.locator('#portal-notice');
      await expect.poll(() => notice.textContent()).toContain('The settings are saved and in force.');
      const said = (await notice.innerText()).replace(/\s+/g, ' ');
      expect(said).toContain('Mode: Off → Authentication');
      expect(said).toContain('Idle timeout: 60 minutes → 15 minutes');
      expect(said).toContain('Hard timeout: 480 minutes → 120 minutes');
      expect(await portalShow()).toMatchObject({
        mode: 'authentication',
        idleTimeoutMinutes: 15,
        hardTimeoutMinutes: 120,
      });
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-portal-saved');

      await notice.getByRole('button', { name: 'Clear current sessions' }).click();
      await expect
        .poll(() => page.locator('#portal-notice').textContent())
        .toContain('2 portal sessions ended.');
      expect(await page.locator('#portal-session-count').textContent()).toBe(
        '0 devices are signed in through the portal.',
      );
      expect(sessions.list().map((s) => [s.source, s.username])).toEqual([['api', 'alice']]);
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-portal-cleared');

      // A Device Group: added from the form under the list, edited on its own page, removed there.
      const adding = page.getByRole('group', { name: 'Add a Device Group' });
      await adding.getByLabel('Name').fill('Guests');
      await adding.getByLabel('Networks').fill('10.20.0.0/16\n2001:db8:1234:5678:9abc::/80');
      await page.getByRole('button', { name: 'Add group' }).click();
      await expect.poll(() => page.locator('#portal-notice').textContent()).toContain('Guests');
      const row = page.getByRole('row', { name: /Guests/ });
      expect((await row.innerText()).replace(/\s+/g, ' ')).toContain(
        '10.20.0.0/16 2001:db8:1234:5678:9abc::/80 Yes',
      );
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-portal-groups');
      await row.getByRole('link').click();
      await page.waitForURL(/\/admin\/portal\/groups\/\d+$/);
      await page.getByLabel('Active').uncheck();
      await page.getByRole('button', { name: 'Save group' }).click();
      await expect.poll(() => page.locator('#portal-notice').textContent()).toContain('is saved');
      expect((await page.getByRole('row', { name: /Guests/ }).innerText()).replace(/\s+/g, ' ')).toMatch(
        / No$/,
      );
      await page
        .getByRole('row', { name: /Guests/ })
        .getByRole('link')
        .click();
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-portal-group-edit');
      await page.getByRole('button', { name: 'Remove the group “Guests”' }).click();
      await expect.poll(() => page.locator('#portal-notice').textContent()).toContain('is removed');
      expect(await page.getByText('There are no Device Groups yet.').isVisible()).toBe(true);
    } finally {
      await context.close();
    }
  });
});
