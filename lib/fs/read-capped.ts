import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { DoormanError } from '../errors.ts';

/**
 * A small text file, read only if it is at most `maxBytes` long: the size is checked on the open descriptor
 * before reading, and no more than maxBytes + 1 bytes are ever read (a file may grow meanwhile).
 * Errors from the file system are thrown as they are (ENOENT…); an oversized file is CONFIG_UNREADABLE.
 */
export function readCapped(path: string, maxBytes: number): string {
  const fd = openSync(path, 'r');
  try {
    const stat = fstatSync(fd);
    if (stat.size > maxBytes)
      throw new DoormanError('CONFIG_UNREADABLE', `${path}: larger than ${maxBytes} bytes`);
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (let n; length <= maxBytes && (n = readSync(fd, buffer, length, maxBytes + 1 - length, null)) > 0;) {
      length += n;
    }
    if (length > maxBytes)
      throw new DoormanError('CONFIG_UNREADABLE', `${path}: larger than ${maxBytes} bytes`);
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
