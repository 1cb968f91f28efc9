import * as net from 'node:net';
import * as tls from 'node:tls';
import { Client } from 'ldapts';
import { DirectoryError, toDirectoryError, type Phase } from './errors.ts';
import { portOf, type DirectorySettings } from './settings.ts';

/**
 * Making ldapts clients from the settings. Three transports:
 *   ldaps     TLS from the first byte (port 636 by default);
 *   starttls  plain LDAP, then the StartTLS extended operation BEFORE anything else, bind included;
 *   plain     no encryption (passwords cross the network in clear: the settings screen warns).
 * `address`, when set, is where we connect; the certificate is still checked against `host`, the way curl's
 * --resolve works. Verification is never turned off: the CA comes from the settings or from the system.
 * Referrals are never chased (ldapts does not follow them, and we ignore search references).
 */
export interface Credentials {
  dn: string;
  password: string;
}

/** The URL ldapts connects to, and `host:port` as messages name the server. */
export function endpointOf(settings: DirectorySettings): { url: string; server: string } {
  const port = portOf(settings);
  const target = settings.address ?? settings.host;
  const bracketed = net.isIPv6(target) ? `[${target}]` : target;
  const scheme = settings.transport === 'ldaps' ? 'ldaps' : 'ldap';
  const shown = settings.address === undefined ? settings.host : `${settings.host} (${bracketed})`;
  return { url: `${scheme}://${bracketed}:${port}`, server: `${shown}:${port}` };
}

/** TLS options: the settings' CA (else the system's), the certificate checked against `host`, TLS ≥ 1.2. */
export function tlsOptionsOf(settings: DirectorySettings): tls.ConnectionOptions {
  const host = settings.host;
  return {
    // SNI carries host names only; for an IP address the check below still applies (to its IP SANs).
    ...(net.isIP(host) === 0 ? { servername: host } : {}),
    ...(settings.caCertificate === undefined ? {} : { ca: settings.caCertificate }),
    // Against `host`, not the address we connected to (which differs when `address` is set).
    checkServerIdentity: (_connectedTo, cert) => tls.checkServerIdentity(host, cert),
    rejectUnauthorized: true,
    minVersion: 'TLSv1.2',
  };
}

/** A client and what we know about its sockets. */
export interface Connection {
  client: Client;
  /**
   * False once a socket of this client has closed. ldapts's own isConnected misses that after StartTLS (it
   * watches only the socket it had before the upgrade), so operations on a dead connection would wait for
   * the timeout; this is what the pools look at.
   */
  isAlive(): boolean;
  /**
   * Unbind, and destroy the sockets if the server has not closed them shortly after: with StartTLS ldapts
   * waits for a close it never sees, which kept helpers alive for a whole timeout after Squid let them go.
   */
  close(): Promise<void>;
}

/** How long an unbind may take before the sockets are destroyed anyway. */
const UNBIND_GRACE_MS = 500;

/**
 * A new, unconnected client. Its transports work ONCE: ldapts silently reconnects a client whose socket
 * closed, and such a connection would be neither bound nor (with StartTLS) encrypted. Refusing the second
 * connection makes a lost connection an error, and the caller opens a new client properly.
 */
export function createConnection(settings: DirectorySettings): Connection {
  let lost = false;
  const sockets: net.Socket[] = [];
  const connectOnce = <F extends (...args: never[]) => net.Socket>(connect: F): F => {
    let used = false;
    return ((...args: Parameters<F>) => {
      if (used) throw new Error('connection lost: not reconnecting this client');
      used = true;
      const socket = connect(...args);
      sockets.push(socket);
      socket.once('close', () => {
        lost = true;
      });
      return socket;
    }) as F;
  };
  const secure = settings.transport === 'ldaps';
  const client = new Client({
    url: endpointOf(settings).url,
    timeout: settings.timeoutMs,
    connectTimeout: settings.connectTimeoutMs,
    // Only for ldaps: ldapts makes any client with tlsOptions connect with TLS from the start.
    ...(secure ? { tlsOptions: tlsOptionsOf(settings) } : {}),
    createConnection: connectOnce(net.connect as (...args: never[]) => net.Socket) as typeof net.connect,
    // Used at connect (ldaps) or for the StartTLS upgrade: one of the two, once.
    createSecureConnection: connectOnce(
      tls.connect as (...args: never[]) => tls.TLSSocket,
    ) as typeof tls.connect,
  });
  const close = async () => {
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, UNBIND_GRACE_MS)));
    await Promise.race([client.unbind().catch(() => {}), grace]);
    clearTimeout(timer);
    for (const socket of sockets) socket.destroy();
  };
  return { client, isAlive: () => !lost && client.isConnected, close };
}

/**
 * Bring a new client to a usable state: StartTLS first when configured (it connects), then the bind when
 * credentials are given. The whole thing has a deadline (ldapts has none for the TLS handshake after
 * StartTLS). On failure the client is closed and a DirectoryError says why.
 */
export async function establish(
  connection: Connection,
  settings: DirectorySettings,
  credentials?: Credentials,
): Promise<void> {
  const { client } = connection;
  const { server } = endpointOf(settings);
  let phase: Phase = 'connect';
  const steps = async () => {
    if (settings.transport === 'starttls') {
      phase = 'starttls';
      await client.startTLS(tlsOptionsOf(settings));
    }
    if (credentials !== undefined) {
      // An LDAP simple bind with an empty password is an anonymous bind, and succeeds: never send one.
      if (credentials.password.length === 0) {
        throw new DirectoryError('INVALID_CREDENTIALS', `no password for ${JSON.stringify(credentials.dn)}`);
      }
      phase = 'bind';
      await client.bind(credentials.dn, credentials.password);
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(
        new DirectoryError(
          'TIMEOUT',
          `${server}: not ready within ${settings.connectTimeoutMs + settings.timeoutMs} ms (${phase})`,
        ),
      );
    }, settings.connectTimeoutMs + settings.timeoutMs);
  });
  const work = steps();
  // If the deadline wins, the steps still settle later: their error is already reported.
  work.catch(() => {});
  try {
    await Promise.race([work, deadline]);
  } catch (error) {
    void connection.close();
    throw toDirectoryError(error, {
      server,
      phase,
      ...(credentials === undefined ? {} : { bindDn: credentials.dn }),
    });
  } finally {
    clearTimeout(timer);
  }
}
