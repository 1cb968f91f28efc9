import { existsSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import { dbPath, type LoadedConfig } from '../../lib/config/load.ts';
import { openStoresKeepingRoot } from '../../lib/seamless/stores.ts';
import { proxyKeyPath, readProxyKey } from '../../lib/security/proxy-key.ts';
import { directoryApplied } from '../../lib/store/directory-settings-store.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { generateInclude, type Runtime } from '../../squid-conf/generate.ts';
import { portalOptions } from '../../squid-conf/intercept.ts';
import { checkSquidForTls } from '../../squid-conf/squid-build.ts';
import { generateStandalone } from '../../squid-conf/standalone.ts';
import { setUpTls } from '../../squid-conf/tls-setup.ts';
import { prepareStandaloneDir, writeStandaloneFile } from '../../squid-conf/standalone-files.ts';
import {
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  noExtra,
  out,
  parse,
  UsageError,
} from '../command.ts';

const help = `Usage: doorman squid-conf [--access-log FILE] [--squid PATH]
       doorman squid-conf --standalone DIR --port ADDR:PORT [--port ADDR:PORT ...] [--loopback-dns]
       doorman squid-conf --init-tls

Print the include file that adds Doorman to an existing squid.conf: the session helper (absolute paths to
this Doorman's own Node and helper), the acl doorman_identified, Squid's standard protections, access to
Doorman itself, the client address (with the proxy key that "doorman serve" makes on its first start) for
Doorman's site only, and the log format "doorman"; with squid.intercept.httpPort set, also the captive
portal's intercept port and ICAP service (icap.host, icap.port), and with squid.intercept.httpsPort the
HTTPS intercept port with ssl-bump, which needs Squid built with OpenSSL (Debian package squid-openssl): a
GnuTLS Squid (package squid) is refused here rather than left to fail on "Unknown https_port option". Put
it in /etc/squid/conf.d/doorman.conf (Debian includes that directory before its local rules), then
"squid -k parse" and "squid -k reconfigure". It holds the proxy key: keep it mode 0600, root's (Squid
reads its configuration as root):
  (umask 077; doorman squid-conf > /etc/squid/conf.d/doorman.conf)

With --init-tls (as root), make what squid.intercept.httpsPort needs: Doorman's CA
(<stateDir>-tls/ssl-bump-ca.pem, key and certificate, 0600; <stateDir>-tls/ssl-bump-ca.crt is the certificate
clients must trust) unless squid.intercept.tls.caFile names yours, and the cert DB of security_file_certgen
(mode bump), owned by serviceUser. Existing files are kept.

With --standalone, write DIR/doorman.conf and a complete DIR/squid.conf for a Squid instance of Doorman's own
(quick start, tests): run it with "squid -N -f DIR/squid.conf". Nothing outside DIR is touched.

Options:
      --access-log FILE   also log to FILE in the doorman format
      --acls-only         define the helpers and ACLs but write no http_access line: for writing every
                          access rule yourself (Squid stops at the first http_access line that matches)
      --standalone DIR    write a standalone Squid configuration into DIR
      --port ADDR:PORT    http_port of the standalone Squid (repeatable; IPv6 as [::1]:3130)
      --loopback-dns      standalone Squid sends DNS queries to 127.0.0.1 only
      --squid PATH        the Squid binary whose build is checked for ssl-bump (default: squid on PATH)
      --init-tls          make the ssl-bump CA and cert DB (see above), print what was done
${CONFIG_HELP}`;

/** What the include needs from this machine: paths, the proxy key (made by "doorman serve"), our addresses. */
export function runtime(loaded: LoadedConfig): Runtime {
  return {
    root: resolve(import.meta.dirname, '..', '..'),
    proxyKey: readProxyKey(proxyKeyPath(loaded.config)),
    hostAddresses: Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .map((i) => i.address)
      .filter((a) => !a.includes('%')),
  };
}

/**
 * Whether the proxy has joined the domain (seamless authentication enabled). Read from the session DB as the
 * service user even when run as root (lib/seamless/stores.ts), so no root-owned DB file is left behind; no DB
 * yet ("doorman serve" never ran) means not enabled.
 */
function seamlessEnabled(config: LoadedConfig['config']): boolean {
  if (!existsSync(dbPath(config))) return false;
  const stores = openStoresKeepingRoot(config);
  try {
    return stores.seamless.current() !== undefined;
  } finally {
    stores.close();
  }
}

export const squidConfCommand: Command = {
  name: 'squid-conf',
  summary: 'print the squid.conf include (or write a standalone Squid configuration)',
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: {
        ...CONFIG_OPTION,
        'access-log': { type: 'string' },
        standalone: { type: 'string' },
        port: { type: 'string', multiple: true },
        'loopback-dns': { type: 'boolean', default: false },
        'acls-only': { type: 'boolean', default: false },
        squid: { type: 'string', default: 'squid' },
        'init-tls': { type: 'boolean', default: false },
      },
      allowPositionals: true,
    });
    if (values.help) return (out(help), EXIT.ok);
    noExtra(positionals);
    const loaded = configFrom(values.config);
    if (values['init-tls']) {
      if (values.standalone !== undefined || values.port !== undefined || values['access-log'] !== undefined)
        throw new UsageError(
          '--init-tls writes no configuration: give it no --standalone, --port or --access-log',
        );
      const root = process.getuid?.() === 0;
      const done = setUpTls(loaded.config, {
        squidUser: root ? lookupUser(loaded.config.serviceUser) : undefined,
      });
      for (const line of done.lines) out(line);
      return EXIT.ok;
    }
    const rt = runtime(loaded);
    const accessLog = values['access-log'];
    // The captive portal, once an intercept port is configured: Squid asks the ICAP service "doorman serve" runs.
    const portal = portalOptions(loaded.config);
    if (portal?.https !== undefined) await checkSquidForTls(values.squid);
    const include = generateInclude(loaded.config, rt, {
      ...(accessLog === undefined ? {} : { accessLog }),
      directory: directoryApplied(loaded.config),
      seamless: seamlessEnabled(loaded.config),
      access: !values['acls-only'],
      ...(portal === undefined ? {} : { portal }),
    });
    if (values.standalone === undefined) {
      if (values.port !== undefined) throw new UsageError('--port needs --standalone');
      process.stdout.write(include);
      return EXIT.ok;
    }
    const ports = values.port ?? [];
    if (ports.length === 0) throw new UsageError('--standalone needs at least one --port ADDR:PORT');
    for (const p of ports) {
      if (!/^(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d{1,5}$/.test(p)) {
        throw new UsageError(`--port: ${JSON.stringify(p)} is not ADDR:PORT (IPv6 in brackets: [::1]:3130)`);
      }
    }
    const dir = resolve(values.standalone);
    // As root: DIR must be root's own, and no link in it is followed (see prepareStandaloneDir).
    prepareStandaloneDir(dir, process.getuid?.() === 0 ? lookupUser(loaded.config.serviceUser) : undefined);
    const includePath = join(dir, 'doorman.conf');
    // It holds the proxy key: root's alone (Squid reads its configuration as root, at start and reconfigure).
    writeStandaloneFile(includePath, include, 0o600);
    const squidConf = join(dir, 'squid.conf');
    writeStandaloneFile(
      squidConf,
      generateStandalone({
        dir,
        httpPorts: ports,
        include: includePath,
        loopbackDns: values['loopback-dns'],
      }),
      0o644,
    );
    out(squidConf);
    return EXIT.ok;
  },
};
