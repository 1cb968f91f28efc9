import type postgres from 'postgres';
import type { Tx } from './connect.ts';
import type { Replica } from './replica.ts';

/**
 * The `settings` table on PostgreSQL: named JSON rows (portal, directory), as SettingsRow is on SQLite. Its
 * `updated_at` is each row's version: it goes up by at least 1 ms per write, whatever the clock does, so a
 * reader (the ICAP service's ISTag, a helper's cache) sees a change by comparing one number.
 *
 * The table is one replicated table ('settings') whichever rows a repository reads, and a replica holds one
 * sync a table: every repository of one process shares one copy of it (settingsCopy).
 */

export interface StoredSetting {
  /** The JSON value as stored (jsonb, parsed). */
  value: unknown;
  version: number;
}

/** This process's copy of the settings rows. */
export interface SettingsCopy {
  get(name: string): StoredSetting | undefined;
}

const copies = new WeakMap<Replica, SettingsCopy>();

/** The copy of the settings table `replica` keeps, registered with it on first use (before replica.start()). */
export function settingsCopy(replica: Replica): SettingsCopy {
  let copy = copies.get(replica);
  if (copy === undefined) {
    let rows = new Map<string, StoredSetting>();
    replica.table('settings', {
      load: async (tx) => {
        const read = await tx<{ name: string; value: unknown; updated_at: number }[]>`
          SELECT name, value, updated_at FROM settings`;
        return () => {
          rows = new Map(read.map((r) => [r.name, { value: r.value, version: r.updated_at }]));
        };
      },
    });
    copy = { get: (name) => rows.get(name) };
    copies.set(replica, copy);
  }
  return copy;
}

/** A row as it is now, inside a write (after its settings change number was taken: no other write is under way). */
export async function readSetting(tx: Tx, name: string): Promise<StoredSetting | undefined> {
  const [row] = await tx<{ value: unknown; updated_at: number }[]>`
    SELECT value, updated_at FROM settings WHERE name = ${name}`;
  return row === undefined ? undefined : { value: row.value, version: row.updated_at };
}

/** Write a row inside a write that took the settings change number `change`; returns its new version. */
export async function writeSetting(
  tx: Tx,
  name: string,
  value: unknown,
  context: { change: number; now: number },
): Promise<number> {
  const [row] = await tx<{ updated_at: number }[]>`
    INSERT INTO settings (name, value, updated_at, change)
    VALUES (${name}, ${tx.json(value as postgres.JSONValue)}, ${context.now}, ${context.change})
    ON CONFLICT (name) DO UPDATE SET value = excluded.value, change = excluded.change,
      updated_at = greatest(excluded.updated_at, settings.updated_at + 1)
    RETURNING updated_at`;
  if (row === undefined) throw new Error('INSERT ... RETURNING gave no row');
  return row.updated_at;
}

/**
 * A reader of row `name` of `copy` that parses it once a version (load() runs on every request): the parsed
 * value and the row's version, undefined when there is no row; what `parse` threw is thrown again each time.
 */
export function parsedSetting<T>(
  copy: SettingsCopy,
  name: string,
  parse: (value: unknown) => T,
): () => { value: T; version: number } | undefined {
  let last: { row: StoredSetting; parsed: { value: T } | { error: unknown } } | undefined;
  return () => {
    const row = copy.get(name);
    if (row === undefined) return undefined;
    if (last?.row !== row) {
      let parsed: { value: T } | { error: unknown };
      try {
        parsed = { value: parse(row.value) };
      } catch (error) {
        parsed = { error };
      }
      last = { row, parsed };
    }
    if ('error' in last.parsed) throw last.parsed.error;
    return { value: last.parsed.value, version: row.version };
  };
}
