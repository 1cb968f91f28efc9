/**
 * Where the memory of a process holding N PostgreSQL sessions goes (authd's copy, PgSessions' SessionTable):
 * V8 heap measured after a full GC at each step, per session. Needs --expose-gc. (Node is built without V8's
 * pointer compression: every field and pointer is 8 bytes.)
 *
 *   node --expose-gc bench/lib/session-memory.ts [--count 1000000]
 *
 * Steps: the rows as the `postgres` client hands them over (SessionRow objects with strings of their own, as a
 * full load holds them all at once while SessionTable.replace reads them); then the SessionTable holding
 * every session, split into the row objects, the strings they keep, and the table's own structures (its
 * maps), whatever the table's design. The rows
 * are made here as the client makes them (one property at a time on a fresh object, strings of their own).
 * Prints one JSON line: bytes per session of each, and the process's RSS at the end.
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
const heap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
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

/** Heap bytes `make`'s result holds while it is alive, beyond what was held before. */
function held(make: () => unknown): number {
  const before = heap();
  const kept = make();
  const bytes = heap() - before;
  return kept === undefined ? 0 : bytes;
}

const base = heap();
const table = new SessionTable();
// In a scope of their own, so the rows the table does not keep are garbage once it has read them (as after a
// full load). A second table over the same rows holds nothing of its own but its structures; copies of the
// rows (sharing their strings) measure the row objects alone.
const { rowsBytes, peakBytes, structuresBytes, objectsBytes } = (() => {
  const rows = Array.from({ length: count }, (_, i) => row(i));
  const rowsBytes = heap() - base;
  for (const r of rows) table.put(r);
  const peakBytes = heap() - base;
  const structuresBytes = held(() => {
    const second = new SessionTable();
    for (const r of rows) second.put(r);
    return second;
  });
  const objectsBytes = held(() => rows.map((r) => ({ ...r })));
  return { rowsBytes, peakBytes, structuresBytes, objectsBytes };
})();
const tableBytes = heap() - base;
const per = (bytes: number) => Math.round(bytes / count);
console.log(
  JSON.stringify({
    sessions: table.size,
    rows_bytes_each: per(rowsBytes),
    table_bytes_each: per(tableBytes),
    row_objects_bytes_each: per(objectsBytes),
    strings_bytes_each: per(tableBytes - structuresBytes - objectsBytes),
    maps_bytes_each: per(structuresBytes),
    peak_during_load_mb: Math.round(peakBytes / 1048576),
    table_mb: Math.round(tableBytes / 1048576),
    rss_mb: Math.round(process.memoryUsage().rss / 1048576),
  }),
);
