/**
 * The splash page's address as the ICAP service sends it (`{base}portal/?url=<original>&sig=<signature>`),
 * taken apart for assertions: the signature holds the time it was made, so tests compare its parts.
 */
export interface PortalLocation {
  /** The address without its query. */
  portal: string;
  url: string | null;
  sig: string | null;
}

export function portalLocation(location: string): PortalLocation {
  const parsed = new URL(location);
  return {
    portal: `${parsed.origin}${parsed.pathname}`,
    url: parsed.searchParams.get('url'),
    sig: parsed.searchParams.get('sig'),
  };
}

/** What a portalLocation() of a signed address for `url` looks like (any well-formed signature). */
export const signedPortal = (portal: string, url: string) => ({
  portal,
  url,
  sig: expectSignature,
});

const expectSignature = {
  asymmetricMatch: (actual: unknown) =>
    typeof actual === 'string' && /^\d{1,12}\.[A-Za-z0-9_-]{43}$/.test(actual),
  toString: () => 'a portal URL signature',
};
