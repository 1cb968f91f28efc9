import { normaliseIp } from './address.ts';

/**
 * How this host reaches an address, from `ip -json route get <ip>` (iproute2 ip/iproute.c, print_route), a
 * JSON array with the one route the kernel chose:
 *
 *   [{"dst":"10.250.7.2","dev":"lan0","prefsrc":"10.250.7.1","flags":[],"uid":0,"cache":[]}]         on-link
 *   [{"dst":"8.8.8.8","gateway":"192.0.2.1","dev":"eth0","prefsrc":"192.0.2.2","flags":[],…}]          routed
 *   [{"type":"local","dst":"127.0.0.1","dev":"lo","prefsrc":"127.0.0.1","flags":[],…}]                  this host
 *
 * `type` is left out for unicast routes; the gateway is `gateway`, or `via: {family, host}` when it is of the
 * other family (RFC 5549). Used to say why the neighbour table has no entry for a client: only devices on a link
 * of this host's (its subnet, its VLAN) are in it.
 *
 * - `on-link`: a direct route: the device would be in the neighbour table once it has talked to this host.
 * - `via-gateway`: behind a router; packets from it carry the router's MAC, never its own.
 * - `local`: an address of this host itself.
 * - `no-route`: an unreachable, blackhole or prohibit route, or a broadcast, multicast or anycast address:
 *   no device owns it.
 */
export type Route =
  | { kind: 'on-link'; dev: string | undefined }
  | { kind: 'via-gateway'; gateway: string; dev: string | undefined }
  | { kind: 'local' }
  | { kind: 'no-route'; detail: string };

export type RouteAnswer = { ok: true; route: Route } | { ok: false; reason: string };

/** One route is a few hundred characters. */
export const MAX_ROUTE_OUTPUT = 64 * 1024;

export function parseRouteGet(output: string, maxLength = MAX_ROUTE_OUTPUT): RouteAnswer {
  if (output.length > maxLength) {
    return { ok: false, reason: `route listing is ${output.length} characters, over the ${maxLength} cap` };
  }
  let json: unknown;
  try {
    json = JSON.parse(output);
  } catch {
    return { ok: false, reason: 'route listing is not JSON (is this "ip -json route get" output?)' };
  }
  const first: unknown = Array.isArray(json) ? json[0] : undefined;
  if (typeof first !== 'object' || first === null || Array.isArray(first)) {
    return { ok: false, reason: 'route listing is not a JSON array starting with a route object' };
  }
  const route = first as Record<string, unknown>;
  const dev = typeof route.dev === 'string' ? route.dev : undefined;
  const type = typeof route.type === 'string' ? route.type : 'unicast';
  if (type === 'local') return { ok: true, route: { kind: 'local' } };
  if (type !== 'unicast') return { ok: true, route: { kind: 'no-route', detail: `a ${type} route` } };
  const gateway = gatewayOf(route);
  if (gateway !== undefined) return { ok: true, route: { kind: 'via-gateway', gateway, dev } };
  return { ok: true, route: { kind: 'on-link', dev } };
}

function gatewayOf(route: Record<string, unknown>): string | undefined {
  let raw: unknown = route.gateway;
  const via = route.via;
  if (raw === undefined && typeof via === 'object' && via !== null && !Array.isArray(via)) {
    raw = (via as Record<string, unknown>).host;
  }
  if (typeof raw !== 'string') return undefined;
  // Shown in messages only: a spelling ip would never print is kept short rather than trusted.
  return normaliseIp(raw) ?? raw.slice(0, 64);
}
