import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PortalDecisionSettings } from '../../icap-server/decision.ts';
import { portalService } from '../../icap-server/portal-service.ts';
import { createIcapServer, type IcapServer } from '../../icap-server/server.ts';
import { dbPath, parseConfig } from '../../lib/config/load.ts';
import { openDatabase, type Db } from '../../lib/store/database.ts';
import { SessionStore } from '../../lib/store/session-store.ts';
import { PortalUrlSigner } from '../../lib/security/portal-url-signature.ts';
import { ProxyKeyCheck, proxyKeyPath, readProxyKey } from '../../lib/security/proxy-key.ts';
import { systemClock } from '../../lib/clock.ts';
import { form, http } from '../harness/http.ts';
import { startExtraSquid, startLab, type ExtraSquid, type Lab } from '../harness/lab.ts';
import { portalLocation, signedPortal } from '../harness/portal-url.ts';

/**
 * The captive portal's decision end to end: Squid 5.7 asks the real ICAP service (icap-server/server.ts with
 * the portal adapter), which looks clients up in the lab's real session DB, written by the real login API.
 *
 * The client here is an explicit-proxy client, not an intercepted one: a request reaches ICAP the same way
 * from either kind of port once adaptation_access lets it, and interception itself (NAT, the intercept port)
 * is Squid's business, proven by the lab recipes. So this Squid sends every request of one client address to
 * ICAP (after an http_access rule that lets that unidentified client through, as the generated
 * `http_access allow doorman_intercepted` does for intercepted ones), also after the client has logged in:
 * then it is the service's own session lookup that lets it through.
 */
/** Never logs in. */
const CLIENT = '127.0.0.40';
/** Logs in during its test. */
const LOGS_IN = '127.0.0.41';
const settings: PortalDecisionSettings = {
  mode: 'authentication',
  walledGarden: { hosts: [], cidrs: [] },
};

let lab: Lab;
let squid: ExtraSquid;
let icap: IcapServer;
let db: Db;
const lookups: string[] = [];
const logged: string[] = [];

beforeAll(async () => {
  lab = await startLab();
  const config = parseConfig(JSON.parse(readFileSync(lab.configFile, 'utf8')), lab.configFile);
  // Read-only: the DB belongs to the lab's `doorman serve` (user proxy); this process only looks.
  db = openDatabase(dbPath(config), { readonly: true });
  const sessions = new SessionStore(db, systemClock);
  const key = readProxyKey(proxyKeyPath(config));
  icap = createIcapServer({
    ...portalService({
      settings: () => settings,
      settingsVersion: () => 1,
      baseUrl: lab.doormanUrl,
      directoryHosts: [],
      isIdentified: (ip) => {
        lookups.push(ip);
        return sessions.find({ kind: 'ip', value: ip }) !== undefined;
      },
      // Keyed as the lab's `doorman serve` keys its splash page: both from its proxy key.
      portalUrls: new PortalUrlSigner(key, systemClock),
      proxyKey: new ProxyKeyCheck(key),
    }),
    log: (line) => logged.push(line),
  });
  const { port } = await icap.listen(0, '127.0.0.1');
  squid = await startExtraSquid(lab, 'icap-portal', {
    before: [
      `acl portal_client src ${CLIENT} ${LOGS_IN}`,
      'http_access allow portal_client',
      'icap_enable on',
      'icap_send_client_ip on',
      `icap_service doorman_portal reqmod_precache bypass=0 icap://127.0.0.1:${port}/reqmod`,
      // As the generated include proves Squid to the service: without it, no URL is signed.
      'acl doorman_to_portal adaptation_service doorman_portal',
      `adaptation_meta X-Doorman-Key "${key}" doorman_to_portal`,
      'adaptation_access doorman_portal allow portal_client',
      'adaptation_access doorman_portal deny all',
    ],
  });
});

afterAll(async () => {
  await squid?.stop();
  await icap?.close();
  db?.close();
  await lab?.stop();
});

const viaSquid = (url: string, options: Parameters<typeof http>[1] = {}) =>
  http(url, { from: CLIENT, proxy: { host: '127.0.0.1', port: squid.port }, ...options });
const statusOf = async (url: string, from: string, accept: string) =>
  (await viaSquid(url, { from, headers: { accept } })).status;
const PAGE = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

describe('an unidentified client, then the same client after an API login', () => {
  it('a page load gets the 302 to the portal, with the original URL; the origin is never asked', async () => {
    const url = `${lab.originUrl}news/today?a=1&b=two words`.replace(' ', '%20');
    const page = await viaSquid(url, { headers: PAGE });
    expect(page.status).toBe(302);
    expect(portalLocation(String(page.headers.location))).toEqual(
      signedPortal(`${lab.doormanUrl}portal/`, url),
    );
    expect(page.headers['cache-control']).toBe('no-store');
    expect(lookups).toContain(CLIENT);
    // Squid writes access.log through its log daemon: the line comes a moment after the answer.
    await expect
      .poll(() => squid.log('access.log'))
      .toMatch(/ 127\.0\.0\.40 \S+\/302 .*\/news\/today.* HIER_NONE\//);
  });

  it('what is not a page load gets 511 with a link to the portal', async () => {
    const url = `${lab.originUrl}api/data.json`;
    const json = await viaSquid(url, { headers: { accept: 'application/json' } });
    expect(json.status).toBe(511);
    expect(json.headers['cache-control']).toBe('no-store');
    const link = /<a href="([^"]*)">/.exec(json.body)?.[1]?.replaceAll('&amp;', '&') ?? '';
    expect(portalLocation(link)).toEqual(signedPortal(`${lab.doormanUrl}portal/`, url));
    const post = await viaSquid(url, { method: 'POST', ...form({ a: '1' }) });
    expect(post.status).toBe(511);
  });

  it("Doorman's own site is let through (the login API answers, not the portal)", async () => {
    const login = await viaSquid(`${lab.doormanUrl}api/login/`, {
      method: 'POST',
      ...form({ api_key: 'dm.wrong.key', username: 'alice' }),
    });
    expect(login.status).not.toBe(302);
    expect(login.status).not.toBe(511);
    expect(login.headers['content-type']).toMatch(/^application\/json/);
  });

  it('after an API login the same requests reach the origin', async () => {
    const page = `${lab.originUrl}news/today?a=1`;
    const data = `${lab.originUrl}api/data.json`;
    expect(await statusOf(page, LOGS_IN, PAGE.accept)).toBe(302);
    expect(await statusOf(data, LOGS_IN, 'application/json')).toBe(511);
    const login = await http(`${lab.doormanUrl}api/login/`, {
      method: 'POST',
      from: LOGS_IN,
      ...form({ api_key: lab.apiKey, username: 'alice' }),
    });
    expect(login.status).toBe(200);
    const after = await viaSquid(page, { from: LOGS_IN, headers: PAGE });
    expect(after.status).toBe(200);
    expect(after.body).toBe('origin\n');
    expect(await statusOf(data, LOGS_IN, 'application/json')).toBe(200);
    // asked through ICAP each time (adaptation_access here allows this client's every request)
    expect(lookups.filter((ip) => ip === LOGS_IN)).toHaveLength(4);
    expect(logged).toEqual([]);
  });
});
