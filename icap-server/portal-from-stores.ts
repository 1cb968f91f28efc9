import { addressBinding } from '../lib/portal/address-binding.ts';
import type { PortalSettings } from '../lib/portal/settings.ts';
import type { PortalUrlSigner } from '../lib/security/portal-url-signature.ts';
import { PROXY_ICAP_HEADER, type ProxyKeyCheck } from '../lib/security/proxy-key.ts';
import { type Clock, systemClock } from '../lib/clock.ts';
import { findMac } from '../lib/net/find-mac.ts';
import { MacLookupCache } from '../lib/net/mac-lookup-cache.ts';
import type { MacLookup } from '../lib/net/mac-lookup.ts';
import type { Store } from '../lib/store/store.ts';
import { oncePerTurn } from './once-per-turn.ts';
import { carriesProxyKey, portalService, type PortalService } from './portal-service.ts';
import { SessionCache } from './session-cache.ts';

/** What the ICAP decision reads and writes of the store (the whole Store in serve's own thread). */
export type PortalStores = Pick<Store, 'sessions' | 'portal' | 'directory'>;

export interface PortalFromStoresOptions {
  /** Default the system clock: judges idle sessions. */
  clock?: Clock;
  /**
   * The MAC of the device at a (normalised) address, registration mode only. Default: lib/net/find-mac.ts
   * (the neighbour table, through `ip`), its answers shared for a few seconds (MacLookupCache).
   */
  findMac?: (ip: string) => Promise<MacLookup>;
  log?: (line: string) => void;
  /**
   * The signer of the original URLs (lib/security/portal-url-signature.ts), keyed like the splash page that
   * checks them; asked per request, and may throw while its key cannot be read yet (the decision is then a 500).
   */
  portalUrls: () => Pick<PortalUrlSigner, 'sign'>;
  /**
   * Checks the key Squid sends (X-Doorman-Key, adaptation_meta): only a request carrying it gets a signed URL,
   * and only its connection may idle long. Asked per request, like portalUrls (a throw: no proof, and a 500
   * where a URL was to be signed).
   */
  proxyKey: () => Pick<ProxyKeyCheck, 'matches'>;
}

/** A REQMOD without Squid's key is logged at most this often (with an old include, every redirect has none). */
const WITHOUT_KEY_LOG_MS = 60_000;

/**
 * The captive portal's decision (icap-server/portal-service.ts) over the session DB. Once per turn of the
 * event loop it reads the DB's change stamp, and only when that moved the two settings versions (portal and
 * directory), reloading only what moved: the portal settings, and the directory's hosts, which are part of
 * the ISTag and so rebuild the service. Anything that throws here (the DB not open, stored settings no longer
 * valid) is answered 500 by the server.
 *
 * Sessions are looked up through a cache dropped whenever the DB changes (icap-server/session-cache.ts), and
 * count only while they are not idle past their limit (lib/portal/portal-sessions.ts isLive). In registration mode an
 * unidentified client's MAC is looked up (only then: the other modes never start a process) and, when it
 * has a live registration, the client is let through and its address is bound to the registration first
 * (lib/portal/address-binding.ts): a session on the IP that carries the device's MAC and a fixed end, which
 * the session helper refuses when Squid shows another MAC on the address. Here a binding never counts as
 * identified (isLive is given no MAC), so a client whose binding ended, or who is another device, is looked up
 * in the neighbour table again before it is bound anew.
 */
export function portalFromStores(
  current: () => PortalStores,
  baseUrl: string,
  options: PortalFromStoresOptions,
): PortalService {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? (() => {});
  const cache = new MacLookupCache({ clock });
  const macOf = options.findMac ?? ((ip: string) => findMac(ip, { cache }));
  const sessions = new SessionCache(clock);
  let withoutKeyLoggedAt = Number.NEGATIVE_INFINITY;
  const withoutKey = () => {
    const now = clock.now();
    if (now - withoutKeyLoggedAt < WITHOUT_KEY_LOG_MS) return;
    withoutKeyLoggedAt = now;
    log(
      `a REQMOD came without Doorman's key (${PROXY_ICAP_HEADER}), so its redirect carries no url= to return to: ` +
        'if it came from Squid, run `doorman squid-conf` again and reload Squid (logged at most once a minute)',
    );
  };
  const proxyKey = { matches: (presented: string) => options.proxyKey().matches(presented) };
  let settings: { version: number; value: PortalSettings } | undefined;
  let service: { version: number; value: PortalService } | undefined;
  // What the DB holds is checked once per turn of the event loop, not per request: one statement, the DB's
  // change stamp, which moves whenever anything in the DB changes (a settings save, a sign-in, a "last seen"
  // from the session helper), in this process or another. Only then are the settings versions read again
  // (the answer's ISTag and the decision need them) and the session cache dropped. The requests answered in
  // one turn share one reading; a change is seen from the next turn on.
  let known: { stores: PortalStores; stamp: string; portal: number; directory: number } | undefined;
  const versions = oncePerTurn(() => {
    const stores = current();
    const stamp = stores.sessions.changeStamp();
    if (known?.stores !== stores || known.stamp !== stamp)
      known = { stores, stamp, portal: stores.portal.version(), directory: stores.directory.version() };
    return known;
  });
  const settingsNow = (): PortalSettings => {
    const version = versions().portal;
    if (settings?.version !== version) settings = { version, value: current().portal.load() };
    return settings.value;
  };
  const serviceNow = (): PortalService => {
    const version = versions().directory;
    if (service?.version !== version) {
      const directory = current().directory;
      const applied = version === 0 ? undefined : directory.load()?.settings;
      const directoryHosts =
        applied === undefined
          ? []
          : [applied.host, ...(applied.address === undefined ? [] : [applied.address])];
      service = {
        version,
        value: portalService({
          settings: settingsNow,
          settingsVersion: () => versions().portal,
          baseUrl,
          directoryHosts,
          portalUrls: { sign: (url, ip) => options.portalUrls().sign(url, ip) },
          proxyKey,
          withoutKey,
          isIdentified: (ip) => {
            const { stores, stamp } = versions();
            return sessions.identified(stores.sessions, stamp, ip);
          },
          isRegisteredDevice: async (ip) => {
            const found = await macOf(ip);
            if (!found.ok) return false;
            const stores = current();
            const registration = stores.sessions.find({ kind: 'mac', value: found.mac });
            if (registration?.source !== 'registration') return false;
            // Bound for IPv6 (Squid 5.7 never gives the helper an IPv6 client's MAC) and for IPv4 too: an IPv4
            // client reaches ICAP only when Squid had no MAC for it, and then the binding is what names it.
            // Answered once committed, so the session helper knows the binding by the client's next request.
            try {
              await stores.sessions.start(addressBinding(registration, ip, settingsNow()));
              sessions.forget(ip);
            } catch (error) {
              // The device is registered all the same; the next request tries the binding again.
              const why = error instanceof Error ? error.message : String(error);
              log(`cannot bind ${ip} to the registration of ${found.mac}: ${why}`);
            }
            return true;
          },
        }),
      };
    }
    return service.value;
  };
  return {
    decide: (request) => serviceNow().decide(request),
    istag: () => serviceNow().istag(),
    proves: (request) => carriesProxyKey(request, proxyKey),
  };
}
