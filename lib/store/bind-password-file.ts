import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { DoormanError } from '../errors.ts';
import { readCapped } from '../fs/read-capped.ts';
import type { BindPasswordTarget } from './directory-apply-rules.ts';

/** A record is a few names and at most a 64 KiB CA certificate (lib/directory/settings.ts). */
const MAX_TARGET_BYTES = 128 * 1024;

/**
 * The directory bind account's password: a file of each box's own (`<stateDir>/directory-bind-password`, mode
 * 0600, owned by the service user, whom Squid's helpers run as), whichever engine holds the settings. It is
 * stored in clear text because it must be sent to the directory as it is; the file is the one place it
 * exists: never in the store, a process argument, a log line, an error message or a page.
 *
 * Beside it, `<file>.target` (0600 too) records what it was applied for: the server, port, transport, CA and
 * bind account (bindPasswordTarget). On PostgreSQL the settings are shared and the file is not, so a box
 * takes its password only for the target it was applied for on that box (PgDirectorySettings.load()).
 */
export class BindPasswordFile {
  readonly path: string;
  readonly targetPath: string;

  constructor(path: string) {
    this.path = path;
    this.targetPath = `${path}.target`;
  }

  /** The stored password (one trailing line break, as an editor adds, dropped); undefined when there is none. */
  read(): string | undefined {
    try {
      return readFileSync(this.path, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new DoormanError(
        'STORE_UNAVAILABLE',
        `cannot read the bind password file ${this.path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
  }

  /**
   * What the password was applied for, as recorded (parsed JSON, to be compared with sendsPasswordElsewhere);
   * undefined when nothing is (a file written before the record was, or by hand), null when the record is
   * not one Doorman wrote (not JSON, too large): either way, it matches no settings.
   */
  appliedFor(): unknown {
    const text = this.#readRecord({ oversized: '' });
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return null;
    }
  }

  /**
   * Put `password` in place, applied for `target`: each a temporary file (0600, flushed to disk) renamed over
   * the old one. The record goes first: in between, the old password stands beside the new record, which
   * load() refuses for any other target; never the new password beside the old record, which would send it to
   * the old server. Returns what puts the previous password and record back (the password first, for the
   * same reason; or removes them, if there were none), for a write of the settings that did not commit after
   * all. A failure leaves no temporary file behind, and the previous record in place.
   */
  replace(password: string, target: BindPasswordTarget): () => void {
    const previous = { password: this.read(), record: this.#readRecord({ oversized: undefined }) };
    this.#put(this.targetPath, JSON.stringify(target));
    try {
      this.#put(this.path, password);
    } catch (error) {
      try {
        this.#put(this.targetPath, previous.record);
      } catch {
        // Left as it is, the new record beside the old password: refused for any other target.
      }
      throw error;
    }
    return () => {
      this.#put(this.path, previous.password);
      this.#put(this.targetPath, previous.record);
    };
  }

  /** The record as written, undefined when there is none; `oversized` for one Doorman cannot have written. */
  #readRecord(options: { oversized: string | undefined }): string | undefined {
    try {
      return readCapped(this.targetPath, MAX_TARGET_BYTES);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      if (error instanceof DoormanError) return options.oversized;
      throw new DoormanError(
        'STORE_UNAVAILABLE',
        `cannot read ${this.targetPath}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
  }

  /** `text` in place at `path` by a rename (undefined: `path` removed). */
  #put(path: string, text: string | undefined): void {
    if (text === undefined) return void rmSync(path, { force: true });
    const temp = this.#writeTemp(path, text);
    try {
      renameSync(temp, path);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
  }

  /** A new file next to `path`, mode 0600, holding `text` and flushed to disk. */
  #writeTemp(path: string, text: string): string {
    const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } catch (error) {
      closeSync(fd);
      rmSync(temp, { force: true });
      throw error;
    }
    closeSync(fd);
    return temp;
  }
}
