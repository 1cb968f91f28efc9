import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { ApiKeyStore, LAST_USED_RETRY_MS } from '../../../../lib/store/api-key-store.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { partsOf } from './contract/api-keys.ts';

/**
 * What ApiKeyStore keeps on disk and does with "last used" while another process holds the write lock. What
 * every store does with API keys is the contract (contract/api-keys.ts), run on SQLite by
 * sqlite-contract.test.ts beside this file.
 */

const T0 = Date.UTC(2026, 0, 1);
const tmp = useTempDb('doorman-keys-');
let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock(T0);
});

describe('what is on disk', () => {
  it('stores only the SHA-256 of the secret: the raw row holds no trace of it', () => {
    const db = tmp.connect();
    const store = new ApiKeyStore(db, clock);
    const { key } = store.create('portal');
    const { keyId, secret } = partsOf(key);

    const row = db.prepare('SELECT * FROM api_keys').get() as Record<string, unknown>;
    expect(Object.keys(row).sort()).toEqual([
      'created_at',
      'id',
      'key_id',
      'last_used_at',
      'name',
      'revoked_at',
      'secret_hash',
    ]);
    expect(row['key_id']).toBe(keyId);
    expect(row['secret_hash']).toEqual(createHash('sha256').update(secret).digest());

    const secretBytes = Buffer.from(secret, 'base64url');
    for (const [column, value] of Object.entries(row)) {
      const asBytes = Buffer.isBuffer(value) ? value : Buffer.from(String(value));
      for (const spelling of ['utf8', 'hex', 'base64', 'base64url'] as const) {
        expect(asBytes.toString(spelling), `${column} as ${spelling}`).not.toContain(secret);
      }
      expect(asBytes.includes(secretBytes), `${column} raw bytes`).toBe(false);
    }
  });

  it('the secret is nowhere in the DB files on disk', () => {
    const db = tmp.connect();
    const { key } = new ApiKeyStore(db, clock).create('portal');
    const { secret } = partsOf(key);
    const files = [tmp.path, `${tmp.path}-wal`].filter((f) => existsSync(f));
    expect(files).toContain(tmp.path);
    for (const file of files) {
      const bytes = readFileSync(file);
      expect(bytes.includes(secret), file).toBe(false);
      expect(bytes.includes(Buffer.from(secret, 'base64url')), file).toBe(false);
    }
  });
});

describe('"last used" while another connection holds the write lock', () => {
  it('accepts the key at once and writes "last used" at a later chance, after the lock is released', async () => {
    const timers = new ManualTimers(clock);
    const logs: string[] = [];
    const store = new ApiKeyStore(tmp.connect({ busyTimeoutMs: 0 }), clock, {
      schedule: timers.schedule,
      log: (line) => logs.push(line),
    });
    const { key } = store.create('portal');
    const holder = tmp.connect();
    holder.exec('BEGIN IMMEDIATE');
    clock.advance(5000);
    expect(store.verify(key)).toBe(true);
    expect(store.list()[0]?.lastUsedAt).toBeUndefined();
    // still locked when the retry comes: it waits again, and a second use does not add a second timer
    await timers.fireNext();
    expect(store.verify(key)).toBe(true);
    expect(timers.pending).toBe(1);
    expect(store.list()[0]?.lastUsedAt).toBeUndefined();

    holder.exec('ROLLBACK');
    await timers.fireNext();
    // the latest use is the one recorded
    expect(store.list()[0]?.lastUsedAt).toBe(T0 + 5000 + LAST_USED_RETRY_MS);
    expect(timers.pending).toBe(0);
    expect(logs).toEqual([]);
  });

  it('another failure is logged, the time dropped, and the key still accepted', () => {
    const logs: string[] = [];
    const db = tmp.connect({ busyTimeoutMs: 0 });
    const store = new ApiKeyStore(db, clock, { log: (line) => logs.push(line) });
    const { key } = store.create('portal');
    db.exec(
      `CREATE TRIGGER no_updates BEFORE UPDATE ON api_keys BEGIN SELECT RAISE(ABORT, 'read-only table'); END`,
    );
    expect(store.verify(key)).toBe(true);
    expect(logs).toEqual(['api keys: cannot record when a key was last used: read-only table']);
    expect(store.list()[0]?.lastUsedAt).toBeUndefined();
  });
});
