import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  linkSync,
  openSync,
  readSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/schema.ts';
import { DoormanError } from '../errors.ts';
import { hashSecret, secretMatches } from './api-key.ts';

/**
 * The proxy key proves that Squid, not the client, wrote the client address Doorman reads.
 *
 * Squid adds `X-Doorman-Client: <key> <client address>` to the requests it forwards to Doorman's own site
 * (request_header_add, after deleting any such header the client sent). Inside a CONNECT tunnel the client
 * writes every byte and Squid adds nothing, so a request that reaches Doorman from Squid's address without the
 * key is a tunnel (or a program on the proxy host): Doorman cannot tell whose it is, and refuses to tie a
 * session to any address on its word. 256 random bits, in `<stateDir>/proxy-key` (0600, the service user's),
 * made by `doorman serve` on its first start; `doorman squid-conf` writes it into the include.
 */
export const PROXY_CLIENT_HEADER = 'X-Doorman-Client';
/**
 * The same key on Squid's ICAP requests (`adaptation_meta`, an ICAP header, not the encapsulated HTTP one):
 * it proves that Squid, not whoever else can reach the ICAP port, wrote X-Client-IP. Only then does the ICAP
 * service sign a URL for that address (portal-url-signature.ts), and only such a connection may idle long.
 */
export const PROXY_ICAP_HEADER = 'X-Doorman-Key';
export const PROXY_KEY_FILE = 'proxy-key';

const KEY = /^[A-Za-z0-9_-]{43}$/;
/** The file holds the key and at most a line break; anything longer is not ours. */
const MAX_FILE_BYTES = 64;

export const proxyKeyPath = (config: Pick<Config, 'stateDir'>): string =>
  join(config.stateDir, PROXY_KEY_FILE);

/**
 * The key in `path`, made first if there is none (the web app, as the service user, on start-up). Written to a
 * temporary file, flushed, then linked into place, so that nobody ever reads a half-written key (a crash or a
 * full disk leaves at worst a stray temporary file) and two processes starting at once agree on one key.
 */
export function ensureProxyKey(path: string): string {
  try {
    return readProxyKey(path);
  } catch (error) {
    if (!(error instanceof DoormanError && (error.cause as NodeJS.ErrnoException)?.code === 'ENOENT'))
      throw error;
  }
  const key = randomBytes(32).toString('base64url');
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fd = openSync(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      writeSync(fd, `${key}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    linkSync(temp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readProxyKey(path);
    throw unreadable(path, error);
  } finally {
    rmSync(temp, { force: true });
  }
  return key;
}

/** The key in `path` (squid-conf, as root or the service user); never follows a symbolic link. */
export function readProxyKey(path: string): string {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO planted in its place must not hang root's squid-conf (it is then refused as no file).
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw unreadable(path, error);
  }
  let text: string;
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_FILE_BYTES) {
      throw new DoormanError('CONFIG_UNREADABLE', `${path}: not a proxy key file (expected 43 characters)`);
    }
    const buffer = Buffer.alloc(MAX_FILE_BYTES);
    const length = readSync(fd, buffer, 0, MAX_FILE_BYTES, 0);
    text = buffer.subarray(0, length).toString('utf8').trimEnd();
  } finally {
    closeSync(fd);
  }
  // The key itself is never put in a message, even a malformed one.
  if (!KEY.test(text)) {
    throw new DoormanError('CONFIG_UNREADABLE', `${path}: not a proxy key file (expected 43 characters)`);
  }
  return text;
}

function unreadable(path: string, error: unknown): DoormanError {
  const code = (error as NodeJS.ErrnoException).code ?? 'error';
  const why =
    code === 'ENOENT'
      ? 'there is none yet: start "doorman serve" once, it makes it'
      : code === 'ELOOP'
        ? 'it is a symbolic link; refusing to follow it'
        : code === 'EACCES'
          ? 'permission denied: run as root or as the service user'
          : code;
  return new DoormanError('CONFIG_UNREADABLE', `cannot read the proxy key ${path}: ${why}`, { cause: error });
}

/** Checks a presented key against the real one in constant time (both hashed first, as API keys are). */
export class ProxyKeyCheck {
  readonly #digest: Buffer;
  constructor(key: string) {
    this.#digest = hashSecret(key);
  }
  matches(presented: string): boolean {
    return secretMatches(presented, this.#digest);
  }
}
