import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { LAST_USED_RETRY_MS } from '../../../../../lib/store/api-key-rules.ts';
import { hashSecret } from '../../../../../lib/security/api-key.ts';
import { usePgSite } from '../../../../harness/pg-site.ts';
import { ManualTimers } from '../../../../support/manual-timers.ts';
import { rejection } from '../../../../support/thrown.ts';
import { describeApiKeys, partsOf } from '../contract/api-keys.ts';

const T0 = Date.UTC(2026, 0, 1);

describe('PgApiKeys (a real PostgreSQL 15)', { timeout: 30_000 }, () => {
  const { pg, open } = usePgSite();
  describeApiKeys(open);

  const counter = async (sql: Awaited<ReturnType<typeof open>>['sql']) =>
    (await sql<{ last: number }[]>`SELECT last FROM changes WHERE tab = 'api_keys'`)[0]?.last;

  it('a key created on box A answers on A at once (read-your-writes) and on B by notification alone', async () => {
    const site = await open({ now: T0 });
    const a = await site.box();
    const b = await site.box(); // polls once a minute: only the notification can bring the key
    const { key } = await a.store.apiKeys.create('portal');
    expect(a.store.apiKeys.verify(key)).toBe(true);
    await vi.waitFor(() => expect(b.store.apiKeys.verify(key)).toBe(true), { timeout: 1000, interval: 5 });
    await a.store.apiKeys.revoke('portal');
    expect(a.store.apiKeys.verify(key)).toBe(false);
    await vi.waitFor(() => expect(b.store.apiKeys.verify(key)).toBe(false), { timeout: 1000, interval: 5 });
  });

  it('stores only the SHA-256 of the secret, each row stamped with its change number', async () => {
    const site = await open({ now: T0 });
    const box = await site.box();
    const { key } = await box.store.apiKeys.create('portal');
    const { keyId, secret } = partsOf(key);
    const [row] = await site.sql<Record<string, unknown>[]>`SELECT * FROM api_keys`;
    expect(Object.keys(row ?? {}).sort()).toEqual([
      'change',
      'created_at',
      'id',
      'key_id',
      'last_used_at',
      'name',
      'revoked_at',
      'secret_hash',
    ]);
    expect(row).toMatchObject({ key_id: keyId, secret_hash: hashSecret(secret), change: 1 });
    for (const [column, value] of Object.entries(row ?? {})) {
      const bytes = Buffer.isBuffer(value) ? value : Buffer.from(String(value));
      for (const spelling of ['utf8', 'hex', 'base64', 'base64url'] as const)
        expect(bytes.toString(spelling), `${column} as ${spelling}`).not.toContain(secret);
      expect(bytes.includes(Buffer.from(secret, 'base64url')), `${column} raw bytes`).toBe(false);
    }
  });

  it('the secret is nowhere in the cluster’s files (tables, WAL) after a checkpoint', async () => {
    const site = await open({ now: T0 });
    const { key } = await (await site.box()).store.apiKeys.create('portal');
    const { secret } = partsOf(key);
    pg.server.psql('CHECKPOINT');
    const dataDir = pg.server.psql('SHOW data_directory').trim();
    const files = walk(dataDir);
    expect(files.length).toBeGreaterThan(100);
    const raw = Buffer.from(secret, 'base64url');
    for (const file of files) {
      const bytes = readFileSync(file);
      expect(bytes.includes(secret), file).toBe(false);
      expect(bytes.includes(raw), file).toBe(false);
    }
  });

  it('two boxes creating one name at once: the UNIQUE constraint decides, one key made, the other CONFLICT', async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box(), await site.box()];
    const outcomes = await Promise.all([
      rejection(a.store.apiKeys.create('portal')),
      rejection(b.store.apiKeys.create('portal')),
    ]);
    expect(outcomes.filter((o) => o === undefined)).toHaveLength(1);
    expect(outcomes.find((o) => o !== undefined)).toMatchObject({ code: 'CONFLICT' });
    expect((await site.sql`SELECT name FROM api_keys`).map((r) => r.name)).toEqual(['portal']);
  });

  it('"last used" recorded on box B is seen on A; a use within the minute writes nothing', async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box(), await site.box()];
    const { key } = await a.store.apiKeys.create('portal');
    await b.sync();
    site.clock.advance(5000);
    expect(b.store.apiKeys.verify(key)).toBe(true);
    await vi.waitFor(() => expect(b.store.apiKeys.list()[0]?.lastUsedAt).toBe(T0 + 5000));
    const written = await counter(site.sql);
    await a.sync();
    expect(a.store.apiKeys.list()[0]?.lastUsedAt).toBe(T0 + 5000);
    site.clock.advance(30_000);
    expect(a.store.apiKeys.verify(key)).toBe(true);
    expect(b.store.apiKeys.verify(key)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await counter(site.sql)).toBe(written);
  });

  it('a "last used" write that fails is logged, the time dropped, and the key still accepted', async () => {
    const site = await open({ now: T0 });
    const box = await site.box();
    const { key } = await box.store.apiKeys.create('portal');
    pg.server.psql(
      `CREATE FUNCTION no_updates() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'read-only table'; END $$;
       CREATE TRIGGER no_updates BEFORE UPDATE ON api_keys FOR EACH ROW EXECUTE FUNCTION no_updates();`,
      pg.url.split('/').at(-1),
    );
    expect(box.store.apiKeys.verify(key)).toBe(true);
    await vi.waitFor(() =>
      expect(box.logs).toEqual(['api keys: cannot record when a key was last used: read-only table']),
    );
    expect(box.store.apiKeys.list()[0]?.lastUsedAt).toBeUndefined();
  });

  it('PostgreSQL away: keys are still checked from memory, "last used" waits for its return; create and revoke are STORE_UNAVAILABLE', async () => {
    const site = await open({ now: T0 });
    const timers = new ManualTimers(site.clock);
    const box = await site.box({ schedule: timers.schedule });
    const { key } = await box.store.apiKeys.create('portal');
    await pg.server.stop();
    try {
      site.clock.advance(5000);
      expect(box.store.apiKeys.verify(key)).toBe(true);
      await timers.untilWaiting();
      expect(await rejection(box.store.apiKeys.create('other'))).toMatchObject({
        code: 'STORE_UNAVAILABLE',
        message: expect.stringMatching(/^PostgreSQL store: /),
      });
      expect(await rejection(box.store.apiKeys.revoke('portal'))).toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
      expect(box.store.apiKeys.verify(key)).toBe(true);
      expect(timers.pending).toBe(1);
    } finally {
      await pg.server.start();
    }
    await timers.fireNext();
    await vi.waitFor(() => expect(box.store.apiKeys.list()[0]?.lastUsedAt).toBe(T0 + 5000));
    expect(site.clock.now()).toBe(T0 + 5000 + LAST_USED_RETRY_MS);
    expect(box.logs.filter((line) => line.startsWith('api keys'))).toEqual([]);
  });
});

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat === undefined) return [];
    return stat.isDirectory() ? walk(path) : stat.isFile() ? [path] : [];
  });
}
