import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../../lib/config/schema.ts';
import { openStore } from '../../../../lib/store/open-store.ts';
import { POSTGRES_SCHEMA_VERSION } from '../../../../lib/store/postgres/schema.ts';
import { usePostgres } from '../../../harness/postgres.ts';
import { rejection } from '../../../support/thrown.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const tmp = useTempDb('doorman-open-store-');
const pg = usePostgres();

describe('openStore', { timeout: 30_000 }, () => {
  it('puts the store on the box’s own DB when the configuration says sqlite (the default)', async () => {
    const db = tmp.connect();
    const store = await openStore(configSchema.parse({ stateDir: tmp.dir }), db);
    expect(await store.status()).toMatchObject({ engine: 'sqlite', location: tmp.path, connected: true });
    await store.close();
    expect(db.open).toBe(false);
  });

  it('opens a PostgreSQL store when the configuration says so: migrated, loaded, its status says where', async () => {
    const config = configSchema.parse({
      stateDir: tmp.dir,
      store: { kind: 'postgres', url: pg.url, passwordFile: pg.passwordFile },
    });
    const store = await openStore(config, tmp.connect(), { applicationName: 'test', log: () => undefined });
    try {
      expect(store.engine).toBe('postgres');
      expect(await store.status()).toMatchObject({
        engine: 'postgres',
        location: pg.url,
        schemaVersion: POSTGRES_SCHEMA_VERSION,
        connected: true,
        replicationLagMs: 0,
      });
      await store.sessions.start({
        key: { kind: 'ip', value: '10.0.0.5' },
        username: 'alice',
        source: 'api',
      });
      expect(store.sessions.find({ kind: 'ip', value: '10.0.0.5' })?.username).toBe('alice');
    } finally {
      await store.close();
    }
  });

  it('rejects with STORE_UNAVAILABLE while PostgreSQL cannot be reached (serve answers 503 and tries again)', async () => {
    await pg.server.stop();
    try {
      const config = configSchema.parse({
        stateDir: tmp.dir,
        store: { kind: 'postgres', url: pg.url, passwordFile: pg.passwordFile },
      });
      expect(await rejection(openStore(config, tmp.connect(), { log: () => undefined }))).toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
    } finally {
      await pg.server.start();
    }
  });
});
