import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { DoormanError } from '../errors.ts';

/**
 * The directory bind account's password: a file of each box's own (`<stateDir>/directory-bind-password`, mode
 * 0600, owned by the service user, whom Squid's helpers run as), whichever engine holds the settings. It is
 * stored in clear text because it must be sent to the directory as it is; the file is the one place it
 * exists: never in the store, a process argument, a log line, an error message or a page.
 */
export class BindPasswordFile {
  readonly path: string;

  constructor(path: string) {
    this.path = path;
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
   * Put `password` in place: a temporary file (0600, flushed to disk) renamed over the old one. Returns what
   * puts the previous password back (or removes the file, if there was none), for a write of the settings that
   * did not commit after all. A failure leaves no temporary file behind.
   */
  replace(password: string): () => void {
    const previous = this.read();
    const temp = this.#writeTemp(password);
    try {
      renameSync(temp, this.path);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
    return () => {
      if (previous === undefined) rmSync(this.path, { force: true });
      else renameSync(this.#writeTemp(previous), this.path);
    };
  }

  /** A new file next to the password file, mode 0600, holding `password` and flushed to disk. */
  #writeTemp(password: string): string {
    const temp = `${this.path}.${randomBytes(6).toString('hex')}.tmp`;
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, password);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    return temp;
  }
}
