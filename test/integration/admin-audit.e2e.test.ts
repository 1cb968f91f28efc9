import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../lib/config/schema.ts';
import {
  launchChromium,
  newPage,
  screenshot,
  type ViewportName,
  expectNoSidewaysScroll,
  signInAdmin,
} from '../harness/browser.ts';
import { form, http } from '../harness/http.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';
import { freePort, start, waitForPort, type Started } from '../harness/processes.ts';
import { run } from '../harness/run.ts';

/**
 * The Audit screen in a real browser against a real `doorman serve`: 60 API logins from two addresses and
 * an admin's sign-in are on it, newest first, 50 a page; filtered by user by keyboard alone; the older page by
 * its link; at a desktop and a phone viewport, with screenshots in test-artifacts/screenshots/admin-audit-*.png.
 */
const DOORMAN = join(ROOT, 'bin', 'doorman');
const ADMIN_PASSWORD = 'Audit screen pass 1';

let dir: string;
let configFile: string;
let baseUrl: string;
let serve: Started | undefined;
let browser: Browser | undefined;

const doorman = (...args: string[]) => run(DOORMAN, [...args, '--config', configFile]);

beforeAll(async () => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-admin-audit-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}/`;
  const config: ConfigInput = {
    baseUrl,
    listen: [{ host: '127.0.0.1', port }],
    trustedProxies: [],
    stateDir: join(dir, 'state'),
    audit: { box: 'screen-box' },
  };
  configFile = join(dir, 'doorman.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2), { mode: 0o644 });
  await run(DOORMAN, ['admin', 'passwd', '--user', 'admin', '--config', configFile], {
    input: `${ADMIN_PASSWORD}\n`,
  });
  const key = (await doorman('api-key', 'create', '--name', 'wifi')).stdout.trim().split('\n').at(-1) ?? '';
  serve = start(DOORMAN, ['serve', '--config', configFile]);
  await waitForPort('127.0.0.1', port, 10_000, serve.child);
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
  browser = await launchChromium(join(dir, 'chromium'));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await serve?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
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
