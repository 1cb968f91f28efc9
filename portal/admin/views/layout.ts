import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';

/** What every page shows around its content: the screens and the sign-out button when someone is signed in. */
export interface Chrome {
  paths: AdminPaths;
  signedIn?: { user: string; csrf: string };
  /** The screen this page belongs to: marked in the navigation (aria-current). */
  here?: Screen;
}

export type Screen =
  'home' | 'sessions' | 'directory' | 'portal' | 'seamless' | 'explain' | 'api-keys' | 'admins' | 'audit';

/** The admin screens, in the order the navigation lists them. */
const SCREENS: readonly { screen: Screen; label: string; path: (paths: AdminPaths) => string }[] = [
  { screen: 'home', label: 'Home', path: (p) => p.root },
  { screen: 'sessions', label: 'Sessions', path: (p) => p.sessions },
  { screen: 'directory', label: 'Directory service', path: (p) => p.directory },
  { screen: 'portal', label: 'Captive portal', path: (p) => p.portal },
  { screen: 'seamless', label: 'Seamless authentication', path: (p) => p.seamless },
  { screen: 'explain', label: 'Explain a client', path: (p) => p.explain },
  { screen: 'api-keys', label: 'API keys', path: (p) => p.apiKeys },
  { screen: 'admins', label: 'Admins', path: (p) => p.admins },
  { screen: 'audit', label: 'Audit', path: (p) => p.audit },
];

/** A whole admin page. No script anywhere: the CSP forbids it, and nothing needs it. */
export function layout(title: string, chrome: Chrome, content: Html): string {
  const { paths, signedIn, here } = chrome;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title} · Doorman</title>
        <link rel="stylesheet" href="${paths.style}" />
      </head>
      <body>
        <header>
          <p class="brand"><a href="${paths.root}">Doorman administration</a></p>
          ${
            signedIn &&
            html`<nav aria-label="Screens">
              <ul>
                ${SCREENS.map(
                  (s) =>
                    html`<li>
                      <a href="${s.path(paths)}" ${s.screen === here ? html`aria-current="page"` : ''}
                        >${s.label}</a
                      >
                    </li>`,
                )}
              </ul>
            </nav>`
          }
          ${
            signedIn &&
            html`<form class="sign-out" method="post" action="${paths.signOut}">
              <span>Signed in as <strong>${signedIn.user}</strong></span>
              <input type="hidden" name="csrf" value="${signedIn.csrf}" />
              <button type="submit">Sign out</button>
            </form>`
          }
        </header>
        <main>${content}</main>
      </body>
    </html> `.toString();
}
