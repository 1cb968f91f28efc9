import { readFileSync } from 'node:fs';
import { systemClock } from '../../lib/clock.ts';
import { parseConfig } from '../../lib/config/load.ts';
import { PortalUrlSigner } from '../../lib/security/portal-url-signature.ts';
import { proxyKeyPath, readProxyKey } from '../../lib/security/proxy-key.ts';
import { browser, type Response } from './http.ts';
import type { Lab } from './lab.ts';

export interface SplashForm {
  /** The splash page as the client first got it. */
  page: Response;
  /** Through Squid, with the page's cookie jar. */
  browse: (path: string, fields?: Record<string, string>) => Promise<Response>;
  /** Post the sign-in form with the page's CSRF token and signed original URL. */
  signIn: (username: string, password: string) => Promise<Response>;
}

/**
 * A browser configured to use the lab's Squid, on the splash page for `original` (from 127.0.0.1, the
 * address Squid names), with the URL signed as the ICAP service signs it: what a client redirected there has.
 */
export async function openSplashForm(lab: Lab, original: string): Promise<SplashForm> {
  const browse = browser(() => lab.doormanUrl, { proxy: { host: '127.0.0.1', port: lab.squidPort } });
  const config = parseConfig(JSON.parse(readFileSync(lab.configFile, 'utf8')), lab.configFile);
  const sig = new PortalUrlSigner(readProxyKey(proxyKeyPath(config)), systemClock).sign(
    original,
    '127.0.0.1',
  );
  const page = await browse(`portal/?url=${encodeURIComponent(original)}&sig=${sig}`);
  const hidden = (name: string) =>
    new RegExp(`<input type="hidden" name="${name}" value="([^"]*)"`).exec(page.body)?.[1] ?? '';
  const signIn = (username: string, password: string) =>
    browse('portal/', { csrf: hidden('csrf'), url: hidden('url'), sig: hidden('sig'), username, password });
  return { page, browse, signIn };
}

/** The splash page's message code (`data-code`), if it shows one. */
export const splashCode = (page: Response): string | undefined =>
  /<p\s+id="portal-message"\s+data-code="([a-z_]+)"/.exec(page.body)?.[1];
