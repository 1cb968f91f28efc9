import { closeSync, openSync, readSync, readlinkSync } from 'node:fs';

/**
 * The path each inherited Unix socket is bound to, so that a socket unit's descriptor can be matched to a
 * helper kind by its ListenStream= path. Node cannot ask a descriptor its address (its Pipe handle has no
 * getsockname), so the kernel's tables are read: /proc/self/fd/N names the socket's inode, and /proc/net/unix
 * lists each bound socket's inode and path. Descriptors not found (not Unix sockets, no path) are left out.
 */
export function boundPaths(fds: readonly number[], proc = '/proc'): Map<number, string> {
  const inodes = new Map<string, number>();
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`${proc}/self/fd/${fd}`));
      if (m?.[1] !== undefined) inodes.set(m[1], fd);
    } catch {
      // not open: matchKinds reports it by name
    }
  }
  const paths = new Map<number, string>();
  if (inodes.size === 0) return paths;
  for (const [inode, path] of unixSocketTable(readCapped(`${proc}/net/unix`))) {
    const fd = inodes.get(inode);
    if (fd !== undefined && path.startsWith('/')) paths.set(fd, path);
  }
  return paths;
}

/**
 * /proc/net/unix's rows as [inode, path]: "Num RefCount Protocol Flags Type St Inode Path" (proc(5)), the
 * path absent for unbound sockets. Pure.
 */
export function unixSocketTable(text: string): Array<[string, string]> {
  const rows: Array<[string, string]> = [];
  for (const line of text.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length >= 8 && fields[6] !== undefined) rows.push([fields[6], fields.slice(7).join(' ')]);
  }
  return rows;
}

/** A busy machine has thousands of sockets (about 100 bytes each): 16 MiB is far beyond any. */
const MAX_TABLE = 16 * 1024 * 1024;

function readCapped(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.alloc(64 * 1024);
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0 || total + n > MAX_TABLE) break;
      chunks.push(buf.subarray(0, n));
      total += n;
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
