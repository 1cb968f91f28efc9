import { InvalidInputError, showValue } from '../errors.ts';
import type { TicketTarget } from './ap-req.ts';

/**
 * Which Kerberos service principals are the proxy's web service: `HTTP/<host>@<realm>` for the names Enable
 * registered (`net ads keytab add_update_ads HTTP`: the FQDN and the computer account's short name) in the
 * joined realm. Pure.
 *
 * Compared without regard to ASCII case, as Active Directory matches SPNs and realms (the realm Doorman joins):
 * a ticket AD issued for `http/PROXY` is one for `HTTP/proxy`, under the same key. Only A-Z fold: Unicode
 * case mapping would make `K` (U+212A) equal `k`.
 */
export interface ProxyService {
  /** The joined realm: `EXAMPLE.TEST`. */
  realm: string;
  /** The proxy's host names: `proxy.example.test`, `PROXY`. */
  hosts: readonly string[];
}

export const HTTP_SERVICE = 'HTTP';

export function proxyService(realm: string, hosts: readonly string[]): ProxyService {
  if (realm === '') throw new InvalidInputError('realm', 'is empty: the joined realm is needed');
  if (hosts.length === 0 || hosts.some((host) => host === '')) {
    throw new InvalidInputError('hosts', `${showValue(hosts.join(', '))} must be one or more host names`);
  }
  return { realm, hosts: [...hosts] };
}

/** The ticket's sname and realm are `HTTP/<one of the proxy's hosts>@<the joined realm>`. */
export function isProxyTicket(target: TicketTarget, service: ProxyService): boolean {
  const [kind, host, ...more] = target.components;
  return (
    kind !== undefined &&
    host !== undefined &&
    more.length === 0 &&
    asciiLower(kind) === asciiLower(HTTP_SERVICE) &&
    asciiLower(target.realm) === asciiLower(service.realm) &&
    service.hosts.some((name) => asciiLower(name) === asciiLower(host))
  );
}

/** GSSAPI's name of the key it used (`HTTP/proxy.example.test@EXAMPLE.TEST`) is one of the proxy's. */
export function isProxyPrincipalName(name: string, service: ProxyService): boolean {
  const lower = asciiLower(name);
  return service.hosts.some((host) => lower === asciiLower(`${HTTP_SERVICE}/${host}@${service.realm}`));
}

/** `HTTP/proxy.example.test, HTTP/PROXY in EXAMPLE.TEST`: for messages. */
export function describeProxyService(service: ProxyService): string {
  return `${service.hosts.map((host) => `${HTTP_SERVICE}/${host}`).join(', ')} in ${service.realm}`;
}

/** `host/proxy.example.test@EXAMPLE.TEST` (name-type 3), quoted and bounded for a message. */
export function describeTicketTarget(target: TicketTarget): string {
  return `${showValue(`${target.components.join('/')}@${target.realm}`, 160)} (name-type ${target.nameType})`;
}

function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0x20));
}
