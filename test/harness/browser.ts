import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { ROOT } from './lab.ts';

/**
 * Debian's Chromium driven by playwright-core, headless, optionally inside a network namespace: Playwright
 * starts an executable wrapper (`exec ip netns exec NS chromium "$@"`), so the browser's traffic comes from the
 * namespace while this process drives it over the DevTools pipe (fds 3 and 4, which `ip netns exec` keeps).
 *
 * The real binary, not /usr/bin/chromium: Debian's shell wrapper adds its own switches and complains about
 * /dev/shm here. As root Chromium runs only without its sandbox (chromiumSandbox: false). HOME points into the
 * test's directory (Chromium's profile bits land there, not in root's home), and the proxy variables are
 * dropped: Chromium on Linux takes its proxy from them, and these clients are intercepted, not proxied.
 */
export const CHROMIUM = '/usr/lib/chromium/chromium';

export const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 360, height: 740 },
} as const;
export type ViewportName = keyof typeof VIEWPORTS;

export const SCREENSHOTS = join(ROOT, 'test-artifacts', 'screenshots');

/** Launch Chromium, inside namespace `netns` when given; `dir` holds the wrapper and HOME. */
export async function launchChromium(dir: string, netns?: string): Promise<Browser> {
  mkdirSync(join(dir, 'home'), { recursive: true });
  let executablePath = CHROMIUM;
  if (netns !== undefined) {
    executablePath = join(dir, `chromium-in-${netns}`);
    writeFileSync(executablePath, `#!/bin/sh\nexec ip netns exec '${netns}' ${CHROMIUM} "$@"\n`);
    chmodSync(executablePath, 0o755);
  }
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env))
    if (value !== undefined && !/^(?:https?|all|no)_proxy$/i.test(name)) env[name] = value;
  env.HOME = join(dir, 'home');
  return chromium.launch({ executablePath, headless: true, chromiumSandbox: false, env, timeout: 30_000 });
}

/** A fresh context (no cookies) at a viewport; the phone one is a touch device. */
export async function newPage(
  browser: Browser,
  viewport: ViewportName,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    viewport: VIEWPORTS[viewport],
    ...(viewport === 'phone' ? { isMobile: true, hasTouch: true } : {}),
  });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return { context, page };
}

/** Save the page as test-artifacts/screenshots/NAME-WxH.png (the whole page); returns the path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const size = page.viewportSize();
  const path = join(SCREENSHOTS, `${name}-${size?.width ?? 0}x${size?.height ?? 0}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** The page is no wider than the viewport asked for: nothing to scroll sideways to. */
export async function expectNoSidewaysScroll(page: Page): Promise<void> {
  // A string, evaluated in the page: this project's TypeScript has no DOM types. Compared with the viewport
  // asked for, not innerWidth: a mobile browser widens its layout viewport to fit content that overflows.
  const scroll = (await page.evaluate('document.documentElement.scrollWidth')) as number;
  expect(scroll).toBeLessThanOrEqual(page.viewportSize()?.width ?? 0);
}

/** On the admin sign-in page: sign in with the mouse and land on Home. */
export async function signInAdmin(page: Page, user: string, password: string): Promise<void> {
  await page.getByLabel('User name').fill(user);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/admin\/$/);
}
