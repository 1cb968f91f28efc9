import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  fchownSync,
  fstatSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { Config } from '../lib/config/schema.ts';
import { DoormanError } from '../lib/errors.ts';
import { ensureRootDirectory, trustedDirectoryPath, writeRootFile } from '../lib/fs/root-owned.ts';
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
    // Only one of root's own, in a directory that is root's alone, is kept as Doorman's CA.
    trustedDirectoryPath(dirname(files.caFile));
    const found = lstatSync(files.caFile);
    if (!found.isFile() || found.uid !== 0)
      throw new DoormanError('UNSAFE_PATH', `${files.caFile} is not a file of root's; root will not use it`);
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

/**
 * Doorman's own CA in its directory of root's (made if missing, below directories that are root's alone:
 * lib/fs/root-owned.ts). openssl works by path, so it works in a private directory of root's (mkdtemp in the
 * sticky /tmp); the key goes nowhere else, and reaches the CA file through writeRootFile (a new file, owner
 * and mode set on its descriptor, renamed into place: never seen half-written).
 */
function makeCa(caFile: string, certFile: string, openssl: string): void {
  const dir = trustedDirectoryPath(dirname(caFile));
  ensureRootDirectory(dir, 0o755);
  const work = mkdtempSync(join(tmpdir(), 'doorman-ca-'));
  try {
    const keyFile = join(work, 'key.pem');
    run(openssl, ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', keyFile]);
    const cert = run(openssl, [
      'req',
      '-x509',
      '-new',
      '-key',
      keyFile,
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
    const key = readFileSync(keyFile);
    const pem = Buffer.concat([key, Buffer.from(cert, 'utf8')]);
    key.fill(0);
    try {
      writeRootFile(join(dir, basename(certFile)), cert, 0o644);
      writeRootFile(join(dir, basename(caFile)), pem, 0o600);
    } finally {
      pem.fill(0);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * security_file_certgen -c makes the DB (the directory must not exist yet); Squid's user then owns it. In a
 * directory of Squid's user's (stateDir), certgen runs as that user: root never writes where the service user
 * could swap a name for a link. Elsewhere the DB's path must be root's alone (lib/fs/root-owned.ts): certgen
 * runs as root, and the tree is given to Squid's user from the leaves up, through descriptors opened without
 * following links (a file only when it has one name), so nothing is Squid's user's before all below it is done.
 */
function makeCertDb(certDb: string, certgen: string, squidUser: Account | undefined): void {
  if (!existsSync(certgen)) {
    throw new DoormanError(
      'CONFIG_INVALID',
      `squid.intercept.tls.certgen: ${certgen} does not exist (it comes with Squid's OpenSSL build, Debian package squid-openssl)`,
    );
  }
  const args = ['-c', '-s', certDb, '-M', '4MB'];
  if (squidUser === undefined) {
    run(certgen, args);
    return;
  }
  if (lstatSync(dirname(certDb)).uid === squidUser.uid) {
    run(certgen, args, { uid: squidUser.uid, gid: squidUser.gid });
    return;
  }
  const trusted = trustedDirectoryPath(certDb);
  run(certgen, ['-c', '-s', trusted, '-M', '4MB']);
  chownTree(trusted, squidUser);
}

function chownTree(path: string, owner: Account): void {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const stats = fstatSync(fd);
    if (stats.uid !== 0 || (!stats.isDirectory() && (!stats.isFile() || stats.nlink !== 1))) {
      throw new DoormanError('PRIVILEGES', `${path}: not made by certgen as root; refusing to give it away`);
    }
    if (stats.isDirectory()) for (const name of readdirSync(path)) chownTree(join(path, name), owner);
    fchownSync(fd, owner.uid, owner.gid);
  } finally {
    closeSync(fd);
  }
}

/** `as`: the user to run it as (root only). */
function run(command: string, args: readonly string[], as?: { uid: number; gid: number }): string {
  try {
    return execFileSync(command, args, {
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: 60_000,
      ...(as ?? {}),
    });
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '').trim();
    throw new DoormanError(
      'CONFIG_INVALID',
      `${command} ${args[0] ?? ''} failed: ${stderr || (error as Error).message.split('\n')[0]}`,
    );
  }
}
