import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { InvalidInputError } from '../../../../lib/errors.ts';
import { ApiKeyStore, LAST_USED_RETRY_MS } from '../../../../lib/store/api-key-store.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { thrown } from '../../../support/thrown.ts';

const T0 = Date.UTC(2026, 0, 1);
const KEY_FORMAT = /^dm\.([A-Za-z0-9_-]{12})\.([A-Za-z0-9_-]{43})$/;

/** The three parts of a key create() returned; fails the test if it does not have the documented shape. */
function partsOf(key: string): { keyId: string; secret: string } {
  const m = KEY_FORMAT.exec(key);
  if (m === null) throw new Error(`not an API key: ${key}`);
  return { keyId: m[1] as string, secret: m[2] as string };
}

const tmp = useTempDb('doorman-keys-');
let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock(T0);
});

describe('create', () => {
  it('returns the key once, with its public info', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const { key, info } = store.create('squid-proxy');
    const { keyId } = partsOf(key);
    expect(info).toEqual({
      name: 'squid-proxy',
      keyId,
      createdAt: T0,
      lastUsedAt: undefined,
      revokedAt: undefined,
    });
  });

  it('nothing returned afterwards carries the key or its secret', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const { key } = store.create('squid-proxy');
    const { secret } = partsOf(key);
    const later = JSON.stringify([store.list(), store.revoke('squid-proxy')]);
    expect(later).not.toContain(secret);
    expect(later).toContain(partsOf(key).keyId);
  });

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

  it('gives every key a different id and secret', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const keys = ['a', 'b', 'c', 'd'].map((name) => partsOf(store.create(name).key));
    expect(new Set(keys.map((k) => k.keyId)).size).toBe(4);
    expect(new Set(keys.map((k) => k.secret)).size).toBe(4);
  });

  it.each(['a', '7', 'Squid proxy 1', 'svc.portal_2@example-org', 'x'.repeat(64)])(
    'accepts the name %j',
    (name) => {
      const store = new ApiKeyStore(tmp.connect(), clock);
      expect(store.create(name).info.name).toBe(name);
    },
  );

  it.each([
    ['empty', ''],
    ['65 characters', 'x'.repeat(65)],
    ['leading space', ' proxy'],
    ['leading dot', '.proxy'],
    ['leading dash (looks like an option)', '-proxy'],
    ['slash', 'proxy/1'],
    ['colon', 'proxy:1'],
    ['quote', 'proxy"1'],
    ['newline', 'proxy\n'],
    ['tab', 'proxy\t1'],
    ['non-ASCII letter', 'prøxy'],
  ])('rejects the name: %s (INVALID_INPUT naming the field)', (_what, name) => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const error = thrown(() => store.create(name));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({
      code: 'INVALID_INPUT',
      field: 'name',
      message: `name: ${JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)} is not allowed: 1-64 characters, letters, digits, space, ". _ @ -", starting with a letter or digit`,
    });
    expect(store.list()).toEqual([]);
  });

  it('a duplicate name is CONFLICT, and the first key still works', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const { key } = store.create('portal');
    expect(thrown(() => store.create('portal'))).toMatchObject({
      code: 'CONFLICT',
      message: 'name: an API key named "portal" exists already',
    });
    expect(store.list()).toHaveLength(1);
    expect(store.verify(key)).toBe(true);
  });

  it('a revoked name stays taken (CONFLICT)', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    store.create('portal');
    store.revoke('portal');
    expect(thrown(() => store.create('portal'))).toMatchObject({
      code: 'CONFLICT',
      message: 'name: an API key named "portal" exists already',
    });
  });

  it('names are case-sensitive', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    store.create('portal');
    expect(store.create('Portal').info.name).toBe('Portal');
  });
});

describe('verify', () => {
  it('accepts the key create() returned and records when it was used', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const { key } = store.create('portal');
    clock.advance(5000);
    expect(store.verify(key)).toBe(true);
    expect(store.list()[0]).toMatchObject({ name: 'portal', createdAt: T0, lastUsedAt: T0 + 5000 });
    // to the minute: uses within a minute of the recorded one write nothing
    clock.advance(59_999);
    expect(store.verify(key)).toBe(true);
    expect(store.list()[0]?.lastUsedAt).toBe(T0 + 5000);
    clock.advance(1);
    expect(store.verify(key)).toBe(true);
    expect(store.list()[0]?.lastUsedAt).toBe(T0 + 65_000);
  });

  it('refuses a wrong secret for a known key id, without touching lastUsedAt', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const { key } = store.create('portal');
    const { keyId, secret } = partsOf(key);
    const wrong = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    clock.advance(1000);
    expect(store.verify(`dm.${keyId}.${wrong}`)).toBe(false);
    expect(store.list()[0]?.lastUsedAt).toBeUndefined();
  });

  it("refuses one key's secret under another key's id", () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const a = partsOf(store.create('a').key);
    const b = partsOf(store.create('b').key);
    expect(store.verify(`dm.${a.keyId}.${b.secret}`)).toBe(false);
    expect(store.verify(`dm.${b.keyId}.${a.secret}`)).toBe(false);
    expect(store.list().map((k) => k.lastUsedAt)).toEqual([undefined, undefined]);
  });

  it('refuses an unknown key id', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const { key } = store.create('portal');
    const { keyId, secret } = partsOf(key);
    const otherId = `${keyId.slice(0, -1)}${keyId.endsWith('A') ? 'B' : 'A'}`;
    expect(store.verify(`dm.${otherId}.${secret}`)).toBe(false);
    expect(store.list()[0]?.lastUsedAt).toBeUndefined();
  });

  it('refuses when there are no keys at all', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    expect(store.verify(`dm.${'A'.repeat(12)}.${'b'.repeat(43)}`)).toBe(false);
  });

  it.each([
    ['empty', () => ''],
    ['the secret alone', (key: string) => partsOf(key).secret],
    ['with a trailing newline', (key: string) => `${key}\n`],
    ['with "Bearer "', (key: string) => `Bearer ${key}`],
    ['upper-cased prefix', (key: string) => `DM${key.slice(2)}`],
    ['truncated', (key: string) => key.slice(0, -1)],
    ['extended', (key: string) => `${key}A`],
  ])('refuses a malformed key: %s', (_what, mangle) => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const { key } = store.create('portal');
    expect(store.verify(mangle(key))).toBe(false);
    expect(store.list()[0]?.lastUsedAt).toBeUndefined();
  });

  it('accepts a key created through another handle on the same file', () => {
    const { key } = new ApiKeyStore(tmp.connect(), clock).create('portal');
    expect(new ApiKeyStore(tmp.connect(), clock).verify(key)).toBe(true);
  });
});

describe('revoke', () => {
  it('takes effect at once, in this handle and in another', () => {
    const admin = new ApiKeyStore(tmp.connect(), clock);
    const api = new ApiKeyStore(tmp.connect(), clock);
    const { key } = admin.create('portal');
    expect(api.verify(key)).toBe(true);
    clock.advance(1000);

    expect(admin.revoke('portal')).toMatchObject({ name: 'portal', revokedAt: T0 + 1000, lastUsedAt: T0 });
    expect(admin.verify(key)).toBe(false);
    expect(api.verify(key)).toBe(false);
  });

  it('a refused revoked key does not update lastUsedAt', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const { key } = store.create('portal');
    store.revoke('portal');
    clock.advance(1000);
    expect(store.verify(key)).toBe(false);
    expect(store.list()[0]).toMatchObject({ lastUsedAt: undefined, revokedAt: T0 });
  });

  it('revokes only the named key', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    const a = store.create('a').key;
    const b = store.create('b').key;
    store.revoke('a');
    expect(store.verify(a)).toBe(false);
    expect(store.verify(b)).toBe(true);
  });

  it('revoking twice keeps the first revocation time', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    store.create('portal');
    store.revoke('portal');
    clock.advance(60_000);
    expect(store.revoke('portal').revokedAt).toBe(T0);
  });

  it('an unknown name is NOT_FOUND', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    store.create('portal');
    expect(thrown(() => store.revoke('Portal'))).toMatchObject({
      code: 'NOT_FOUND',
      message: 'name: no API key named "Portal"',
    });
    expect(store.list()[0]?.revokedAt).toBeUndefined();
  });
});

describe('list', () => {
  it('lists keys by creation time, then name, revoked ones included', () => {
    const store = new ApiKeyStore(tmp.connect(), clock);
    store.create('zeta');
    store.create('alpha');
    clock.advance(1);
    store.create('beta');
    store.revoke('alpha');
    expect(store.list().map((k) => [k.name, k.createdAt, k.revokedAt])).toEqual([
      ['alpha', T0, T0 + 1],
      ['zeta', T0, undefined],
      ['beta', T0 + 1, undefined],
    ]);
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
