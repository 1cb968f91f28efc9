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
    return readCappedFd(fd, path, maxBytes);
  } finally {
    closeSync(fd);
  }
}

/**
 * readCapped on a descriptor the caller opened (and closes), for a caller that checks the file on that same
 * descriptor first: what it checked is what is read, whatever is renamed over the path meanwhile.
 */
export function readCappedFd(fd: number, path: string, maxBytes: number): string {
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
}
