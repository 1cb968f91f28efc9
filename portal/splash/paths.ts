/** Where the splash pages are, as absolute paths under baseUrl's path (for forms, links and redirects). */
export interface SplashPaths {
  /** `{base}portal/`: the page for the current mode, the form's action, and the CSRF cookie's Path. */
  root: string;
  done: string;
  /** The RFC 8908 Captive Portal API. */
  api: string;
  style: string;
}

export function splashPaths(basePath: string): SplashPaths {
  const root = `${basePath.endsWith('/') ? basePath : `${basePath}/`}portal/`;
  return { root, done: `${root}done`, api: `${root}api`, style: `${root}style.css` };
}
