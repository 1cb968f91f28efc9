import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  lchownSync,
  linkSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config } from '../lib/config/schema.ts';
import { DoormanError } from '../lib/errors.ts';
import type { Account } from '../lib/system/service-user.ts';
import { tlsFiles } from './intercept.ts';

/** Subject of Doorman's own ssl-bump CA: what a client shows as the issuer of every bumped site. */
export const OWN_CA_SUBJECT = '/O=Doorman/CN=Doorman captive portal CA';
/** Ten years: clients are told to trust it once; a new CA means telling every client again. */
const OWN_CA_DAYS = 3650;

export interface TlsSetupOptions {
  /** Squid's user (Debian: proxy), who must own the cert DB; undefined when not run as root. */
  squidUser: Account | undefined;
  /** The openssl command (a child process: Node has no API to sign a certificate). */
  openssl?: string;
}

export interface TlsSetupResult {
  /** What was done or found, one line each, for the administrator. Never a secret. */
  lines: string[];
}

/**
 * Make what squid.intercept.httpsPort needs before Squid can start: Doorman's own CA (when tls.caFile is null
 * and none exists yet) and, for mode bump, security_file_certgen's cert DB. Existing files are kept, so it
 * can be run again; nothing is overwritten. The CA's private key is written only to the CA file (0600) and
 * never logged or shown.
 */
export function setUpTls(config: Config, options: TlsSetupOptions): TlsSetupResult {
  const intercept = config.squid.intercept;
  if (intercept.httpsPort === null) {
    throw new DoormanError(
      'CONFIG_INVALID',
      'squid.intercept.httpsPort is null: HTTPS is not intercepted, so there is no CA or cert DB to make',
    );
  }
  const files = tlsFiles(config);
  const lines: string[] = [];
  if (files.ownCaCert === undefined) {
    if (!existsSync(files.caFile))
      throw new DoormanError(
        'CONFIG_INVALID',
        `squid.intercept.tls.caFile: ${files.caFile} does not exist (a PEM file with the CA's key and certificate)`,
      );
    lines.push(`CA: ${files.caFile} (yours, squid.intercept.tls.caFile)`);
  } else if (existsSync(files.caFile)) {
    lines.push(`CA: ${files.caFile} exists, kept`);
  } else {
    makeCa(files.caFile, files.ownCaCert, options.openssl ?? 'openssl');
    lines.push(`CA: made ${files.caFile} (key and certificate, mode 0600)`);
  }
  if (intercept.tls.mode === 'bump') {
    lines.push(
      files.ownCaCert === undefined
        ? `Clients must trust the CA certificate in ${files.caFile}`
        : `Clients must trust this certificate: ${files.ownCaCert}`,
    );
    if (existsSync(files.certDb)) {
      lines.push(`cert DB: ${files.certDb} exists, kept`);
    } else {
      makeCertDb(files.certDb, files.certgen, options.squidUser);
      lines.push(`cert DB: made ${files.certDb}`);
    }
  } else {
    lines.push(
      'mode refuse: no cert DB needed, and clients need not trust the CA (it signs nothing they see)',
    );
  }
  return { lines };
}

function makeCa(caFile: string, certFile: string, openssl: string): void {
  if (!existsSync(dirname(caFile))) {
    throw new DoormanError(
      'CONFIG_INVALID',
      `cannot make the CA: ${dirname(caFile)} does not exist (start "doorman serve" once, it makes stateDir)`,
    );
  }
  // The key goes into a file of its own (0600, made exclusively) and never through anything else: openssl
  // writes it there, reads it back from there to sign the certificate, and the certificate is then appended.
  // Complete, the file is linked into place: never seen half-written, and of two runs at once the second
  // link fails and its file is dropped.
  const temp = `${caFile}.${randomBytes(6).toString('hex')}.tmp`;
  closeSync(openSync(temp, 'wx', 0o600));
  try {
    run(openssl, ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', temp]);
    const cert = run(openssl, [
      'req',
      '-x509',
      '-new',
      '-key',
      temp,
      '-subj',
      OWN_CA_SUBJECT,
      '-days',
      String(OWN_CA_DAYS),
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    if (!cert.startsWith('-----BEGIN CERTIFICATE-----'))
      throw new DoormanError('CONFIG_INVALID', `cannot make the CA: ${openssl} gave no certificate`);
    const fd = openSync(temp, 'a');
    try {
      writeSync(fd, cert);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    // The certificate too goes through a new file ('wx' follows no link) renamed into place: stateDir may be
    // the service user's, who must not be able to point a planted link at a file of root's.
    const certTemp = `${certFile}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      writeFileSync(certTemp, cert, { mode: 0o644, flag: 'wx' });
      renameSync(certTemp, certFile);
    } finally {
      rmSync(certTemp, { force: true });
    }
    linkSync(temp, caFile);
  } finally {
    rmSync(temp, { force: true });
  }
}

/** security_file_certgen -c makes the DB (the directory must not exist yet); Squid's user then owns it. */
function makeCertDb(certDb: string, certgen: string, squidUser: Account | undefined): void {
  if (!existsSync(certgen)) {
    throw new DoormanError(
      'CONFIG_INVALID',
      `squid.intercept.tls.certgen: ${certgen} does not exist (it comes with Squid's OpenSSL build, Debian package squid-openssl)`,
    );
  }
  run(certgen, ['-c', '-s', certDb, '-M', '4MB']);
  // Made just now by root, inside a parent that may be Squid's user's: lchown follows no link.
  if (squidUser !== undefined) chownTree(certDb, squidUser);
}

function chownTree(path: string, owner: Account): void {
  lchownSync(path, owner.uid, owner.gid);
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) chownTree(child, owner);
    else lchownSync(child, owner.uid, owner.gid);
  }
}

/** Run a tool to its end (no input); its stdout goes back to the caller only, its stderr into the error. */
function run(command: string, args: readonly string[]): string {
  try {
    return execFileSync(command, args, {
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: 60_000,
    });
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '').trim();
    throw new DoormanError(
      'CONFIG_INVALID',
      `${command} ${args[0] ?? ''} failed: ${stderr || (error as Error).message.split('\n')[0]}`,
    );
  }
}
