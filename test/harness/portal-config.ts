import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A config for `doorman serve` with the captive portal on (squid.intercept.httpPort set, never bound by
 * serve), so it runs the ICAP service on 127.0.0.1:icap and the web app on 127.0.0.1:web. Written as
 * <dir>/doorman.json with stateDir <dir>/state; `dir` is made readable by the service user. `extra` overrides
 * top-level fields. Returns the file's path.
 */
export function writePortalConfig(dir: string, web: number, icap: number, extra: object = {}): string {
  const file = join(dir, 'doorman.json');
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync(dir, 0o755);
  writeFileSync(
    file,
    JSON.stringify({
      baseUrl: `http://127.0.0.1:${web}/`,
      listen: [{ host: '127.0.0.1', port: web }],
      stateDir: join(dir, 'state'),
      squid: { intercept: { httpPort: 3129 } },
      icap: { port: icap },
      ...extra,
    }),
    { mode: 0o644 },
  );
  return file;
}
