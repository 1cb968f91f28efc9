import { join } from 'node:path';
import { besideStateDir } from '../lib/config/load.ts';
import type { Config } from '../lib/config/schema.ts';
import type { PortalOptions } from './portal-conf.ts';

/** Doorman's own ssl-bump CA (key and certificate), used when squid.intercept.tls.caFile is null. */
export const OWN_CA_FILE = 'ssl-bump-ca.pem';
/** Its certificate alone: the file clients must trust. */
export const OWN_CA_CERT = 'ssl-bump-ca.crt';
/** Squid's store of minted certificates, used when squid.intercept.tls.certDb is null. */
export const OWN_CERT_DB = 'ssl-bump-db';

export interface TlsFiles {
  /** The PEM file with the CA's key and certificate that Squid signs with. */
  caFile: string;
  /** Doorman's own CA: the certificate alone, for clients. undefined: the admin supplied caFile. */
  ownCaCert: string | undefined;
  certDb: string;
  certgen: string;
}

/**
 * Doorman's own CA's directory, `<stateDir>-tls`: root's alone, since whoever could write the CA could make
 * every client that trusts it trust them (stateDir is the service user's).
 */
export const ownCaDir = (config: Pick<Config, 'stateDir'>): string => besideStateDir(config.stateDir, 'tls');

/**
 * Where the ssl-bump files are, the nulls of squid.intercept.tls resolved to Doorman's own: the CA in
 * ownCaDir, the cert DB (Squid's user's) in stateDir.
 */
export function tlsFiles(config: Config): TlsFiles {
  const tls = config.squid.intercept.tls;
  return {
    caFile: tls.caFile ?? join(ownCaDir(config), OWN_CA_FILE),
    ownCaCert: tls.caFile === null ? join(ownCaDir(config), OWN_CA_CERT) : undefined,
    certDb: tls.certDb ?? join(config.stateDir, OWN_CERT_DB),
    certgen: tls.certgen,
  };
}

/**
 * The captive portal's part of the include, from the config: none without squid.intercept.httpPort; the
 * HTTPS intercept port only with squid.intercept.httpsPort too (the schema refuses it alone).
 */
export function portalOptions(config: Config): PortalOptions | undefined {
  const { httpPort, httpsPort, tls } = config.squid.intercept;
  if (httpPort === null) return undefined;
  const { host, port } = config.icap;
  const { caFile, certDb, certgen } = tlsFiles(config);
  return {
    interceptPort: httpPort,
    icap: { host, port },
    ...(httpsPort === null ? {} : { https: { port: httpsPort, mode: tls.mode, caFile, certDb, certgen } }),
  };
}
