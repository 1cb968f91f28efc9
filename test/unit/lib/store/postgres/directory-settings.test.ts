import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { usePgSite } from '../../../../harness/pg-site.ts';
import { rejection, thrown } from '../../../../support/thrown.ts';
import {
  BIND_PASSWORD,
  describeDirectorySettings,
  DIRECTORY_INPUT,
  found,
} from '../contract/directory-settings.ts';

describe('PgDirectorySettings (a real PostgreSQL 15)', { timeout: 30_000 }, () => {
  const { pg, open } = usePgSite();
  describeDirectorySettings(open);

  it('the settings are shared, the password is not: in the settings row, stamped, and nowhere in the store', async () => {
    const site = await open();
    const box = await site.box();
    await box.store.directory.apply(DIRECTORY_INPUT, BIND_PASSWORD, found(1).options);
    const rows = await site.sql<Record<string, unknown>[]>`SELECT * FROM settings`;
    expect(rows).toEqual([
      {
        name: 'directory',
        value: expect.objectContaining(DIRECTORY_INPUT),
        updated_at: site.clock.now(),
        change: 1,
      },
    ]);
    const everything = pg.server.psql(
      "SELECT string_agg(t::text, '|') FROM settings t",
      pg.url.split('/').at(-1),
    );
    expect(everything).toContain('ldap.example.test');
    expect(everything).not.toContain(BIND_PASSWORD);
  });

  it('box B has A’s settings by notification, but not A’s password: it says so until applied there with its own', async () => {
    const site = await open();
    const [a, b] = [await site.box(), await site.box()];
    await a.store.directory.apply(DIRECTORY_INPUT, BIND_PASSWORD, found(1).options);
    await vi.waitFor(() => expect(b.store.directory.version()).toBe(a.store.directory.version()), {
      timeout: 1000,
      interval: 5,
    });
    const error = thrown(() => b.store.directory.load());
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(error.message).toContain(b.passwordFile);
    expect(await b.store.directory.apply(DIRECTORY_INPUT, undefined, found(1).options)).toMatchObject({
      ok: false,
      problems: [{ field: 'password', message: 'is required' }],
    });
    expect(await b.store.directory.apply(DIRECTORY_INPUT, 'B0xB', found(1).options)).toMatchObject({
      ok: true,
    });
    expect(b.store.directory.load()?.password).toBe('B0xB');
    expect(a.store.directory.load()?.password).toBe(BIND_PASSWORD);
  });

  it('a commit that fails puts the previous password file back, and leaves no temporary file', async () => {
    const site = await open();
    const box = await site.box();
    await box.store.directory.apply(DIRECTORY_INPUT, BIND_PASSWORD, found(1).options);
    const version = box.store.directory.version();
    // A check at COMMIT: the row and the new file are written by then, the commit fails.
    pg.server.psql(
      `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$;
       CREATE CONSTRAINT TRIGGER refuse AFTER UPDATE ON settings DEFERRABLE INITIALLY DEFERRED
         FOR EACH ROW EXECUTE FUNCTION refuse();`,
      pg.url.split('/').at(-1),
    );
    const error = await rejection(
      box.store.directory.apply(
        { ...DIRECTORY_INPUT, host: 'other.example.test' },
        'N3wPassword',
        found(1).options,
      ),
    );
    expect(error).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: 'cannot save the directory settings: refused at commit',
    });
    expect(readFileSync(box.passwordFile, 'utf8')).toBe(BIND_PASSWORD);
    expect(readdirSync(dirname(box.passwordFile)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(box.store.directory.version()).toBe(version);
    expect(box.store.directory.load()?.settings.host).toBe('ldap.example.test');
  });

  it('PostgreSQL away: the settings in force still answer; apply is STORE_UNAVAILABLE and writes no file', async () => {
    const site = await open();
    const box = await site.box();
    await box.store.directory.apply(DIRECTORY_INPUT, BIND_PASSWORD, found(1).options);
    await pg.server.stop();
    try {
      expect(box.store.directory.load()?.password).toBe(BIND_PASSWORD);
      const error = await rejection(
        box.store.directory.apply(DIRECTORY_INPUT, 'N3wPassword', found(1).options),
      );
      expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(readFileSync(box.passwordFile, 'utf8')).toBe(BIND_PASSWORD);
      expect(readdirSync(dirname(box.passwordFile)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    } finally {
      await pg.server.start();
    }
    expect(existsSync(box.passwordFile)).toBe(true);
  });
});
