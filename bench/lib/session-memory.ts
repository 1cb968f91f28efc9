/**
 * Where the memory of a process holding N PostgreSQL sessions goes (authd's copy, PgSessions' SessionTable):
 * measured after a full GC at each step, per session, as V8 heap plus the ArrayBuffers outside it (the
 * table's columns, arena and indexes are there). Needs --expose-gc. (Node is built without V8's pointer
 * compression: every field and pointer is 8 bytes.)
 *
 *   node --expose-gc bench/lib/session-memory.ts [--count 1000000]
 *
 * Steps: the rows as the `postgres` client hands them over (SessionRow objects with strings of their own, made
 * here as the client makes them: one property at a time on a fresh object); the peak of a full load (those rows
 * and the table filling); the table alone once the rows are garbage (its V8 heap and its buffers); then a
 * "last seen" for every session (each row put again, decoded afresh, with a newer change number and last_seen,
 * in deltas of 10,000 as authd's replica reads its own touches back): what the table holds after it, and the
 * process's RSS at the end. Prints one JSON line.
 */
import { parseArgs } from 'node:util';
import { SessionTable, type SessionRow } from '../../lib/store/postgres/session-table.ts';
import { benchKey, benchUser } from './figures.ts';

const { values } = parseArgs({ options: { count: { type: 'string', default: '1000000' } } });
const count = Number(values.count);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error('run with node --expose-gc');
  process.exit(2);
}
/** V8 heap and ArrayBuffers in use after a full collection. */
const usage = (): { heap: number; buffers: number } => {
  gc();
  gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return { heap: heapUsed, buffers: arrayBuffers };
};
const heap = (): number => {
  const { heap, buffers } = usage();
  return heap + buffers;
};
const COLUMNS = [
  'id',
  'key_kind',
  'key',
  'username',
  'source',
  'created_at',
  'last_seen',
  'expires_at',
  'idle_timeout',
  'mac',
  'change',
] as const;
const now = Date.now();
/** A string of its own, as the client decodes every text value from the wire (utf8Slice). */
const decoded = (text: string): string => Buffer.from(text).toString('utf8');

/** A row as the client builds it: an object filled column by column (postgres/src/connection.js DataRow). */
function row(i: number): SessionRow {
  const values = [i + 1, 'ip', benchKey(i), benchUser(i), 'api', now, now, null, null, null, 1];
  const out: Record<string, unknown> = {};
  COLUMNS.forEach((name, c) => {
    const value = values[c];
    out[name] = typeof value === 'string' ? decoded(value) : value;
  });
  return out as unknown as SessionRow;
}

const baseUsage = usage();
const base = baseUsage.heap + baseUsage.buffers;
const table = new SessionTable();
// In a scope of their own, so the rows the table does not keep are garbage once it has read them (as after a
// full load).
const { rowsBytes, peakBytes } = (() => {
  const rows = Array.from({ length: count }, (_, i) => row(i));
  const rowsBytes = heap() - base;
  for (const r of rows) table.put(r);
  const peakBytes = heap() - base;
  return { rowsBytes: rows.length === count ? rowsBytes : 0, peakBytes };
})();
const held = usage();
const tableBytes = held.heap + held.buffers - base;
const heapBytes = held.heap - baseUsage.heap;
const rssLoaded = process.memoryUsage().rss;
// "Last seen" for every session, in deltas of 10,000 rows decoded afresh, as the replica applies them.
const DELTA = 10_000;
for (let first = 0; first < count; first += DELTA) {
  const delta = Array.from({ length: Math.min(DELTA, count - first) }, (_, k) => {
    const r = row(first + k);
    r.last_seen += 1000;
    r.change = 2;
    return r;
  });
  for (const r of delta) table.put(r);
}
const touchedBytes = heap() - base;
const per = (bytes: number) => Math.round(bytes / count);
const mb = (bytes: number) => Math.round(bytes / 1048576);
console.log(
  JSON.stringify({
    sessions: table.size,
    rows_bytes_each: per(rowsBytes),
    table_bytes_each: per(tableBytes),
    table_heap_bytes_each: per(heapBytes),
    table_buffers_bytes_each: per(tableBytes - heapBytes),
    peak_during_load_mb: mb(peakBytes),
    table_mb: mb(tableBytes),
    table_after_touch_mb: mb(touchedBytes),
    rss_loaded_mb: mb(rssLoaded),
    rss_mb: mb(process.memoryUsage().rss),
  }),
);
