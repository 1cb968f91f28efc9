import { join } from 'node:path';
import type { Config } from '../lib/config/schema.ts';
import type { PortalOptions } from './generate.ts';

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

/** Where the ssl-bump files are, the nulls of squid.intercept.tls resolved to Doorman's own in stateDir. */
export function tlsFiles(config: Config): TlsFiles {
  const tls = config.squid.intercept.tls;
  return {
    caFile: tls.caFile ?? join(config.stateDir, OWN_CA_FILE),
    ownCaCert: tls.caFile === null ? join(config.stateDir, OWN_CA_CERT) : undefined,
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
