import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  launchChromium,
  newPage,
  screenshot,
  type ViewportName,
  expectNoSidewaysScroll,
  signInAdmin,
} from '../harness/browser.ts';
import { form, http } from '../harness/http.ts';
import { startServe, type ServeSite } from '../harness/serve.ts';

/**
 * The Audit screen in a real browser against a real `doorman serve`: 60 API logins from two addresses and
 * an admin's sign-in are on it, newest first, 50 a page; filtered by user by keyboard alone; the older page by
 * its link; at a desktop and a phone viewport, with screenshots in test-artifacts/screenshots/admin-audit-*.png.
 */
const ADMIN_PASSWORD = 'Audit screen pass 1';

let site: ServeSite | undefined;
let baseUrl: string;
let browser: Browser | undefined;

beforeAll(async () => {
  site = await startServe({
    name: 'doorman-admin-audit',
    adminPassword: ADMIN_PASSWORD,
    config: { audit: { box: 'screen-box' } },
  });
  baseUrl = site.baseUrl;
  const key =
    (await site.doorman(['api-key', 'create', '--name', 'wifi'])).stdout.trim().split('\n').at(-1) ?? '';
  for (let i = 0; i < 60; i++) {
    const f = form({ api_key: key, username: i % 2 === 0 ? `even${i}` : 'odd' });
    const from = i % 2 === 0 ? '127.0.0.2' : '127.0.0.3';
    const res = await http(`${baseUrl}api/login/`, {
      method: 'POST',
      from,
      body: f.body,
      headers: f.headers,
    });
    expect(res.status).toBe(200);
  }
  browser = await launchChromium(join(site.dir, 'chromium'));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await site?.stop();
});

const rows = (page: Page) => page.locator('table.audit tbody tr');

describe.each<ViewportName>(['desktop', 'phone'])('the Audit admin screen (%s)', (viewport) => {
  it('lists the events newest first, pages them, and filters by keyboard', async () => {
    if (browser === undefined) throw new Error('no browser');
    const { context, page } = await newPage(browser, viewport);
    try {
      await page.goto(`${baseUrl}admin/audit`);
      expect(new URL(page.url()).pathname).toBe('/admin/sign-in');
      await signInAdmin(page, 'admin', ADMIN_PASSWORD);
      await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Audit' }).click();
      await page.waitForURL(/\/admin\/audit$/);

      // Newest first: this admin's sign-in, then the last login; 50 a page.
      expect(await rows(page).count()).toBe(50);
      const first = (await rows(page).first().innerText()).replace(/\s+/g, ' ');
      expect(first).toContain('admin.sign-in');
      expect(first).toContain('admin:admin');
      expect(first).toContain('screen-box');
      // (The other viewport's sign-in may come next.)
      const login = rows(page).filter({ hasText: 'api.login' }).first();
      expect((await login.innerText()).replace(/\s+/g, ' ')).toMatch(
        /api\.login.*odd.*api-key:wifi.*127\.0\.0\.3/,
      );
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-audit-list');

      await page.getByRole('link', { name: 'Older events' }).click();
      await page.waitForURL(/before=/);
      // 60 logins, the CLI's key creation and two sign-ins (this viewport's and maybe the other's) so far.
      expect(await rows(page).count()).toBeGreaterThanOrEqual(12);
      expect(await page.getByRole('link', { name: 'Newest events' }).isVisible()).toBe(true);

      // By keyboard alone: the User field, typed, Enter submits the GET form.
      await page.goto(`${baseUrl}admin/audit`);
      await page.getByLabel('User', { exact: true }).focus();
      await page.keyboard.type('odd');
      await page.keyboard.press('Tab');
      await page.keyboard.type('127.0.0.3');
      await page.keyboard.press('Enter');
      await page.waitForURL(/user=odd/);
      expect(await rows(page).count()).toBe(30);
      for (const text of await rows(page).allInnerTexts()) expect(text).toContain('127.0.0.3');
      expect(await page.getByRole('link', { name: 'Older events' }).count()).toBe(0);
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-audit-filtered');

      // A bad address: the field says why, and no events are shown.
      await page.getByLabel('Address').fill('10.0.0');
      await page.getByRole('button', { name: 'Show events' }).click();
      await expect.poll(() => page.locator('#a-address-problem').textContent()).toBe('not an IP address');
      expect(await rows(page).count()).toBe(0);
      await expectNoSidewaysScroll(page);
    } finally {
      await context.close();
    }
  });
});
