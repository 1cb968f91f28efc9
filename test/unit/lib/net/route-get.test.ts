import { describe, expect, it } from 'vitest';
import { MAX_ROUTE_OUTPUT, parseRouteGet } from '../../../../lib/net/route-get.ts';
import {
  ROUTE_BROADCAST,
  ROUTE_LOCAL,
  ROUTE_LOCAL_IPV6,
  ROUTE_MULTICAST,
  ROUTE_ON_LINK,
  ROUTE_ON_LINK_IPV6,
  ROUTE_VIA_GATEWAY,
} from './neighbour-fixtures.ts';

describe('parseRouteGet', () => {
  it('reads a direct route as on-link, IPv4 and IPv6', () => {
    expect(parseRouteGet(ROUTE_ON_LINK)).toEqual({ ok: true, route: { kind: 'on-link', dev: 'nbc-h' } });
    expect(parseRouteGet(ROUTE_ON_LINK_IPV6)).toEqual({ ok: true, route: { kind: 'on-link', dev: 'nbc-h' } });
  });

  it('reads a route through a gateway', () => {
    expect(parseRouteGet(ROUTE_VIA_GATEWAY)).toEqual({
      ok: true,
      route: { kind: 'via-gateway', gateway: '192.0.2.1', dev: 'eth0' },
    });
  });

  it('reads a gateway of the other family (via: {family, host}), normalised', () => {
    const output =
      '[{"dst":"203.0.113.5","via":{"family":"inet6","host":"FE80:0:0:0:0:0:0:1"},"dev":"eth0"}]';
    expect(parseRouteGet(output)).toEqual({
      ok: true,
      route: { kind: 'via-gateway', gateway: 'fe80::1', dev: 'eth0' },
    });
  });

  it('reads this host’s own addresses as local', () => {
    expect(parseRouteGet(ROUTE_LOCAL)).toEqual({ ok: true, route: { kind: 'local' } });
    expect(parseRouteGet(ROUTE_LOCAL_IPV6)).toEqual({ ok: true, route: { kind: 'local' } });
  });

  it('reads broadcast and multicast addresses as no route to a device', () => {
    expect(parseRouteGet(ROUTE_BROADCAST)).toEqual({
      ok: true,
      route: { kind: 'no-route', detail: 'a broadcast route' },
    });
    expect(parseRouteGet(ROUTE_MULTICAST)).toEqual({
      ok: true,
      route: { kind: 'no-route', detail: 'a multicast route' },
    });
  });

  it('keeps a gateway that is no address short, as it is', () => {
    const output = `[{"dst":"203.0.113.5","gateway":"${'x'.repeat(100)}"}]`;
    expect(parseRouteGet(output)).toEqual({
      ok: true,
      route: { kind: 'via-gateway', gateway: 'x'.repeat(64), dev: undefined },
    });
  });

  it.each([
    ['empty output', '', 'not JSON'],
    ['the text form', '203.0.113.5 via 192.0.2.1 dev eth0 src 192.0.2.2 uid 0\n', 'not JSON'],
    ['an empty array', '[]', 'not a JSON array starting with a route object'],
    ['an object', '{"dst":"10.0.0.5"}', 'not a JSON array starting with a route object'],
    ['an array of strings', '["10.0.0.5"]', 'not a JSON array starting with a route object'],
  ])('refuses %s', (_what, output, reason) => {
    const answer = parseRouteGet(output);
    expect(answer.ok ? '' : answer.reason).toContain(reason);
  });

  it('refuses output over the cap', () => {
    expect(parseRouteGet(`[${' '.repeat(MAX_ROUTE_OUTPUT)}]`)).toEqual({
      ok: false,
      reason: `route listing is ${MAX_ROUTE_OUTPUT + 2} characters, over the ${MAX_ROUTE_OUTPUT} cap`,
    });
  });
});
