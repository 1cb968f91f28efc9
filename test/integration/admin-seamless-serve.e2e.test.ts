import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browser, type Response } from '../harness/http.ts';
import type { Started } from '../harness/processes.ts';
import { startServe, type ServeSite } from '../harness/serve.ts';

/**
 * The Enable seamless screen of a real `doorman serve` started as root: the screen talks to serve's privileged
 * child (lib/seamless/privileged.ts) over its IPC channel for the status and the doctor. No domain controller
 * here (a real join through the screen's control is the seamless-join tests' business): this proves the wiring,
 * that serve hands the admin screens its root child's SeamlessControl after dropping privileges.
 */
const ADMIN_PASSWORD = 'Seamless admin pass 1';

let site: ServeSite | undefined;
let baseUrl: string;
let serve: Started | undefined;

beforeAll(async () => {
  site = await startServe({ name: 'doorman-admin-seamless-serve', adminPassword: ADMIN_PASSWORD });
  baseUrl = site.baseUrl;
  serve = site.serve;
}, 60_000);

afterAll(async () => {
  await site?.stop();
});

const browse = browser(() => baseUrl);
const csrfOf = (page: Response) => /name="csrf" value="([^"]*)"/.exec(page.body)?.[1] ?? '';

describe('the Enable seamless screen of doorman serve', () => {
  it('asks its root child once at start-up to start winbindd again (after a reboot), logging one line', async () => {
    const said = () => serve?.stderr().match(/seamless: resume winbindd: .*\n/g) ?? [];
    for (let i = 0; i < 200 && said().length === 0; i += 1) await new Promise((r) => setTimeout(r, 50));
    // Not joined here: nothing to start (the joined case: seamless-join.e2e.test.ts, `doorman seamless resume`).
    expect(said()).toEqual([
      'seamless: resume winbindd: skipped: seamless authentication is not enabled: nothing to start\n',
    ]);
  });

  it("shows the privileged child's status and the reason Enable is unavailable, and runs its doctor", async () => {
    const signInPage = await browse('admin/sign-in');
    const signedIn = await browse('admin/sign-in', {
      csrf: csrfOf(signInPage),
      user: 'admin',
      password: ADMIN_PASSWORD,
    });
    expect(signedIn.status).toBe(303);

    const page = await browse('admin/seamless');
    expect(page.status).toBe(200);
    // serve has its root child's control: no "started without a privileged helper" banner, and the status
    // (from the child, over IPC) says the proxy has not joined.
    expect(page.body).not.toContain('id="seamless-no-control"');
    expect(page.body).not.toContain('The status could not be read');
    expect(page.body).toMatch(/<p id="seamless-status">\s*<strong>Off\.<\/strong>/);
    expect(page.body).toContain(
      '<strong>Enable seamless is unavailable:</strong> no directory service is configured',
    );
    expect(page.body).not.toContain('name="adminPassword"');

    // Posted anyway: refused before the child is asked.
    const refused = await browse('admin/seamless/enable', {
      csrf: csrfOf(page),
      serverVersion: '2012',
      domain: 'example.test',
      netbiosDomain: '',
      adminUser: 'Administrator',
      adminPassword: 'not-used-1',
    });
    expect(refused.status).toBe(409);

    const doctor = await browse('admin/seamless/doctor');
    expect(doctor.status).toBe(200);
    expect(doctor.body).toContain('id="doctor-report"');
  });
});
