import { describe, expect, it } from 'vitest';
import { FakeSeamlessControl } from '../../../support/fake-seamless-control.ts';
import { joinedState } from '../../../support/seamless-state.ts';
import { systemClock } from '../../../../lib/clock.ts';
import type { HomeProbes } from '../../../../portal/admin/home-checks.ts';
import { SETTINGS, useAdminPortal, textOf } from './harness.ts';

const { start } = useAdminPortal();

const never = () => new Promise<never>(() => {});

/** The Home page's text, and each check's block by its id. */
async function home(
  probes: HomeProbes,
  options: { seamless?: FakeSeamlessControl; directory?: boolean } = {},
) {
  const { seamless } = options;
  const p = await start({}, { probes, ...(seamless === undefined ? {} : { seamless }) });
  if (options.directory === true) p.directory.stored = { settings: SETTINGS, password: 'x' };
  const b = p.browser();
  await b.signIn();
  const started = performance.now();
  const page = await b.get('/admin/');
  const took = performance.now() - started;
  const check = (id: string) => {
    const at = page.text.indexOf(`id="check-${id}"`);
    if (at < 0) throw new Error(`no check ${id} on the page:\n${page.text}`);
    return textOf(page.text.slice(page.text.lastIndexOf('<li', at), page.text.indexOf('</li>', at)));
  };
  return { p, page, took, check };
}

describe('the Home screen', () => {
  it('sends a visitor who is not signed in to the sign-in page', async () => {
    const p = await start();
    const reply = await p.browser().get('/admin/');
    expect(reply.status).toBe(303);
    expect(reply.headers.location).toBe('/admin/sign-in');
  });

  it('says what works and links to where each part is fixed', async () => {
    const seamless = new FakeSeamlessControl(systemClock);
    const state = joinedState();
    seamless.state = state;
    seamless.winbind = 'running';
    seamless.trust = 'ok';
    const { page, check } = await home(
      {
        directory: async () => ({ groupCount: 42 }),
        authd: async () => ({ ok: true, ms: 3.2 }),
        store: async () => ({
          engine: 'sqlite',
          location: '/var/lib/doorman/doorman.db',
          schemaVersion: 9,
          connected: true,
        }),
      },
      { seamless },
    );
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<a href="\/admin\/" aria-current="page"\s*>Home<\/a/);
    expect(check('authd')).toBe(
      'Working Squid helpers (authd) Up: answered a lookup in 3 ms. No lookup from Squid since authd started. On the server: doorman authd status',
    );
    expect(check('store')).toBe(
      'Working Store SQLite, connected: /var/lib/doorman/doorman.db. On the server: doorman store status',
    );
    expect(check('portal')).toContain(
      'Off Captive portal Mode: Off. 0 devices are signed in through the portal. Go to Captive portal',
    );
    expect(check('seamless')).toContain(
      `Joined to ${state.domain} as ${state.realm}; winbindd running, trust ok.`,
    );
    expect(check('seamless')).toContain('Doctor: ');
    expect(page.text).toContain('<a href="/admin/seamless">Go to Seamless authentication</a>');
    // No directory was applied when the page was made: it says so, with the link.
    expect(check('directory')).toBe(
      'Off Directory service Not set up: no user can be checked against a directory. Go to Directory service',
    );
  });

  it("authd's last lookup from Squid: which client, what it was told, and when", async () => {
    const at = Date.UTC(2026, 0, 1) - 90_000;
    const { check } = await home({
      authd: async () => ({ ok: true, ms: 1, lastLookup: { at, ip: '10.0.0.5', answer: 'OK' } }),
    });
    expect(check('authd')).toContain(
      'Last lookup from Squid: 10.0.0.5, answered OK, 90 s ago (2025-12-31 23:58:30 UTC).',
    );
  });

  it('the directory reachable, with its group count', async () => {
    const { check } = await home({ directory: async () => ({ groupCount: 42 }) }, { directory: true });
    expect(check('directory')).toBe(
      'Working Directory service Reachable: dc1.example.test (active-directory), 42 user groups found. Go to Directory service',
    );
  });

  it('the directory unreachable: failing, and why', async () => {
    const refused = async (): Promise<never> => {
      throw new Error('connect ECONNREFUSED 10.0.0.1:636');
    };
    const { check, page } = await home({ directory: refused }, { directory: true });
    expect(check('directory')).toContain(
      'Failing Directory service dc1.example.test (active-directory) is not reachable: connect ECONNREFUSED 10.0.0.1:636',
    );
    expect(textOf(page.text)).toContain('1 part is failing: Directory service.');
  });

  it('a check that does not answer is "unknown (timed out)" within its deadline: the page never hangs', async () => {
    const { took, check } = await home(
      { deadlineMs: 300, directory: never, authd: never, store: never },
      { directory: true },
    );
    expect(took).toBeLessThan(3000);
    expect(check('authd')).toContain('Unknown Squid helpers (authd) unknown (timed out)');
    expect(check('store')).toContain('Unknown Store unknown (timed out)');
    expect(check('directory')).toContain(
      'Unknown Directory service dc1.example.test (active-directory): unknown (timed out), no answer within 300 ms.',
    );
  });

  it('authd not answering and the store disconnected are failing, with what to run', async () => {
    const { check, page } = await home({
      authd: async () => ({ ok: false, detail: '/var/lib/doorman/run/session.sock: ENOENT' }),
      store: async () => ({
        engine: 'postgres',
        location: 'postgres://db.example/doorman',
        schemaVersion: undefined,
        connected: false,
        staleMs: 42_000,
      }),
    });
    expect(check('authd')).toContain(
      "Failing Squid helpers (authd) Not answering: /var/lib/doorman/run/session.sock: ENOENT. Squid's lookups fail until it is back.",
    );
    expect(check('store')).toContain(
      "Failing Store PostgreSQL, NOT connected: postgres://db.example/doorman. This box's copy caught up 42 s ago.",
    );
    expect(textOf(page.text)).toContain('2 parts are failing: Squid helpers (authd), Store.');
  });
});
