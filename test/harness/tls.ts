import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './run.ts';

/**
 * Certificates made at test time with the openssl CLI: one CA per server, one server certificate signed by it.
 * Keys are EC P-256 (instant to generate; OpenSSL, GnuTLS in slapd and Samba, and Node all take them), written
 * with mode 0600 because Samba refuses a key file that others can read.
 */
export interface CertificateAuthority {
  certFile: string;
  keyFile: string;
  /** The CA certificate, PEM: what clients trust (Node's `ca`, LDAPTLS_CACERT). */
  certPem: string;
}

export interface ServerCertificate {
  certFile: string;
  keyFile: string;
  certPem: string;
}

export interface ServerCertificateOptions {
  commonName: string;
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
  /** File name stem in `dir` (default "server"). */
  name?: string;
}

const KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export async function createCa(dir: string, commonName = 'Doorman Test CA'): Promise<CertificateAuthority> {
  const certFile = join(dir, 'ca.pem');
  const keyFile = join(dir, 'ca.key');
  const config = writeConfig(join(dir, 'ca.cnf'), [
    'basicConstraints = critical, CA:TRUE',
    'keyUsage = critical, keyCertSign, cRLSign',
    'subjectKeyIdentifier = hash',
  ]);
  await run('openssl', [
    'req',
    '-x509',
    ...KEY,
    '-days',
    '3650',
    '-config',
    config,
    '-extensions',
    'ext',
    '-subj',
    `/CN=${commonName}`,
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ]);
  return { certFile, keyFile, certPem: readFileSync(certFile, 'utf8') };
}

export async function issueServerCertificate(
  ca: CertificateAuthority,
  dir: string,
  options: ServerCertificateOptions,
): Promise<ServerCertificate> {
  const name = options.name ?? 'server';
  const certFile = join(dir, `${name}.pem`);
  const keyFile = join(dir, `${name}.key`);
  const altNames = [
    ...(options.dnsNames ?? []).map((n) => `DNS:${n}`),
    ...(options.ipAddresses ?? []).map((a) => `IP:${a}`),
  ];
  const config = writeConfig(join(dir, `${name}.cnf`), [
    'basicConstraints = critical, CA:FALSE',
    'keyUsage = critical, digitalSignature',
    'extendedKeyUsage = serverAuth',
    'subjectKeyIdentifier = hash',
    'authorityKeyIdentifier = keyid',
    ...(altNames.length > 0 ? [`subjectAltName = ${altNames.join(', ')}`] : []),
  ]);
  // `req -x509 -CA` (OpenSSL 3) makes and signs the certificate in one call, no CSR file.
  await run('openssl', [
    'req',
    '-x509',
    ...KEY,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-days',
    '3650',
    '-config',
    config,
    '-extensions',
    'ext',
    '-subj',
    `/CN=${options.commonName}`,
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ]);
  return { certFile, keyFile, certPem: readFileSync(certFile, 'utf8') };
}

/** A config of our own: Debian's openssl.cnf would add its v3_ca extensions on top of ours. */
function writeConfig(file: string, extensions: readonly string[]): string {
  writeFileSync(
    file,
    ['[req]', 'distinguished_name = dn', 'prompt = no', '[dn]', '[ext]', ...extensions, ''].join('\n'),
  );
  return file;
}
