import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/clock.ts';
import {
  launchChromium,
  newPage,
  screenshot,
  type ViewportName,
  expectNoSidewaysScroll,
  signInAdmin,
} from '../harness/browser.ts';
import { doctorReport } from '../../lib/seamless/doctor/report.ts';
import { FakeSeamlessControl, GREEN_CHECKS, PTR_MISSING } from '../support/fake-seamless-control.ts';
import {
  ADMIN,
  ADMIN_PASSWORD,
  SETTINGS,
  startAdminPortal,
  type AdminPortal,
} from '../unit/portal/admin/harness.ts';

/**
 * The Enable seamless screen in a real browser (Chromium, no script: the CSP forbids it): unavailable until a
 * Windows domain is applied, the dialogue with its problems, Enable with each step shown while the join is still
 * running (the answer is streamed HTML), the status once joined, the doctor, a failed Enable with the doctor's
 * fixes, and Disable locally. At a desktop and a phone viewport, with screenshots in
 * test-artifacts/screenshots/admin-seamless-*.png.
 *
 * The app runs in this process with the real admin, session and portal stores and a FAKE SeamlessControl: a
 * real join needs serve's root child and a domain controller, and belongs to the seamless-join e2e tests. The
 * fake is held after its join step so the test can see the page mid-way.
 */
let dir: string;
let portal: AdminPortal | undefined;
let control: FakeSeamlessControl;
let browser: Browser | undefined;
let baseUrl: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'doorman-admin-seamless-'));
  control = new FakeSeamlessControl(new ManualClock(Date.UTC(2026, 10, 23, 9, 30)));
  portal = await startAdminPortal({}, { seamless: control });
  const at = portal.server.addresses[0];
  if (at === undefined) throw new Error('the portal listens nowhere');
  baseUrl = `http://${at.host}:${at.port}/`;
  browser = await launchChromium(join(dir, 'chromium'));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await portal?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Nothing wider than the viewport: no sideways scrolling on a phone. */
const JOIN_PASSWORD = 'J0in pässword';

describe.each<ViewportName>(['desktop', 'phone'])('the Enable seamless screen (%s)', (viewport) => {
  it('is unavailable without a Windows domain, validates the dialogue, streams Enable, shows the status, the doctor and Disable', async () => {
    if (browser === undefined || portal === undefined) throw new Error('no browser');
    portal.directory.stored = undefined;
    control.state = undefined;
    control.failAt = undefined;
    const { context, page } = await newPage(browser, viewport);
    try {
      await page.goto(`${baseUrl}admin/sign-in`);
      await signInAdmin(page, ADMIN, ADMIN_PASSWORD);
      await page
        .getByRole('navigation', { name: 'Screens' })
        .getByRole('link', { name: 'Seamless authentication' })
        .click();
      await page.waitForURL(/\/admin\/seamless$/);

      // No directory applied: the reason, no dialogue.
      expect(await page.locator('#seamless-unavailable').innerText()).toContain(
        'Enable seamless is unavailable: no directory service is configured',
      );
      expect(await page.getByLabel('Administrator password', { exact: true }).count()).toBe(0);
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-seamless-unavailable');

      // A Windows domain applied: the dialogue, the domain suggested from the search base.
      portal.directory.stored = { settings: SETTINGS, password: 'bind' };
      await page.reload();
      expect(await page.getByLabel('Domain (FQDN)').inputValue()).toBe('example.test');
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-seamless-form');

      // Problems: every one at its field and in the summary; the password not kept.
      await page.getByLabel('Domain (FQDN)').fill('dc1.example.test');
      await page.getByLabel('NetBIOS domain name').fill('BAD/NAME');
      await page.getByLabel('Administrator user name', { exact: true }).fill('EXAMPLE\\Administrator');
      await page.getByLabel('Administrator password', { exact: true }).fill(JOIN_PASSWORD);
      await page.getByRole('button', { name: 'Enable', exact: true }).click();
      const summary = page.locator('#problem-summary');
      await expect.poll(() => summary.textContent()).toContain('3 fields need attention.');
      expect(await summary.getByRole('link', { name: 'Domain (FQDN)' }).getAttribute('href')).toBe(
        '#f-domain',
      );
      expect(await page.locator('#f-domain-problem').textContent()).toContain(
        "is the directory server's host name, not the domain",
      );
      expect(await page.locator('#f-serverVersion-problem').textContent()).toContain(
        'choose the Windows Server',
      );
      expect(await page.getByLabel('Administrator password', { exact: true }).inputValue()).toBe('');
      expect(await page.content()).not.toContain(JOIN_PASSWORD);
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-seamless-problems');

      // Enable: the steps appear while the fake still holds the join; then the outcome.
      await page.getByLabel('Domain controller version').selectOption('2016');
      await page.getByLabel('Domain (FQDN)').fill('example.test');
      await page.getByLabel('NetBIOS domain name').fill('');
      await page.getByLabel('Administrator password', { exact: true }).fill(JOIN_PASSWORD);
      control.report = doctorReport(GREEN_CHECKS);
      const pause = control.pauseAfter('join');
      await Promise.all([
        page.waitForURL(/\/admin\/seamless\/enable$/, { waitUntil: 'commit' }),
        page.getByRole('button', { name: 'Enable', exact: true }).click({ noWaitAfter: true }),
      ]);
      await pause.reached;
      await page.locator('#step-join .status.ok').waitFor();
      expect(await page.locator('#step-keytab').count()).toBe(0);
      expect(await page.locator('#seamless-outcome').count()).toBe(0);
      // A finished step's "running…" marker is hidden by the stylesheet alone.
      expect(await page.locator('#step-preconditions .running').isHidden()).toBe(true);
      expect(await page.locator('#step-join').innerText()).toMatch(/^Join the domain done/);
      await screenshot(page, 'admin-seamless-progress');
      pause.release();
      const outcome = page.locator('#seamless-outcome');
      await outcome.waitFor();
      expect(await outcome.innerText()).toContain('Seamless authentication is on.');
      expect(await page.locator('#seamless-steps > li').count()).toBe(6);
      expect(await page.content()).not.toContain(JOIN_PASSWORD);
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-seamless-enabled');

      // Joined: the status, Enable again, the doctor, Disable.
      await page.getByRole('link', { name: 'Back to seamless authentication' }).click();
      await page.waitForURL(/\/admin\/seamless$/);
      const status = await page.locator('#seamless-status').innerText();
      expect(status).toContain('The proxy is a member of example.test.');
      expect(status).toMatch(/Proxy FQDN\s+proxy\.example\.test/);
      expect(status).toMatch(/Trust with the domain\s+ok/);
      expect(await page.getByRole('heading', { name: 'Enable again (repair)' }).count()).toBe(1);
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-seamless-joined');

      control.report = doctorReport([...GREEN_CHECKS, PTR_MISSING]);
      await page.getByRole('button', { name: 'Run the doctor' }).click();
      await page.waitForURL(/\/admin\/seamless\/doctor\??$/);
      expect(await page.locator('#check-dns-ptr').innerText()).toContain('Fix: add a PTR record');
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-seamless-doctor');

      // Enable again, failing: the failed step, its fix, and the doctor's report.
      await page.getByRole('link', { name: 'Back to seamless authentication' }).click();
      await page.waitForURL(/\/admin\/seamless$/);
      control.failAt = 'join';
      await page.getByLabel('Administrator password', { exact: true }).fill(JOIN_PASSWORD);
      await page.getByRole('button', { name: 'Enable again' }).click();
      await page.locator('#seamless-outcome').waitFor();
      expect(await page.locator('#step-join').innerText()).toContain('failed');
      expect(await page.locator('#doctor-report').innerText()).toContain(
        'Seamless authentication is not ready',
      );
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-seamless-failed');
      control.failAt = undefined;

      // Disable locally: no credentials, the account stays in AD, restart Squid.
      await page.getByRole('link', { name: 'Back to seamless authentication' }).click();
      await page.waitForURL(/\/admin\/seamless$/);
      await page.getByRole('button', { name: 'Disable locally' }).click();
      await page.locator('#seamless-outcome').waitFor();
      const disabled = await page.locator('#seamless-outcome').innerText();
      expect(disabled).toContain('Seamless authentication is off.');
      expect(disabled).toContain('Restart Squid');
      expect(disabled).toContain('The computer account PROXY$ remains in Active Directory');
      await expectNoSidewaysScroll(page);
      await screenshot(page, 'admin-seamless-disabled');
      expect(portal.logs.join('\n')).not.toContain(JOIN_PASSWORD);
    } finally {
      control.releaseAll();
      await context.close();
    }
  });
});
