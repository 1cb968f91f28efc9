import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../../lib/config/schema.ts';
import { openStore } from '../../../../lib/store/open-store.ts';
import { rejection } from '../../../support/thrown.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const tmp = useTempDb('doorman-open-store-');

describe('openStore', () => {
  it('puts the store on the box’s own DB when the configuration says sqlite (the default)', async () => {
    const db = tmp.connect();
    const store = await openStore(configSchema.parse({ stateDir: tmp.dir }), db);
    expect(await store.status()).toMatchObject({ engine: 'sqlite', location: tmp.path, connected: true });
    await store.close();
    expect(db.open).toBe(false);
  });

  it('refuses PostgreSQL in this build, saying so', async () => {
    const config = configSchema.parse({
      stateDir: tmp.dir,
      store: { kind: 'postgres', url: 'postgres://doorman@db1/doorman' },
    });
    expect(await rejection(openStore(config, tmp.connect()))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: 'PostgreSQL store: not in this build yet',
    });
  });
});
