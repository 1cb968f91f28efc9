import type { Db } from './database.ts';

/**
 * One named row of the `settings` table (schema 2): a JSON value and `updated_at`, which only ever goes up, by
 * at least 1 ms per write, so it serves as the row's version number (the helpers and the ICAP service compare
 * it to see a change made by another process).
 */
export class SettingsRow {
  readonly #name: string;
  readonly #get;
  readonly #version;
  readonly #put;

  constructor(db: Db, name: string) {
    this.#name = name;
    this.#get = db.prepare<[string], { value: string; updated_at: number }>(
      'SELECT value, updated_at FROM settings WHERE name = ?',
    );
    this.#version = db.prepare<[string], number>('SELECT updated_at FROM settings WHERE name = ?').pluck();
    this.#put = db
      .prepare<[{ name: string; value: string; now: number }], number>(
        `INSERT INTO settings (name, value, updated_at) VALUES (@name, @value, @now)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value,
           updated_at = max(excluded.updated_at, settings.updated_at + 1)
         RETURNING updated_at`,
      )
      .pluck();
  }

  /** The stored JSON text and its version, if there is a row. */
  read(): { value: string; version: number } | undefined {
    const row = this.#get.get(this.#name);
    return row === undefined ? undefined : { value: row.value, version: row.updated_at };
  }

  /** The version (0 when there is no row). */
  version(): number {
    return this.#version.get(this.#name) ?? 0;
  }

  /** Write `value` (JSON text) as of `now`; returns the new version. Call inside the caller's transaction. */
  write(value: string, now: number): number {
    return this.#put.get({ name: this.#name, value, now }) as number;
  }
}
