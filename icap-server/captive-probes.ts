/**
 * The operating systems' captive-portal probes (issue 7, "beyond the anchors"). Each OS fetches a known URL
 * when it joins a network and compares the answer with what it expects (Apple's "Success" page, Android's
 * empty 204, Windows' "Microsoft Connect Test", Firefox's "success"). Any other answer, a 302 above all, makes
 * it open its "sign in to network" sheet on the Location. So an unidentified client's probe always gets the
 * 302 to the splash page, whatever its Accept header says (Android's asks for nothing in particular, and a
 * 511 would not open the sheet everywhere). Identified clients never reach ICAP (Squid's adaptation_access
 * sends only unidentified traffic), so their probes reach the real servers and the OS reports "online".
 *
 *   Apple (iOS, macOS)        captive.apple.com, www.apple.com, www.appleiphonecell.com, …
 *                               /hotspot-detect.html, /library/test/success.html
 *   Android, ChromeOS, Chrome connectivitycheck.gstatic.com, clients3.google.com, www.google.com,
 *                             connectivitycheck.android.com      /generate_204, /gen_204
 *   Windows (NCSI)            www.msftconnecttest.com /connecttest.txt, /redirect; www.msftncsi.com /ncsi.txt
 *   Firefox                   detectportal.firefox.com           /success.txt, /canonical.html
 *
 * Matched by PATH ALONE, on any host: a lab or a school network often has no real DNS (the probe host then
 * resolves to a local address, or the OS falls back to an address it was given), vendors add hosts over time
 * (Apple has several), and the cost of a false match is small: the client is unidentified anyway, and the
 * only difference is a 302 to the splash page instead of a 511 for a non-page request. The paths are specific
 * enough that ordinary sites rarely use them, `/redirect` aside (it is Windows' "open the browser" URL).
 */

/** The hosts each OS uses, for documentation and tests: matching is by path (see above). */
export const CAPTIVE_PROBES = [
  {
    os: 'Apple',
    hosts: ['captive.apple.com', 'www.apple.com'],
    paths: ['/hotspot-detect.html', '/library/test/success.html'],
  },
  {
    os: 'Android/Chrome',
    hosts: [
      'connectivitycheck.gstatic.com',
      'clients3.google.com',
      'www.google.com',
      'connectivitycheck.android.com',
    ],
    paths: ['/generate_204', '/gen_204'],
  },
  {
    os: 'Windows',
    hosts: ['www.msftconnecttest.com', 'www.msftncsi.com'],
    paths: ['/connecttest.txt', '/ncsi.txt', '/redirect'],
  },
  { os: 'Firefox', hosts: ['detectportal.firefox.com'], paths: ['/success.txt', '/canonical.html'] },
] as const;

const PROBE_PATHS: ReadonlySet<string> = new Set(CAPTIVE_PROBES.flatMap((probe) => probe.paths));
/** Longest probe path: anything longer is not one, and is not lower-cased to find out. */
const MAX_PROBE_PATH = Math.max(...[...PROBE_PATHS].map((path) => path.length));

/**
 * Whether `path` (a request's path, with or without "?query"; as sent, any case) is an OS probe's. The query
 * is ignored (Windows and Android add none, but a cache-buster must not make a probe look like a page). Case
 * is ignored too: Apple's servers treat the path so, and a probe is no less a probe in capitals.
 */
export function isCaptivePortalProbe(path: string): boolean {
  const query = path.indexOf('?');
  const bare = query < 0 ? path : path.slice(0, query);
  return bare.length <= MAX_PROBE_PATH && PROBE_PATHS.has(bare.toLowerCase());
}
