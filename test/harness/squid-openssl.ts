import { execFile as execFileCb, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { squidTls } from '../../squid-conf/squid-build.ts';
import { writeTestSquidConf } from './lab.ts';
import { freePort, start, waitForPort, type Started } from './processes.ts';

const execFile = promisify(execFileCb);

/**
 * Squid's OpenSSL build (Debian squid-openssl), which ssl-bump needs. Installing that package would remove the
 * GnuTLS squid every other test (and an administrator) runs, so `scripts/install-system.sh test` unpacks the
 * same version's .deb into this directory instead, never installed. Its binary uses the installed squid's
 * /usr/share/squid (error pages) and helpers; its own certificate helper is under the same root.
 */
export const SQUID_OPENSSL_ROOT = '/opt/doorman-test/squid-openssl';

export interface SquidOpenssl {
  /** The squid binary. */
  squid: string;
  /** Its security_file_certgen (sslcrtd_program). */
  certgen: string;
}

/** The unpacked OpenSSL Squid; fails loudly, saying what to run, when it is missing or not that build. */
export function squidOpenssl(): SquidOpenssl {
  const squid = join(SQUID_OPENSSL_ROOT, 'usr', 'sbin', 'squid');
  const certgen = join(SQUID_OPENSSL_ROOT, 'usr', 'lib', 'squid', 'security_file_certgen');
  const missing = `run "scripts/install-system.sh test" (it unpacks squid-openssl into ${SQUID_OPENSSL_ROOT})`;
  if (!existsSync(squid) || !existsSync(certgen))
    throw new Error(`Squid's OpenSSL build is not in ${SQUID_OPENSSL_ROOT}: ${missing}`);
  const version = execFileSync(squid, ['-v'], { encoding: 'utf8' });
  if (squidTls(version) !== 'openssl')
    throw new Error(`${squid} is not Squid's OpenSSL build (squid -v: no --with-openssl): ${missing}`);
  return { squid, certgen };
}

/** The installed Squid (package squid, the GnuTLS build). */
export const SYSTEM_SQUID = 'squid';

export interface RunningSquid {
  /** Its plain (explicit-proxy) port on 127.0.0.1, which readiness is judged by. */
  port: number;
  /** access.log or cache.log so far. */
  log(name: 'access.log' | 'cache.log'): string;
  /** SIGHUP: re-read the configuration, as `squid -k reconfigure` does. */
  reconfigure(): void;
  stop(): Promise<void>;
  process: Started;
}

/**
 * Start `squid` (a binary path) on a squid.conf of the test's own in `dir`: a plain port on 127.0.0.1, `ports`
 * (http_port or https_port lines, whole), `before` (lines before the include), the include, then deny all.
 * `squid -k parse` first, so a bad configuration fails with Squid's own words.
 */
export async function startSquid(
  squid: string,
  dir: string,
  options: { include: string; ports?: readonly string[]; before?: readonly string[] },
): Promise<RunningSquid> {
  const port = await freePort();
  const conf = writeTestSquidConf(dir, {
    port,
    ports: options.ports ?? [],
    before: options.before ?? [],
    include: options.include,
  });
  await execFile(squid, ['-k', 'parse', '-f', conf]);
  const proc = start(squid, ['-N', '-f', conf]);
  await waitForPort('127.0.0.1', port, 10_000, proc.child).catch((error: Error) => {
    throw new Error(`${error.message}\n--- its stderr:\n${proc.stderr()}`);
  });
  const log = (file: string) => {
    const path = join(dir, 'logs', file);
    return existsSync(path) ? readFileSync(path, 'utf8') : '';
  };
  return {
    port,
    log,
    reconfigure: () => proc.child.kill('SIGHUP'),
    stop: () => proc.stop(),
    process: proc,
  };
}
