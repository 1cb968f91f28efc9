import type { ParameterizedContext } from 'koa';
import type { MacLookup } from '../../lib/net/mac-lookup.ts';
import type { Session } from '../../lib/store/session.ts';
import { html } from '../admin/html.ts';
import type { PortalState } from '../state.ts';
import type { SplashPaths } from './paths.ts';
import type { Message, SplashCode } from './views/layout.ts';
import { connectedPage, noticePage, type DeviceView } from './views/pages.ts';

/**
 * The splash pages' answers that are not the form: the notices (portal off, no Device Group, device not
 * found), "connected", and the error page the shared error handler shows (ctx.state.errorPage).
 */
type Ctx = ParameterizedContext<PortalState>;
type Notice = Parameters<typeof noticePage>[0];

/** ApiError codes (from the shared middleware) as the splash page's codes. */
const CODE_OF: Readonly<Record<string, SplashCode>> = {
  forbidden: 'csrf',
  too_many_requests: 'rate_limited',
  unproven_client: 'unproven_client',
  service_unavailable: 'unavailable',
};

const ERROR_TITLES: Readonly<Record<number, string>> = {
  403: 'This form cannot be used',
  429: 'Too many attempts',
  500: 'Something went wrong',
  503: 'Try again in a moment',
};

export function render(ctx: Ctx, status: number, page: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page;
}

export const deviceOf = (mac: MacLookup | undefined): DeviceView | undefined =>
  mac?.ok === true ? { mac: mac.mac, randomised: mac.locallyAdministered } : undefined;

export function splashResponses(paths: SplashPaths, log: (line: string) => void) {
  const notice = (ctx: Ctx, status: number, title: string, message: Message, more: Partial<Notice> = {}) =>
    render(ctx, status, noticePage({ paths, title, message, ...more }));

  return {
    errorPage(status: number, message: string | undefined, code?: string): string {
      const splashCode: SplashCode =
        code === undefined
          ? 'server_error'
          : (CODE_OF[code] ?? (status < 500 ? 'bad_request' : 'unavailable'));
      const title =
        ERROR_TITLES[status] ?? (status < 500 ? 'This request cannot be used' : 'Something went wrong');
      const text =
        splashCode === 'csrf'
          ? 'This form has expired or did not come from this page. Open the sign-in page again and retry.'
          : (message ?? 'The server could not complete this request. The details are in its log.');
      return noticePage({
        paths,
        title,
        message: { code: splashCode, tone: 'error', text },
        link: { href: paths.root, text: 'Back to the sign-in page' },
      });
    },

    /** `next`: the page the user was going to, only when the ICAP service signed it (destination.ts). */
    connected(ctx: Ctx, session: Session, next: string | undefined): void {
      const device =
        session.key.kind === 'mac'
          ? { mac: session.key.value, randomised: (parseInt(session.key.value.slice(0, 2), 16) & 2) !== 0 }
          : undefined;
      render(
        ctx,
        200,
        connectedPage({
          paths,
          username: session.username,
          device,
          expiresAt: session.expiresAt,
          idleTimeoutMs: session.idleTimeoutMs,
          next,
        }),
      );
    },

    portalOff(ctx: Ctx, status: number): void {
      notice(ctx, status, 'No sign-in needed', {
        code: 'portal_off',
        tone: 'info',
        text: 'The captive portal of this network is switched off: there is nothing to sign in to here.',
      });
    },

    noDeviceGroup(ctx: Ctx, ip: string): void {
      notice(ctx, 403, 'This device cannot get access here', {
        code: 'no_device_group',
        tone: 'error',
        text: html`Web access on this network is only for devices in an active device group, and this device's
          address (<span class="device">${ip}</span>) is in none. Accepting the policy again would not change
          that: ask the network's administrator.`,
      });
    },

    macNotFound(ctx: Ctx, lookup: Extract<MacLookup, { ok: false }>): void {
      const ours = lookup.reason === 'lookup-failed' || lookup.reason === 'invalid-address';
      // The details (interface names, routes) are for the administrator's log, not for the visitor's page.
      log(`portal: device registration: ${lookup.message}`);
      const why: Record<string, string> = {
        'not-on-link':
          'This device is not on the same network (subnet or VLAN) as the proxy: it reaches it through a router, ' +
          'which hides its hardware (MAC) address, and devices are registered by that address. Connect to the ' +
          'network this sign-in page belongs to (for example its Wi-Fi), or ask the network’s administrator.',
        local: 'This is the proxy itself, not a device on its network: there is no device to register.',
        'lookup-failed':
          'The server could not look up this device’s hardware (MAC) address just now. Try again in a moment; ' +
          'if it keeps happening, tell the network’s administrator.',
      };
      notice(
        ctx,
        ours ? 503 : 403,
        'This device cannot be found',
        {
          code: 'mac_not_found',
          tone: 'error',
          text:
            why[lookup.reason] ??
            'The proxy cannot see this device’s hardware (MAC) address right now, and devices are registered by ' +
              'that address. Make sure the device is connected to this network directly (not through a router, ' +
              'another subnet or VLAN), reload this page, or ask the network’s administrator.',
        },
        { link: { href: paths.root, text: 'Try again' } },
      );
    },
  };
}

export type SplashResponses = ReturnType<typeof splashResponses>;
