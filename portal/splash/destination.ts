import {
  PORTAL_URL_SIGNATURE_FIELD,
  type PortalUrlRefusal,
  type PortalUrlSigner,
} from '../../lib/security/portal-url-signature.ts';
import { invalidParam } from '../errors.ts';
import { checkNextUrl } from './next-url.ts';

/**
 * Where the browser goes after the splash page: the page it was on its way to, but only when the ICAP service
 * sent it here with that URL, signed for this device a short while ago (lib/security/portal-url-signature.ts).
 * Anything else (no signature, a forged, expired or malformed one, another device's) is not followed: the
 * sign-in still works and ends on the portal's own "connected" page, so a crafted `portal/?url=` link cannot
 * make a real portal the hop of a phishing page.
 *
 * A `url` that could never be followed anywhere (not an absolute http(s) URL, see next-url.ts) or a field given
 * twice is a 400 naming the field, as before: no signature makes it good, and saying so is clearer.
 */
export interface Destination {
  /** The URL as signed (what the form carries on), and its signature. */
  signed: { url: string; sig: string };
  /** Where to redirect: the signed URL in its one serialised form. */
  href: string;
}

export type DestinationCheck =
  | { destination: Destination; refused?: undefined }
  | { destination: undefined; refused?: PortalUrlRefusal | undefined };

/** What the page's form carries when there is nowhere to go on to. */
export const NO_DESTINATION = { url: '', sig: '' } as const;

/** From GET portal/'s query string. */
export function destinationFromQuery(
  querystring: string,
  ip: string,
  urls: Pick<PortalUrlSigner, 'verify'>,
): DestinationCheck {
  const query = new URLSearchParams(querystring);
  return destinationOf(once(query, 'url'), once(query, PORTAL_URL_SIGNATURE_FIELD), ip, urls);
}

/** From POST portal/'s form fields (the form body middleware has refused fields given twice). */
export function destinationFromForm(
  params: ReadonlyMap<string, string>,
  ip: string,
  urls: Pick<PortalUrlSigner, 'verify'>,
): DestinationCheck {
  return destinationOf(params.get('url') ?? '', params.get(PORTAL_URL_SIGNATURE_FIELD) ?? '', ip, urls);
}

function destinationOf(
  url: string,
  sig: string,
  ip: string,
  urls: Pick<PortalUrlSigner, 'verify'>,
): DestinationCheck {
  if (url === '') return { destination: undefined };
  const checked = checkNextUrl(url);
  if (!checked.ok) throw invalidParam('url', checked.message);
  // The URL as it came is what was signed (the checked form may be spelt differently).
  const verdict = urls.verify(url, ip, sig);
  if (!verdict.ok) return { destination: undefined, refused: verdict.reason };
  return { destination: { signed: { url, sig }, href: checked.url } };
}

function once(query: URLSearchParams, name: string): string {
  const values = query.getAll(name);
  if (values.length > 1) throw invalidParam(name, 'given more than once; send it once');
  return values[0] ?? '';
}
