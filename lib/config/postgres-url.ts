/**
 * Where a PostgreSQL URL can hold a password, for the config check (store.url, `store copy --to`: none
 * allowed) and for showing a URL in logs, `doorman store status` and errors (masked, should one get in).
 *
 *   postgres://[user[:password]@]host[:port][,host2[:port2]...][/database][?name=value[&...]]
 *
 * Two places: the user information before the host list, and a `password` parameter of the query (the client
 * library sends every parameter it does not know to the server as it is, in clear, and shows it in errors).
 *
 * The user information cannot be found by where the host list starts: a password pasted unencoded may hold
 * `/`, `?`, `#` or `@` itself (a base64 one often has `/`), and the client library (WHATWG URL) takes the last
 * `@` of what it reads as the authority. So a `:` anywhere before the last `@` counts as a password. That also
 * refuses an `@` written unencoded after a port (`db1:5432/d?application_name=a@b`): `%40` is the way to
 * write one there, and the config check says so.
 */

const afterScheme = (url: string): number => {
  const at = url.indexOf('://');
  return at === -1 ? 0 : at + 3;
};

/** Where the password of the user information starts and ends (the `:` and the last `@`), if there is one. */
function userinfoPassword(url: string): { colon: number; at: number } | undefined {
  const start = afterScheme(url);
  const at = url.lastIndexOf('@');
  if (at < start) return undefined;
  const colon = url.indexOf(':', start);
  return colon !== -1 && colon < at ? { colon, at } : undefined;
}

/** Whether `url` holds a password before its host list (`user:password@`). */
export function hasUserinfoPassword(url: string): boolean {
  return userinfoPassword(url) !== undefined;
}

// A query parameter anywhere: its name (up to `=`, `&` or `#`), and its value.
const PARAMETER = /([?&])([^=&#]*)(=[^&#]*)?/g;

/**
 * Whether a parameter's name, as the client library decodes it (percent-escapes, `+`), is `password`, or
 * libpq's `sslpassword` (the client key's), which the library would send to the server just the same.
 */
function isPasswordName(name: string): boolean {
  const spaced = name.replace(/\+/g, ' ');
  let decoded = spaced;
  try {
    decoded = decodeURIComponent(spaced);
  } catch {
    // A malformed escape: the client library refuses the URL; the name is judged as written.
  }
  return ['password', 'sslpassword'].includes(decoded.toLowerCase());
}

/** Whether `url` has a `password` (or `sslpassword`) query parameter, in any case, escaped or not. */
export function hasPasswordParameter(url: string): boolean {
  return [...url.matchAll(PARAMETER)].some(([, , name]) => isPasswordName(name ?? ''));
}

/** `url` with the password of its user information and the value of any password parameter as `***`. */
export function maskUrlPasswords(url: string): string {
  const userinfo = userinfoPassword(url);
  const masked =
    userinfo === undefined ? url : `${url.slice(0, userinfo.colon)}:***${url.slice(userinfo.at)}`;
  return masked.replace(PARAMETER, (whole, separator: string, name: string, value: string | undefined) =>
    value !== undefined && isPasswordName(name) ? `${separator}${name}=***` : whole,
  );
}
