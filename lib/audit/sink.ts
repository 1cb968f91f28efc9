import { createRequire } from 'node:module';
import { type FileHandle, open, stat } from 'node:fs/promises';
import type { Log } from '../log.ts';
import { type AuditRecord, auditJsonLine } from './event.ts';
import { syslogDatagram } from './syslog-format.ts';

/** Lines waiting for a slow sink at most; past it, new events are dropped (counted, logged). */
export const AUDIT_QUEUE_MAX = 10_000;
/** How often a sink says how many events it dropped since it last said so, ms. */
const DROP_REPORT_MS = 60_000;

/**
 * Where committed audit events go besides the store, for a SIEM: a file of JSON lines, or syslog. ship() never
 * blocks nor throws (it runs after a login's commit): events wait in a bounded queue, written by one writer
 * at a time; a sink that is slow, full or missing drops what does not fit, counts it and logs the count.
 */
export interface AuditSink {
  ship(records: readonly AuditRecord[]): void;
  /** Events dropped since the start (queue full, or the sink failing). */
  readonly dropped: number;
  /** Write what is queued (within a short deadline), then close. */
  close(): Promise<void>;
}

/** What a sink writes through: one call a batch of lines; what it could not write, and why. */
interface Writer {
  write(records: readonly AuditRecord[]): Promise<{ failed: number; why?: string }>;
  close(): Promise<void>;
}

export interface AuditSinkOptions {
  log: Log;
  /** The queue's bound; default AUDIT_QUEUE_MAX. */
  queueMax?: number;
  now?: () => number;
  /** The syslog socket; default /dev/log (tests bind their own). */
  syslogPath?: string;
}

/** The sinks the config asks for (`audit.file`, `audit.syslog`): none, one, or both. */
export function auditSinks(
  config: { file: string | null; syslog: boolean },
  options: AuditSinkOptions,
): AuditSink | undefined {
  const sinks: AuditSink[] = [];
  if (config.file !== null) sinks.push(queuedSink(fileWriter(config.file), 'file', options));
  if (config.syslog)
    sinks.push(queuedSink(syslogWriter(options.syslogPath ?? '/dev/log'), 'syslog', options));
  if (sinks.length === 0) return undefined;
  return {
    ship: (records) => sinks.forEach((sink) => sink.ship(records)),
    get dropped() {
      return sinks.reduce((sum, sink) => sum + sink.dropped, 0);
    },
    close: async () => void (await Promise.all(sinks.map((sink) => sink.close()))),
  };
}

function queuedSink(writer: Writer, name: string, options: AuditSinkOptions): AuditSink {
  const max = options.queueMax ?? AUDIT_QUEUE_MAX;
  const now = options.now ?? Date.now;
  let queue: AuditRecord[] = [];
  let writing: Promise<void> | undefined;
  let dropped = 0;
  let unreported = 0;
  let reportedAt = -Infinity;
  const drop = (n: number, why: string) => {
    dropped += n;
    unreported += n;
    if (now() - reportedAt < DROP_REPORT_MS) return;
    options.log(`audit: ${unreported} event(s) not written to the ${name} sink (${why}); the store has them`);
    unreported = 0;
    reportedAt = now();
  };
  const drain = async () => {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        const { failed, why } = await writer.write(batch);
        if (failed > 0) drop(failed, why ?? 'refused');
      } catch (error) {
        drop(batch.length, (error as Error).message);
      }
    }
    writing = undefined;
  };
  return {
    ship(records) {
      const room = Math.max(0, max - queue.length);
      if (records.length > room) drop(records.length - room, 'queue full');
      queue.push(...records.slice(0, room));
      writing ??= drain();
    },
    get dropped() {
      return dropped;
    },
    async close() {
      await Promise.race([writing, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      await writer.close();
    },
  };
}

/**
 * JSON lines appended to `path`, created 0640 (the service user's, readable by its group: adm on Debian for a
 * SIEM's reader). Rotation: before each batch the path is checked (stat); once it names another file, or
 * none (logrotate moved it, with or without `create`), the file is opened again there, so neither a SIGHUP
 * nor copytruncate is needed. Every process of a box appends to it (serve, the CLI), each as the service user
 * (the CLI becomes it before opening the store), so the file keeps one owner.
 */
function fileWriter(path: string): Writer {
  let handle: FileHandle | undefined;
  let inode: number | undefined;
  const reopen = async () => {
    await handle?.close().catch(() => undefined);
    handle = undefined;
    // Created 0640 whatever the umask (the services run under 077), so a SIEM reader in the group can read it.
    handle = await open(path, 'ax', 0o640).then(
      async (created) => (await created.chmod(0o640), created),
      (error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        return open(path, 'a');
      },
    );
    inode = (await handle.stat()).ino;
  };
  return {
    async write(records) {
      const current = await stat(path).then(
        (s) => s.ino,
        () => undefined,
      );
      if (handle === undefined || current !== inode) await reopen();
      const text = records.map((record) => `${auditJsonLine(record)}\n`).join('');
      await handle?.appendFile(text);
      return { failed: 0 };
    },
    async close() {
      await handle?.close().catch(() => undefined);
      handle = undefined;
    },
  };
}

interface DgramSocket {
  on(event: 'error', listener: (error: Error) => void): void;
  send(buf: Buffer, offset: number, length: number, path: string, callback?: (error?: Error) => void): void;
  close(): void;
}

/** Datagrams to the local syslog socket (journald or rsyslog); a full socket buffer fails the datagram. */
function syslogWriter(path: string): Writer {
  const require = createRequire(import.meta.url);
  const unix = require('unix-dgram') as { createSocket(type: 'unix_dgram'): DgramSocket };
  let socket: DgramSocket | undefined;
  return {
    async write(records) {
      if (socket === undefined) {
        socket = unix.createSocket('unix_dgram');
        socket.on('error', () => undefined);
      }
      const open = socket;
      const failures: string[] = [];
      for (const record of records) {
        const buf = Buffer.from(syslogDatagram(record, process.pid, new Date()));
        open.send(buf, 0, buf.length, path, (error) => {
          if (error) failures.push(error.message);
        });
      }
      return { failed: failures.length, ...(failures.length > 0 ? { why: failures[0] } : {}) };
    },
    async close() {
      socket?.close();
      socket = undefined;
    },
  };
}
