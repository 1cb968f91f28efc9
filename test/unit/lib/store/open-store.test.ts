import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../../lib/config/schema.ts';
import { openStore } from '../../../../lib/store/open-store.ts';
import { thrown } from '../../../support/thrown.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const tmp = useTempDb('doorman-open-store-');

describe('openStore', () => {
  it('puts the store on the box’s own DB when the configuration says sqlite (the default)', async () => {
    const db = tmp.connect();
    const store = openStore(configSchema.parse({ stateDir: tmp.dir }), db);
    expect(await store.status()).toMatchObject({ engine: 'sqlite', location: tmp.path, connected: true });
    await store.close();
    expect(db.open).toBe(false);
  });

  it('refuses PostgreSQL in this build, saying so', () => {
    const config = configSchema.parse({
      stateDir: tmp.dir,
      store: { kind: 'postgres', url: 'postgres://doorman@db1/doorman' },
    });
    const error = thrown(() => openStore(config, tmp.connect()));
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toBe('PostgreSQL store: not in this build yet');
  });
});
