import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/clock.ts';
import { dbPath, parseConfig } from '../../lib/config/load.ts';
import { addressBinding } from '../../lib/portal/address-binding.ts';
import { DEFAULT_PORTAL_SETTINGS } from '../../lib/portal/settings.ts';
import { openDatabase, type Db } from '../../lib/store/database.ts';
import { PORTAL_SESSION_SOURCES } from '../../lib/store/portal-settings-store.ts';
import { SessionStore } from '../../lib/store/session-store.ts';
import type { Session } from '../../lib/store/session.ts';
import { DeviceGroupStore } from '../../lib/store/device-group-store.ts';
import { CidrSet } from '../../lib/portal/settings.ts';
import { PROXY_CLIENT_HEADER, proxyKeyPath, readProxyKey } from '../../lib/security/proxy-key.ts';
import { http, form, type Response } from '../harness/http.ts';
import { applyDirectory } from '../harness/apply-directory.ts';
import { launchChromium, newPage, screenshot, type ViewportName } from '../harness/browser.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import {
  createPortalNet,
  removeStalePortalNet,
  type InnerNetns,
  type PortalNet,
} from '../harness/netns-lab.ts';
import type { Netns } from '../harness/netns.ts';
import { portalLocation, signedPortal } from '../harness/portal-url.ts';
import { freePort } from '../harness/processes.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../harness/slapd.ts';

/**
 * The captive portal end to end with intercepted clients: a client namespace on the proxy's link and a routed
 * one behind a router namespace, both with port 80 REDIRECTed (nftables) to the intercept port of a real
 * Squid 5.7 running the generated configuration, which asks the ICAP service of a real `doorman serve`; the
 * origin lives in a namespace of its own (see test/harness/netns-lab.ts). The directory is a real slapd. The
 * splash pages are driven by Debian's Chromium running inside the client namespaces (test/harness/browser.ts),
 * at a desktop and a phone viewport, with screenshots in test-artifacts/screenshots/.
 *
 * One topology for the whole file; each test sets the mode it needs and starts from no portal sessions.
 */
const PREFIX = 'dmp';
const PAGE = ['-H', 'Accept: text/html,application/xhtml+xml,*/*;q=0.8'];
const VIEWPORTS: readonly ViewportName[] = ['desktop', 'phone'];
const POLICY = 'Be kind to the network. No file sharing on the guest Wi-Fi.';

let net: PortalNet;
let slapd: Slapd;
let lab: Lab;
let baseUrl: string;
let work: string;
let policyFile: string;
let db: Db;
/** The lab's session DB, from this process (root): the files exist, owned by the service, while serve runs. */
let sessions: SessionStore;
/** The lab's proxy key: lets this process (on 127.0.0.1, a trusted proxy) speak for other client addresses. */
let proxyKey: string;
const browsers = new Map<string, Browser>();

beforeAll(async () => {
  removeStalePortalNet(PREFIX);
  work = mkdtempSync(join(tmpdir(), 'doorman-portal-e2e-'));
  chmodSync(work, 0o755); // the CLI reads the policy file as the service user
  policyFile = join(work, 'policy.txt');
  writeFileSync(policyFile, POLICY, { mode: 0o644 });
  net = await createPortalNet(PREFIX);
  slapd = await startSlapd();
  // Squid's intercept port listens on every address ([::]).
  const interceptPort = await freePort('0.0.0.0', ['::']);
  const icapPort = await freePort();
  lab = await startLab({
    config: ({ doormanPort }) => ({
      // The clients reach Doorman on the host side of the client's link (the routed one through its router).
      baseUrl: `http://${net.proxyAddress}:${doormanPort}/`,
      listen: [
        { host: '127.0.0.1', port: doormanPort },
        { host: '::1', port: doormanPort },
        { host: net.proxyAddress, port: doormanPort },
      ],
      // ttl 0: Squid asks the session helper on every request, so a sign-in or a Clear shows at once.
      squid: {
        ttl: 0,
        negativeTtl: 0,
        concurrency: 50,
        childrenMax: 2,
        intercept: { httpPort: interceptPort },
      },
      icap: { port: icapPort },
      // "Last seen" reaches the DB within a second (the short idle test below).
      lastSeenFlushSeconds: 1,
    }),
    beforeSquid: async (doorman) => void (await applyDirectory(doorman, slapd)),
  });
  baseUrl = `http://${net.proxyAddress}:${lab.doormanPort}/`;
  const config = parseConfig(JSON.parse(readFileSync(lab.configFile, 'utf8')), lab.configFile);
  db = openDatabase(dbPath(config), { mustExist: true });
  sessions = new SessionStore(db, systemClock);
  proxyKey = readProxyKey(proxyKeyPath(config));
  net.redirect(interceptPort);
}, 60_000);

afterAll(async () => {
  for (const browser of browsers.values()) await browser.close().catch(() => {});
  db?.close();
  await lab?.stop();
  await slapd?.stop();
  await net?.remove();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The splash page's address as ICAP sends it for `url` (signed: see lib/security/portal-url-signature.ts). */
const splashFor = (url: string) => signedPortal(`${baseUrl}portal/`, url);
/** A link to the splash page someone made by hand: no signature. */
const craftedLink = (url: string) => `${baseUrl}portal/?url=${encodeURIComponent(url)}`;
const nsOf = (from: 'client' | 'routed'): Netns | InnerNetns => (from === 'client' ? net.client : net.routed);
const addressOf = (from: 'client' | 'routed') => nsOf(from).address;

/** Status and Location of a request from a client namespace (no redirect followed). */
async function fetchFrom(from: 'client' | 'routed', url: string, extra: readonly string[] = PAGE) {
  const { stdout } = await net.curl(nsOf(from), [
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{redirect_url}',
    ...extra,
    url,
  ]);
  const [status = '', location = ''] = stdout.split(' ');
  const splash = location.startsWith(`${baseUrl}portal/?`);
  return { status: Number(status), location: splash ? portalLocation(location) : location };
}

/** A Chromium inside the client's (or the routed client's) namespace, launched once per file. */
async function browserIn(from: 'client' | 'routed'): Promise<Browser> {
  let browser = browsers.get(from);
  if (browser === undefined) {
    browser = await launchChromium(join(work, from), nsOf(from).name);
    browsers.set(from, browser);
  }
  return browser;
}

let modeNow = '';
/**
 * A test's mode (with the policy, so the forms carry #agree), set with `doorman portal set` when it differs from
 * the last test's (each CLI run costs about a second); and no portal sessions left from earlier tests.
 */
async function portalMode(mode: 'authentication' | 'agreement' | 'registration'): Promise<void> {
  if (mode !== modeNow) await lab.cli('portal', 'set', '--mode', mode, '--policy-file', policyFile);
  modeNow = mode;
  sessions.endBySource(PORTAL_SESSION_SOURCES);
}

/** The live sessions, as key, user and source. */
const live = () =>
  sessions.list().map((s: Session) => ({ key: s.key.value, username: s.username, source: s.source }));

/** access.log lines of a client's requests for a URL (Squid writes each as the request ends). */
const logged = (ip: string, url: string) =>
  lab.accessLog().filter((line) => line.includes(` ${ip} `) && line.includes(` ${url} `));

/**
 * Open `url` in a fresh context at `viewport` in the client's namespace; expect the splash page for it and
 * screenshot it as `${name}-splash`; `fill` the form; click #continue. Returns the page (left where the
 * click led) for the caller's assertions.
 */
async function throughSplash(
  from: 'client' | 'routed',
  viewport: ViewportName,
  name: string,
  url: string,
  fill: (page: Page) => Promise<void>,
): Promise<Page> {
  const { page } = await newPage(await browserIn(from), viewport);
  await page.goto(url);
  expect(portalLocation(page.url())).toEqual(splashFor(url));
  await screenshot(page, `${name}-splash`);
  await fill(page);
  await Promise.all([page.waitForNavigation(), page.click('#continue')]);
  return page;
}

const signIn = (user: string, password: string) => async (page: Page) => {
  await page.fill('#username', user);
  await page.fill('#password', password);
  if ((await page.locator('#agree').count()) > 0) await page.check('#agree');
};
const accept = async () => {};

/** GET the splash page with a cookie jar; its CSRF token. */
async function formToken(jar: string): Promise<string> {
  const { stdout } = await net.curl(net.client, ['-c', jar, '-b', jar, craftedLink(`${net.originUrl}x`)]);
  const token = /name="csrf"[^>]*value="([^"]*)"|value="([^"]*)"[^>]*name="csrf"/.exec(stdout);
  expect(token, stdout).not.toBeNull();
  return token?.[1] ?? token?.[2] ?? '';
}

/** POST the splash form from the client namespace (body on stdin: a 10 kB field is no command line). */
async function postForm(jar: string, fields: Record<string, string>) {
  const { stdout } = await net.client.exec(
    'curl',
    [
      '-sS',
      '--max-time',
      '20',
      '-b',
      jar,
      '-w',
      '\n%{http_code}',
      '--data-binary',
      '@-',
      `${baseUrl}portal/`,
    ],
    { input: new URLSearchParams(fields).toString(), allowFailure: true },
  );
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

/** The message on a portal page: its data-code. */
const messageCode = (page: Page) => page.getAttribute('#portal-message', 'data-code');

describe('the topology', () => {
  it("an unidentified client's page load is intercepted and sent to the splash page, from either subnet", async () => {
    await portalMode('authentication');
    const url = `${net.originUrl}welcome?a=1`;
    expect(await fetchFrom('client', url)).toEqual({ status: 302, location: splashFor(url) });
    expect(await fetchFrom('routed', url)).toEqual({ status: 302, location: splashFor(url) });
    // Answered by Squid with ICAP's 302: the origin was never asked.
    expect(logged(net.client.address, url.replace('?a=1', '?'))).toEqual([
      expect.stringMatching(/\/302 .* HIER_NONE\//),
    ]);
  });
});

describe('Authentication', () => {
  for (const viewport of VIEWPORTS) {
    it(`${viewport}: the origin's URL → the splash page → sign in → the origin's page; access.log names the user`, async () => {
      await portalMode('authentication');
      const url = `${net.originUrl}auth-${viewport}`;
      const page = await throughSplash('client', viewport, 'auth', url, signIn('alice', USER_PASSWORD));
      expect(page.url()).toBe(url);
      expect(await page.textContent('#origin')).toBe(`origin /auth-${viewport}`);
      await screenshot(page, 'auth-origin');
      await page.context().close();

      expect(await fetchFrom('client', url)).toEqual({ status: 200, location: '' });
      const lines = logged(addressOf('client'), url);
      expect(lines.at(-1)).toMatch(/ TCP_\w+\/200 \d+ GET \S+ alice /);
      expect(live()).toEqual([{ key: addressOf('client'), username: 'alice', source: 'portal' }]);
    });
  }

  it('Clear current sessions sends the client back to the splash page', async () => {
    // Signed in by the previous test.
    const url = `${net.originUrl}after-clear`;
    expect(await fetchFrom('client', url)).toEqual({ status: 200, location: '' });
    await lab.cli('portal', 'clear-sessions');
    expect(await fetchFrom('client', url)).toEqual({ status: 302, location: splashFor(url) });
  });

  it('a wrong password gets the form again with wrong_password, and no session', async () => {
    await portalMode('authentication');
    for (const viewport of VIEWPORTS) {
      const url = `${net.originUrl}wrong-${viewport}`;
      const page = await throughSplash(
        'client',
        viewport,
        'auth-wrong',
        url,
        signIn('bob', `not-his-${viewport}`),
      );
      expect(await messageCode(page)).toBe('wrong_password');
      expect(await page.inputValue('#username')).toBe('bob');
      await screenshot(page, 'auth-wrong-password');
      await page.context().close();
    }
    expect(live()).toEqual([]);
  });

  it('the splash page opened directly (no url): signing in lands on {baseUrl}portal/done', async () => {
    for (const viewport of VIEWPORTS) {
      await portalMode('authentication');
      const { page } = await newPage(await browserIn('client'), viewport);
      await page.goto(`${baseUrl}portal/`);
      await signIn('alice', USER_PASSWORD)(page);
      await Promise.all([page.waitForNavigation(), page.click('#continue')]);
      expect(page.url()).toBe(`${baseUrl}portal/done`);
      expect(await messageCode(page)).toBe('connected');
      expect(await page.textContent('#portal-message')).toContain('alice');
      await screenshot(page, 'done');
      await page.context().close();
    }
  });
});

describe('Usage Agreement Only', () => {
  beforeAll(async () => {
    await lab.cli('device-group', 'add', '--name', 'Lab clients', '--cidr', `${net.client.address}/32`);
  });

  for (const viewport of VIEWPORTS) {
    it(`${viewport}: inside an active Device Group, Accept leads to the origin's page`, async () => {
      await portalMode('agreement');
      const url = `${net.originUrl}agree-${viewport}`;
      const page = await throughSplash('client', viewport, 'agreement', url, accept);
      expect(page.url()).toBe(url);
      expect(await page.textContent('#origin')).toBe(`origin /agree-${viewport}`);
      await screenshot(page, 'agreement-origin');
      await page.context().close();
      expect(await fetchFrom('client', url)).toEqual({ status: 200, location: '' });
      expect(logged(addressOf('client'), url).at(-1)).toMatch(/ GET \S+ agreement:Lab%20clients /);
    });
  }

  it('outside every active Device Group: the page that says so (no_device_group), no session', async () => {
    await portalMode('agreement');
    const url = `${net.originUrl}no-group`;
    for (const viewport of VIEWPORTS) {
      const { page } = await newPage(await browserIn('routed'), viewport);
      await page.goto(url);
      expect(portalLocation(page.url())).toEqual(splashFor(url));
      // The page may say so at once, or once the policy is accepted.
      if ((await page.locator('#portal-message[data-code="no_device_group"]').count()) === 0)
        await Promise.all([page.waitForNavigation(), page.click('#continue')]);
      expect(await messageCode(page)).toBe('no_device_group');
      await screenshot(page, 'agreement-no-device-group');
      await page.context().close();
    }
    expect(live()).toEqual([]);
    expect(await fetchFrom('routed', url)).toEqual({ status: 302, location: splashFor(url) });
  });
});

describe('Device Registration', () => {
  for (const viewport of VIEWPORTS) {
    it(`${viewport}: sign in on the proxy's link → the MAC is registered → the origin's page`, async () => {
      await portalMode('registration');
      const url = `${net.originUrl}register-${viewport}`;
      const page = await throughSplash('client', viewport, 'registration', url, async (page) => {
        // The device's MAC, as the proxy's neighbour table has it, is shown before it is registered.
        expect(await page.textContent('#device-mac')).toBe(net.clientMac);
        // The kernel gives a veth a random, locally administered MAC: what a phone's private address is.
        expect(await page.locator('[data-code="mac_randomised"]').count()).toBe(1);
        await signIn('carol', USER_PASSWORD)(page);
      });
      expect(page.url()).toBe(url);
      await screenshot(page, 'registration-origin');
      await page.context().close();
      expect(live()).toEqual([{ key: net.clientMac, username: 'carol', source: 'registration' }]);
      expect(await fetchFrom('client', url)).toEqual({ status: 200, location: '' });
      expect(logged(addressOf('client'), url).at(-1)).toMatch(/ GET \S+ carol /);
    });
  }

  it('IPv6: a registered device (Squid has no MAC for it) is let through, and its address bound', async () => {
    await portalMode('registration');
    const url = `${net.origin6Url}v6`;
    const v6 = [...PAGE, '-g'];
    expect(await fetchFrom('client', url, v6)).toEqual({ status: 302, location: splashFor(url) });
    // Registered as the splash page registers (its form is tested above): the MAC, from the neighbour table.
    sessions.start({ key: { kind: 'mac', value: net.clientMac }, username: 'dave', source: 'registration' });
    // The helper gets no MAC for an IPv6 client, so ICAP is asked: it finds the registration by the MAC of
    // the address (NDP) and binds the address to it; from then on the helper names the user.
    expect(await fetchFrom('client', url, v6)).toEqual({ status: 200, location: '' });
    expect(live()).toContainEqual({ key: net.client6, username: 'dave', source: 'registration' });
    expect(await fetchFrom('client', url, v6)).toEqual({ status: 200, location: '' });
    expect(logged(net.client6, url).at(-1)).toMatch(/ TCP_\w+\/200 \d+ GET \S+ dave /);
  });

  it('an address binding follows the device: a newcomer with another MAC on the address is not named (issue 13)', async () => {
    await portalMode('registration');
    const url = `${net.originUrl}newcomer`;
    // Carol's device registered, and its IPv4 address bound to the registration as the ICAP decision binds it
    // (when Squid had no MAC for it): with the registration's MAC.
    const registration = sessions.start({
      key: { kind: 'mac', value: net.clientMac },
      username: 'carol',
      source: 'registration',
    });
    sessions.start(addressBinding(registration, net.client.address, DEFAULT_PORTAL_SETTINGS));
    expect(await fetchFrom('client', url)).toEqual({ status: 200, location: '' });
    expect(logged(addressOf('client'), url).at(-1)).toMatch(/ TCP_\w+\/200 \d+ GET \S+ carol /);

    // Carol's device leaves; another device (another MAC) takes the address. The proxy learns its MAC from
    // the next connection (its entry for the address is flushed, as it would go stale and be asked again).
    const newcomerMac = '02:d0:0d:13:00:99';
    await setClientMac(newcomerMac);
    try {
      // ICAP's MAC lookups are shared for 2 s (lib/net/mac-lookup-cache.ts): let any answer for carol go.
      await sleep(2100);
      expect(await fetchFrom('client', url)).toEqual({ status: 302, location: splashFor(url) });
      expect(logged(addressOf('client'), url).at(-1)).not.toMatch(/ carol /);
      // Nothing was bound to the newcomer, and carol's binding is still carol's (for her device alone).
      expect(sessions.find({ kind: 'ip', value: net.client.address })).toMatchObject({
        username: 'carol',
        mac: net.clientMac,
      });
    } finally {
      await setClientMac(net.clientMac);
    }
    // Carol's device is back on the address: named again.
    expect(await fetchFrom('client', url)).toEqual({ status: 200, location: '' });
    expect(logged(addressOf('client'), url).at(-1)).toMatch(/ TCP_\w+\/200 \d+ GET \S+ carol /);
  });

  /** Give the client's interface another MAC (live: its routes stay) and drop the proxy's entry for it. */
  async function setClientMac(mac: string): Promise<void> {
    const links = JSON.parse((await net.client.exec('ip', ['-j', 'link', 'show'])).stdout) as Array<{
      ifname: string;
    }>;
    const ifname = links.find((l) => l.ifname !== 'lo')?.ifname ?? '';
    await net.client.exec('ip', ['link', 'set', 'dev', ifname, 'address', mac]);
    execFileSync('ip', ['neigh', 'flush', 'to', net.client.address]);
  }

  it('a routed client (no MAC for the proxy) gets the page saying why (mac_not_found)', async () => {
    await portalMode('registration');
    const url = `${net.originUrl}routed`;
    for (const viewport of VIEWPORTS) {
      const { page } = await newPage(await browserIn('routed'), viewport);
      await page.goto(url);
      expect(portalLocation(page.url())).toEqual(splashFor(url));
      if ((await page.locator('#portal-message[data-code="mac_not_found"]').count()) === 0) {
        await signIn('dave', USER_PASSWORD)(page);
        await Promise.all([page.waitForNavigation(), page.click('#continue')]);
      }
      expect(await messageCode(page)).toBe('mac_not_found');
      await screenshot(page, 'registration-mac-not-found');
      await page.context().close();
    }
    expect(live()).toEqual([]);
  });
});

describe("the operating systems' probe (Android/Chrome generate_204)", () => {
  it("unidentified: 302 to the splash page; identified: the origin's 204", async () => {
    await portalMode('authentication');
    const probe = `${net.originUrl}generate_204`;
    // As Android sends it: no Accept header (curl sends */*).
    expect(await fetchFrom('client', probe, ['-H', 'Accept:'])).toEqual({
      status: 302,
      location: splashFor(probe),
    });
    // Chrome's sign-in sheet: the splash page; once signed in, the probe URL answers 204 (no page to show).
    const { page } = await newPage(await browserIn('client'), 'phone');
    await page.goto(probe);
    expect(portalLocation(page.url())).toEqual(splashFor(probe));
    await screenshot(page, 'probe-splash');
    await signIn('erin', USER_PASSWORD)(page);
    const [after] = await Promise.all([page.waitForResponse(probe), page.click('#continue')]);
    expect(after.status()).toBe(204);
    await page.context().close();
    expect(await fetchFrom('client', probe, ['-H', 'Accept:'])).toEqual({ status: 204, location: '' });
    expect(logged(addressOf('client'), probe).at(-1)).toMatch(/ TCP_\w+\/204 \d+ GET \S+ erin /);
  });
});

describe('an idle timeout through Squid', () => {
  it('a portal session with a short idle limit: identified while used, back to the splash page once idle', async () => {
    await portalMode('authentication');
    // The shortest idle limit the settings take is a minute. A session row takes any whole number of ms, so
    // this portal session (as the splash page makes it: source 'portal', the client's IP) gets 2.5 s.
    const IDLE_MS = 2500;
    sessions.start({
      key: { kind: 'ip', value: net.client.address },
      username: 'bob',
      source: 'portal',
      idleTimeoutMs: IDLE_MS,
    });
    const url = `${net.originUrl}idle`;
    // In use: each request is traffic, so the session lives on past its idle limit (5 × 0.6 s > 2.5 s). The
    // gap leaves room for "last seen" to reach the DB (lastSeenFlushSeconds 1) for the other helper child.
    for (let i = 0; i < 5; i++) {
      expect(await fetchFrom('client', url)).toEqual({ status: 200, location: '' });
      await sleep(600);
    }
    expect(logged(addressOf('client'), url).at(-1)).toMatch(/ GET \S+ bob /);
    // Then no traffic for longer than the limit: the helper refuses it, and ICAP sends it to the splash page.
    await sleep(IDLE_MS + 1500);
    expect(await fetchFrom('client', url)).toEqual({ status: 302, location: splashFor(url) });
  });
});

describe('bad input through the real stack', () => {
  it('url=javascript:… is a clear 400 (bad_request) on the page and on the form, never a redirect; nothing recorded', async () => {
    await portalMode('authentication');
    const { page } = await newPage(await browserIn('client'), 'phone');
    const shown = await page.goto(craftedLink('javascript:alert(1)'));
    expect(shown?.status()).toBe(400);
    expect(await messageCode(page)).toBe('bad_request');
    // The way on: the sign-in page without the refused URL.
    expect(await page.getAttribute('a[href$="portal/"]', 'href')).toBe(new URL(`${baseUrl}portal/`).pathname);
    await page.context().close();
    // A crafted form with a good token and the right password: refused too, before any session is made.
    const jar = join(work, 'jar-javascript');
    const csrf = await formToken(jar);
    const res = await postForm(jar, {
      csrf,
      url: 'javascript:alert(1)',
      username: 'alice',
      password: USER_PASSWORD,
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatch(/data-code="bad_request"/);
    expect(live()).toEqual([]);
  });

  it('a 10 kB user name: a clear 4xx (bad_request), nothing recorded', async () => {
    await portalMode('authentication');
    const jar = join(work, 'jar-long');
    const csrf = await formToken(jar);
    const res = await postForm(jar, {
      csrf,
      url: `${net.originUrl}x`,
      username: 'a'.repeat(10_240),
      password: 'x',
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body).toMatch(/data-code="bad_request"/);
    expect(res.body).toMatch(/username/);
    expect(live()).toEqual([]);
  });

  it('no CSRF token: 403 (csrf), nothing recorded', async () => {
    await portalMode('authentication');
    const jar = join(work, 'jar-csrf');
    await formToken(jar);
    const res = await postForm(jar, { url: `${net.originUrl}x`, username: 'alice', password: USER_PASSWORD });
    expect(res.status).toBe(403);
    expect(res.body).toMatch(/data-code="csrf"/);
    expect(live()).toEqual([]);
  });
});

describe('after sign-in, only the URL the ICAP service handed out is followed', () => {
  const PHISH = 'https://evil.example/sign-in-again';

  it('a crafted portal/?url=https://evil… link: a correct sign-in lands on portal/done, not on that site', async () => {
    await portalMode('authentication');
    const { page } = await newPage(await browserIn('client'), 'desktop');
    await page.goto(craftedLink(PHISH));
    await signIn('alice', USER_PASSWORD)(page);
    await Promise.all([page.waitForNavigation(), page.click('#continue')]);
    expect(page.url()).toBe(`${baseUrl}portal/done`);
    expect(await messageCode(page)).toBe('connected');
    await page.context().close();
    expect(live()).toEqual([{ key: addressOf('client'), username: 'alice', source: 'portal' }]);
  });

  it('a link ICAP signed for another device leads this one to portal/done too', async () => {
    await portalMode('authentication');
    const url = `${net.originUrl}signed-for-routed`;
    // The routed client's own redirect, taken to the client (as an attacker would pass on theirs).
    const { stdout } = await net.curl(net.routed, ['-o', '/dev/null', '-w', '%{redirect_url}', ...PAGE, url]);
    expect(portalLocation(stdout)).toEqual(splashFor(url));
    const { page } = await newPage(await browserIn('client'), 'phone');
    await page.goto(stdout);
    await signIn('alice', USER_PASSWORD)(page);
    await Promise.all([page.waitForNavigation(), page.click('#continue')]);
    expect(page.url()).toBe(`${baseUrl}portal/done`);
    await page.context().close();
  });
});

describe('Usage Agreement: a Device Group switched off while Accepts are in flight', () => {
  /** Addresses this process speaks for through the proxy key (not routed anywhere: the splash page only). */
  const RACE_NET = '10.123.0';

  /** The form for `ip` as the splash page shows it to that address; then its Accept. */
  async function claimedForm(ip: string): Promise<{ accept: () => Promise<Response> }> {
    const target = `http://127.0.0.1:${lab.doormanPort}/portal/`;
    const claim = { [PROXY_CLIENT_HEADER]: `${proxyKey} ${ip}` };
    const page = await http(target, { headers: claim });
    expect(page.status, page.body).toBe(200);
    const cookie = String(page.headers['set-cookie'] ?? '').split(';')[0] ?? '';
    const csrf = /name="csrf" value="([^"]*)"/.exec(page.body)?.[1] ?? '';
    const body = form({ csrf });
    return {
      accept: () =>
        http(target, { method: 'POST', body: body.body, headers: { ...claim, ...body.headers, cookie } }),
    };
  }

  it("no agreement session outlives its group, and Squid's session helper does not let the device through", async () => {
    await portalMode('agreement');
    await lab.cli(
      'device-group',
      'add',
      '--name',
      'Race',
      '--cidr',
      `${addressOf('client')}/32`,
      '--cidr',
      `${RACE_NET}.0/24`,
    );
    const groups = new DeviceGroupStore(db, { clock: systemClock });
    // Every active group holding the client (an earlier test's too) is switched off below, and back on after.
    const holding = groups.list().filter((g) => g.active && new CidrSet(g.cidrs).has(addressOf('client')));
    const jar = join(work, 'jar-race');
    const csrf = await formToken(jar);
    const others = await Promise.all(
      Array.from({ length: 20 }, (_, i) => claimedForm(`${RACE_NET}.${i + 1}`)),
    );
    const url = `${net.originUrl}race`;
    try {
      // This process holds the write lock, as another process did in the issue: serve reads the requests
      // and queues their writes, which wait (retried on timers, for up to 5 s).
      db.exec('BEGIN IMMEDIATE');
      let accepts: Promise<{ status: number }>[];
      try {
        accepts = [postForm(jar, { csrf }), ...others.map((o) => o.accept())];
        await sleep(1000);
        // As `doorman device-group set --inactive` does it, its sweep included, committed before the Accepts.
        for (const group of holding) await groups.setActive(group.id, false);
        db.exec('COMMIT');
      } finally {
        if (db.inTransaction) db.exec('ROLLBACK');
      }
      const replies = await Promise.all(accepts);
      expect(replies.map((r) => r.status)).toEqual(replies.map(() => 403));
      expect(sessions.list().filter((s) => s.source === 'agreement')).toEqual([]);
      expect(await fetchFrom('client', url)).toEqual({ status: 302, location: splashFor(url) });
      expect(logged(addressOf('client'), url).at(-1)).toMatch(/ GET \S+ - /);
    } finally {
      for (const group of holding) if (group.name !== 'Race') await groups.setActive(group.id, true);
      await lab.cli('device-group', 'remove', '--name', 'Race');
    }
  });
});
