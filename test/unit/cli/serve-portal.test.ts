import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { portalFromStores } from '../../../icap-server/portal-from-stores.ts';
import { IcapParser, type ReqmodRequest } from '../../../icap-server/parser.ts';
import type { Decision } from '../../../icap-server/server.ts';
import { ManualClock } from '../../../lib/clock.ts';
import type { MacLookup } from '../../../lib/net/mac-lookup.ts';
import { DEFAULT_PORTAL_SETTINGS, type PortalMode } from '../../../lib/portal/settings.ts';
import { SessionStore } from '../../../lib/store/session-store.ts';
import { openSqliteStore } from '../../../lib/store/sqlite-store.ts';
import type { Store } from '../../../lib/store/store.ts';
import { PortalUrlSigner } from '../../../lib/security/portal-url-signature.ts';
import { ProxyKeyCheck } from '../../../lib/security/proxy-key.ts';
import { useTempDb } from '../../support/temp-db.ts';
import { reqmod } from '../icap-server/fixtures.ts';

/**
 * portalFromStores: the ICAP decision over a real session DB (a temporary SQLite file), with the MAC lookup
 * replaced by a table (the neighbour table itself is tested in test/integration/neighbour.test.ts).
 */
const tmp = useTempDb('doorman-serve-portal-');
const BASE = 'http://127.0.0.1:8180/';
const MAC = '52:54:00:aa:bb:cc';
const REGISTERED_AT = Date.UTC(2026, 2, 10, 12);
const CLEAR_AT = Date.UTC(2026, 5, 1);
const KEY = 'the-serve-portal-test-proxy-key-43-character';

let clock: ManualClock;
let stores: Store;
let macs: Map<string, MacLookup>;
let macAsked: string[];
let logged: string[];

beforeEach(() => {
  clock = new ManualClock(REGISTERED_AT);
  stores = openSqliteStore(tmp.connect(), {
    passwordFile: join(tmp.dir, 'pw'),
    clock,
    // A directory is taken as applied: the sign-in modes need one (the ICAP decisions here do not ask it).
    directoryApplied: () => true,
  });
  macs = new Map();
  macAsked = [];
  logged = [];
});

function service() {
  const signer = new PortalUrlSigner('the serve-portal test’s secret', clock);
  return portalFromStores(() => stores, BASE, {
    clock,
    findMac: (ip) => {
      macAsked.push(ip);
      const found = macs.get(ip);
      if (found === undefined) return Promise.reject(new Error(`no answer for ${ip} in this test`));
      return Promise.resolve(found);
    },
    log: (line) => logged.push(line),
    portalUrls: () => signer,
    proxyKey: () => new ProxyKeyCheck(KEY),
  });
}

const onLink = (ip: string, mac = MAC): MacLookup => ({
  ok: true,
  ip,
  mac,
  locallyAdministered: false,
  source: 'neighbour-table',
});

async function setMode(mode: PortalMode, idleTimeoutMinutes: number | null = 30): Promise<void> {
  const saved = await stores.portal.save({
    ...DEFAULT_PORTAL_SETTINGS,
    mode,
    idleTimeoutMinutes,
    policyText: 'Be nice.',
  });
  if (!saved.ok) throw new Error(JSON.stringify(saved.problems));
}

/** A REQMOD as Squid sends it, with the proxy key as X-Doorman-Key unless `key` says otherwise. */
function request(clientIp: string, url = 'http://example.com/page', key: string | null = KEY): ReqmodRequest {
  const parser = new IcapParser();
  const host = new URL(url).host;
  parser.push(
    Buffer.from(
      reqmod({
        url,
        icapHeaders: [
          'Allow: 204',
          `X-Client-IP: ${clientIp}`,
          ...(key === null ? [] : [`X-Doorman-Key: ${key}`]),
        ],
        httpHeaders: [`Host: ${host}`, 'Accept: text/html'],
      }),
      'latin1',
    ),
  );
  const event = parser.next();
  if (event.kind !== 'request' || event.request.method !== 'REQMOD') throw new Error('not a REQMOD');
  return event.request;
}

const status = async (decision: Decision | Promise<Decision>) => {
  const d = await decision;
  return d.kind === 'respond' ? d.status : 204;
};

function register(mac = MAC) {
  return stores.sessions.start({
    key: { kind: 'mac', value: mac },
    username: 'alice',
    source: 'registration',
    expiresAt: CLEAR_AT,
  });
}

describe('portalFromStores: registration mode', () => {
  it('an IPv6 client whose MAC is registered is let through and its address bound to the registration', async () => {
    await setMode('registration', 15);
    await register();
    macs.set('2001:db8::10', onLink('2001:db8::10'));
    const portal = service();
    expect(await status(portal.decide(request('2001:DB8::10')))).toBe(204);
    // Bound to the device's MAC until one idle timeout from now (the neighbour table's answer), not the
    // clear date.
    expect(stores.sessions.find({ kind: 'ip', value: '2001:db8::10' })).toMatchObject({
      username: 'alice',
      source: 'registration',
      mac: MAC,
      expiresAt: clock.now() + 15 * 60_000,
      idleTimeoutMs: 15 * 60_000,
    });
    // The session helper names it from now on; ICAP, asked only when the helper refused the binding and
    // knowing no MAC, looks at the neighbour table again rather than trust the address.
    expect(await status(portal.decide(request('2001:db8::10')))).toBe(204);
    expect(macAsked).toEqual(['2001:db8::10', '2001:db8::10']);
  });

  it('an IPv4 client whose MAC is registered (Squid had none for it) is let through and bound, so it is named', async () => {
    await setMode('registration');
    await register();
    macs.set('10.91.0.7', onLink('10.91.0.7'));
    const portal = service();
    expect(await status(portal.decide(request('10.91.0.7')))).toBe(204);
    expect(stores.sessions.find({ kind: 'ip', value: '10.91.0.7' })).toMatchObject({
      username: 'alice',
      source: 'registration',
      mac: MAC,
      expiresAt: clock.now() + 30 * 60_000,
    });
    expect(await status(portal.decide(request('10.91.0.7')))).toBe(204);
    expect(macAsked).toEqual(['10.91.0.7', '10.91.0.7']);
  });

  it('an unregistered MAC, a MAC that is not found, a failed lookup: the splash page (302), nothing bound', async () => {
    await setMode('registration');
    await register('52:54:00:00:00:01');
    macs.set('2001:db8::10', onLink('2001:db8::10'));
    macs.set('2001:db8::11', { ok: false, reason: 'not-on-link', message: 'behind a router' });
    const portal = service();
    expect(await status(portal.decide(request('2001:db8::10')))).toBe(302);
    expect(await status(portal.decide(request('2001:db8::11')))).toBe(302);
    // No answer in the table: findMac rejects (it never does, but a rejection must not escape decide).
    expect(await status(portal.decide(request('2001:db8::12')))).toBe(302);
    expect(stores.sessions.list().filter((s) => s.key.kind === 'ip')).toEqual([]);
  });

  it('an expired registration, or a MAC session from elsewhere, does not count', async () => {
    await setMode('registration');
    await register();
    macs.set('2001:db8::10', onLink('2001:db8::10'));
    clock.set(CLEAR_AT);
    expect(await status(service().decide(request('2001:db8::10')))).toBe(302);
    await stores.sessions.start({ key: { kind: 'mac', value: MAC }, username: 'bob', source: 'api' });
    expect(await status(service().decide(request('2001:db8::10')))).toBe(302);
  });

  it('never looks a MAC up in the other modes', async () => {
    await register();
    macs.set('2001:db8::10', onLink('2001:db8::10'));
    for (const mode of ['authentication', 'agreement'] as const) {
      await setMode(mode);
      expect(await status(service().decide(request('2001:db8::10')))).toBe(302);
    }
    expect(macAsked).toEqual([]);
  });
});

describe('portalFromStores: sessions idle past their limit', () => {
  it('an IP session counts until it has been idle longer than its limit (judged from last_seen)', async () => {
    await setMode('authentication');
    const session = await stores.sessions.start({
      key: { kind: 'ip', value: '10.91.0.8' },
      username: 'carol',
      source: 'portal',
      idleTimeoutMs: 60_000,
    });
    const portal = service();
    clock.advance(60_000);
    expect(await status(portal.decide(request('10.91.0.8')))).toBe(204);
    clock.advance(1);
    expect(await status(portal.decide(request('10.91.0.8')))).toBe(302);
    // Traffic the helper saw (and wrote) keeps it live, from the next turn of the event loop on.
    await stores.sessions.touch(new Map([[session.id, clock.now()]]));
    await nextTurn();
    expect(await status(portal.decide(request('10.91.0.8')))).toBe(204);
    expect(logged).toEqual([]);
  });
});

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('portalFromStores: Squid’s key', () => {
  const location = async (decision: Decision | Promise<Decision>) => {
    const d = await decision;
    return d.kind === 'respond' ? new URL(d.headers?.Location ?? '') : undefined;
  };

  it('signs the URL only with the key; without it, redirects bare and logs so at most once a minute', async () => {
    await setMode('authentication');
    const portal = service();
    const url = 'http://example.com/page';
    expect((await location(portal.decide(request('10.91.0.20', url))))?.searchParams.get('sig')).toMatch(
      /^\d+\./,
    );
    expect(portal.proves(request('10.91.0.20', url))).toBe(true);
    expect(logged).toEqual([]);
    for (const key of [null, 'someone-elses-key']) {
      expect((await location(portal.decide(request('10.91.0.20', url, key))))?.href).toBe(`${BASE}portal/`);
      expect(portal.proves(request('10.91.0.20', url, key))).toBe(false);
    }
    expect(logged).toEqual([
      "a REQMOD came without Doorman's key (X-Doorman-Key), so its redirect carries no url= to return to: " +
        'if it came from Squid, run `doorman squid-conf` again and reload Squid (logged at most once a minute)',
    ]);
    clock.advance(59_999);
    await portal.decide(request('10.91.0.20', url, null));
    expect(logged).toHaveLength(1);
    clock.advance(1);
    await portal.decide(request('10.91.0.20', url, null));
    expect(logged).toHaveLength(2);
  });
});

describe('portalFromStores: the session cache', () => {
  it('sees a sign-in on the same DB handle (the login API, the splash page) from the next turn on', async () => {
    await setMode('authentication');
    const portal = service();
    expect(await status(portal.decide(request('10.91.0.9')))).toBe(302);
    await stores.sessions.start({
      key: { kind: 'ip', value: '10.91.0.9' },
      username: 'dave',
      source: 'portal',
    });
    await nextTurn();
    expect(await status(portal.decide(request('10.91.0.9')))).toBe(204);
    // and a logout (Clear current sessions)
    await stores.sessions.endBySource(['portal']);
    await nextTurn();
    expect(await status(portal.decide(request('10.91.0.9')))).toBe(302);
  });

  it('sees a sign-in through another connection (another process) from the next turn on', async () => {
    await setMode('authentication');
    const portal = service();
    expect(await status(portal.decide(request('10.91.0.10')))).toBe(302);
    new SessionStore(tmp.connect(), clock).start({
      key: { kind: 'ip', value: '10.91.0.10' },
      username: 'erin',
      source: 'api',
    });
    await nextTurn();
    expect(await status(portal.decide(request('10.91.0.10')))).toBe(204);
  });

  it('judges the hard expiry of a remembered session against the clock on every request', async () => {
    await setMode('authentication');
    await stores.sessions.start({
      key: { kind: 'ip', value: '10.91.0.11' },
      username: 'fay',
      source: 'portal',
      expiresAt: REGISTERED_AT + 1000,
    });
    const portal = service();
    expect(await status(portal.decide(request('10.91.0.11')))).toBe(204);
    clock.advance(1000);
    expect(await status(portal.decide(request('10.91.0.11')))).toBe(302);
  });

  it('answers 500 (the decision throws) once the DB is closed', async () => {
    await setMode('authentication');
    const portal = service();
    expect(await status(portal.decide(request('10.91.0.12')))).toBe(302);
    await stores.close();
    await nextTurn();
    expect(() => portal.decide(request('10.91.0.12'))).toThrow(/database connection is not open/);
  });
});
