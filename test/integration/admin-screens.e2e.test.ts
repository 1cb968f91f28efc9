import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  launchChromium,
  newPage,
  screenshot,
  type ViewportName,
  expectNoSidewaysScroll,
} from '../harness/browser.ts';
import { form, http, type Response } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';

/**
 * The Home, Sessions, API keys and Admins screens in Chromium against a real `doorman serve` behind a real
 * Squid (the lab: ttl 0), at a desktop and a phone viewport, driven by keyboard where an admin would type: an
 * API login is identified by Squid, ended on the Sessions screen, and Squid then refuses that client; a key
 * made on the screen logs a user in until it is revoked there; an admin added there can sign in.
 * Screenshots in test-artifacts/screenshots/admin-screens-*.png.
 */
const ADMIN_PASSWORD = 'Screens admin pass 1';
/** Squid keeps an answer for ttl (0 in the lab) whole seconds: an ended session shows after at most 1 s more. */
const SQUID_SLACK_MS = 1250;

let lab: Lab | undefined;
let browser: Browser | undefined;
let dir: string;

beforeAll(async () => {
  lab = await startLab();
  await lab.doorman(['admin', 'passwd', '--user', 'admin'], { input: `${ADMIN_PASSWORD}\n` });
  dir = mkdtempSync(join(tmpdir(), 'doorman-admin-screens-'));
  browser = await launchChromium(join(dir, 'chromium'));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await lab?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const theLab = (): Lab => {
  if (lab === undefined) throw new Error('lab not started');
  return lab;
};

const browse = (from: string): Promise<Response> =>
  http(`${theLab().originUrl}page?from=${encodeURIComponent(from)}`, {
    from,
    proxy: { host: '127.0.0.1', port: theLab().squidPort },
  });

const apiLogin = (apiKey: string, username: string, from: string): Promise<Response> => {
  const f = form({ api_key: apiKey, username });
  return http(`${theLab().doormanUrl}api/login/`, { method: 'POST', from, body: f.body, headers: f.headers });
};

/** Nothing wider than the viewport: no sideways scrolling on a phone. */
/** Focus a control and press Enter on it, as a keyboard user does. */
async function press(page: Page, locator: ReturnType<Page['getByRole']>): Promise<void> {
  await locator.focus();
  await page.keyboard.press('Enter');
}

/** Type into a field found by its label (which must exist: that is the label check). */
async function typeInto(page: Page, label: string, text: string): Promise<void> {
  await page.getByLabel(label, { exact: true }).focus();
  await page.keyboard.type(text);
}

describe.each<ViewportName>(['desktop', 'phone'])('the admin screens (%s)', (viewport) => {
  const n = viewport === 'desktop' ? 1 : 2;
  const client = `127.0.0.${30 + n}`;
  const user = `screens-user-${viewport}`;

  async function signedIn(
    name = 'admin',
    password = ADMIN_PASSWORD,
  ): Promise<{ page: Page; close: () => Promise<void> }> {
    if (browser === undefined) throw new Error('no browser');
    const { context, page } = await newPage(browser, viewport);
    await page.goto(`${theLab().doormanUrl}admin/`);
    expect(new URL(page.url()).pathname).toBe('/admin/sign-in');
    await typeInto(page, 'User name', name);
    await typeInto(page, 'Password', password);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/admin\/$/);
    return { page, close: () => context.close() };
  }

  it('Home says what works; Sessions ends a session found by user, and Squid then refuses that client', async () => {
    expect((await apiLogin(theLab().apiKey, user, client)).status).toBe(200);
    const before = await browse(client);
    expect(before.status).toBe(200);
    expect(before.headers['x-doorman-user']).toBe(user);

    const { page, close } = await signedIn();
    try {
      await expect(page.getByRole('heading', { name: 'Is Doorman working?' }).isVisible()).resolves.toBe(
        true,
      );
      expect(await page.locator('#check-authd').textContent()).toContain('Up: answered a lookup');
      // The browse above was Squid's last lookup (each test's client is its own).
      expect(await page.locator('#check-authd').textContent()).toMatch(
        new RegExp(`Last lookup from Squid: ${client.replaceAll('.', '\\.')}, answered OK, \\d+ s ago`),
      );
      expect(await page.locator('#check-store').textContent()).toContain('SQLite, connected');
      await expectNoSidewaysScroll(page);
      await screenshot(page, `admin-screens-home`);

      await press(
        page,
        page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Sessions' }),
      );
      await page.waitForURL(/\/admin\/sessions$/);
      for (const label of ['Search for', 'Search by', 'Match'])
        expect(await page.getByLabel(label).count()).toBe(1);
      await typeInto(page, 'Search for', user.toUpperCase());
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/admin\/sessions\?q=/);
      expect(await page.locator('#session-count').textContent()).toContain('1 session');
      await expectNoSidewaysScroll(page);
      await screenshot(page, `admin-screens-sessions`);
      await press(page, page.getByRole('button', { name: `End the session on ${client}` }));
      await page.waitForURL(/\/admin\/sessions\/end$/);
      expect(await page.getByRole('status').textContent()).toContain(
        `Ended the session of ${user} on ${client}.`,
      );
    } finally {
      await close();
    }
    await new Promise((resolve) => setTimeout(resolve, SQUID_SLACK_MS));
    const after = await browse(client);
    expect(after.status).toBe(403);
    expect(after.headers['x-doorman-user']).toBe('-');
  });

  it('API keys: a key made there (shown once) logs a user in until it is revoked there', async () => {
    const { page, close } = await signedIn();
    try {
      await page.goto(`${theLab().doormanUrl}admin/api-keys`);
      await typeInto(page, 'Name', `screens ${viewport}`);
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/admin\/api-keys$/);
      const key = await page.getByLabel('The key').inputValue();
      expect(key).not.toBe('');
      await expectNoSidewaysScroll(page);
      await screenshot(page, `admin-screens-api-key-made`);
      expect((await apiLogin(key, `key-${viewport}`, `127.0.0.${40 + n}`)).status).toBe(200);

      await page.reload();
      expect(await page.getByLabel('The key').count()).toBe(0);
      expect(await page.content()).not.toContain(key);
      await press(page, page.getByRole('button', { name: `Revoke the key screens ${viewport}` }));
      await page.waitForURL(/\/admin\/api-keys\/revoke$/);
      expect(await page.getByRole('status').textContent()).toContain(
        `Revoked the API key screens ${viewport}`,
      );
      expect((await apiLogin(key, `key-${viewport}`, `127.0.0.${40 + n}`)).status).toBe(401);
    } finally {
      await close();
    }
  });

  it('Admins: an admin added there by keyboard can sign in', async () => {
    const { page, close } = await signedIn();
    const name = `second-${viewport}`;
    try {
      await page.goto(`${theLab().doormanUrl}admin/admins`);
      await typeInto(page, 'User name', name);
      await typeInto(page, 'Password', 'Second pass 1');
      await typeInto(page, 'Password again', 'Second pass 1');
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/admin\/admins$/);
      expect(await page.getByRole('status').textContent()).toContain(`Added the administrator ${name}.`);
      expect(await page.getByRole('heading', { name }).count()).toBe(1);
      await expectNoSidewaysScroll(page);
      await screenshot(page, `admin-screens-admins`);
    } finally {
      await close();
    }
    const second = await signedIn(name, 'Second pass 1');
    await second.close();
  });
});
