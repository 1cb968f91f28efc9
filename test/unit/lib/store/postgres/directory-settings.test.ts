import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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
    expect(JSON.parse(readFileSync(`${box.passwordFile}.target`, 'utf8'))).toMatchObject({
      host: 'ldap.example.test',
    });
    expect(readdirSync(dirname(box.passwordFile)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(box.store.directory.version()).toBe(version);
    expect(box.store.directory.load()?.settings.host).toBe('ldap.example.test');
  });

  describe('each box sends its bind password only where it was applied for on that box', () => {
    const REAL = DIRECTORY_INPUT;
    const elsewhere = (path: string) =>
      `directory settings are applied for another server or bind account than the bind password file ${path} was: apply them again on this box with the password`;
    const again = {
      ok: false,
      problems: [
        {
          field: 'password',
          message: 'is required again when the server, port, transport, CA or bind account changes',
        },
      ],
    };

    /** Boxes A and B, each with RealSecret applied for the real server. */
    async function twoBoxes() {
      const site = await open();
      const [a, b] = [await site.box(), await site.box()];
      await a.store.directory.apply(REAL, 'RealSecret', found(1).options);
      await b.sync();
      await b.store.directory.apply(REAL, 'RealSecret', found(1).options);
      await a.sync();
      return { site, a, b };
    }

    it('a server saved on A with A’s password: B refuses it rather than send B’s password there', async () => {
      const { a, b } = await twoBoxes();
      await a.store.directory.apply({ ...REAL, host: 'evil.example.net' }, 'whatever', found(1).options);
      await b.sync();
      expect(b.store.directory.version()).toBe(a.store.directory.version());
      expect(thrown(() => b.store.directory.load())).toMatchObject({
        code: 'STORE_UNAVAILABLE',
        message: elsewhere(b.passwordFile),
      });
      expect(a.store.directory.load()).toMatchObject({
        settings: { host: 'evil.example.net' },
        password: 'whatever',
      });
    });

    it('so for every change the password must be given again for, and for none other', async () => {
      const { a, b } = await twoBoxes();
      const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
      for (const change of [
        { kind: 'active-directory' },
        { host: 'evil.example.net' },
        { address: '192.0.2.66' },
        { port: 3389 },
        { transport: 'ldaps' },
        { caCertificate: pem },
        { bindDn: 'cn=other,dc=example,dc=test' },
      ]) {
        await a.store.directory.apply({ ...REAL, ...change }, 'whatever', found(1).options);
        await b.sync();
        expect(thrown(() => b.store.directory.load()).message).toBe(elsewhere(b.passwordFile));
      }
      await a.store.directory.apply({ ...REAL, groupCacheSeconds: 30 }, 'A-only', found(1).options);
      await b.sync();
      expect(b.store.directory.load()).toMatchObject({
        settings: { groupCacheSeconds: 30 },
        password: 'RealSecret',
      });
    });

    it('B saving A’s server without a password is judged by what B’s was applied for, not by the row', async () => {
      const { a, b } = await twoBoxes();
      await a.store.directory.apply({ ...REAL, host: 'evil.example.net' }, 'whatever', found(1).options);
      await b.sync();
      const t = found(1);
      expect(
        await b.store.directory.apply({ ...REAL, host: 'evil.example.net' }, undefined, t.options),
      ).toEqual(expect.objectContaining(again));
      expect(t.calls).toEqual([]);
      // The server B's password was applied for, kept: tested with it, and in force on B again (not on A).
      const back = found(1);
      expect(await b.store.directory.apply(REAL, undefined, back.options)).toMatchObject({ ok: true });
      expect(back.calls).toEqual([{ settings: expect.objectContaining(REAL), password: 'RealSecret' }]);
      expect(b.store.directory.load()?.password).toBe('RealSecret');
      await a.sync();
      expect(thrown(() => a.store.directory.load()).message).toBe(elsewhere(a.passwordFile));
    });

    it('a password file with no record, or one Doorman did not write, is for no server until applied', async () => {
      const { b } = await twoBoxes();
      const record = `${b.passwordFile}.target`;
      for (const make of [() => rmSync(record), () => writeFileSync(record, '{not json')]) {
        make();
        expect(thrown(() => b.store.directory.load()).message).toBe(elsewhere(b.passwordFile));
        expect(await b.store.directory.apply(REAL, undefined, found(1).options)).toEqual(
          expect.objectContaining(again),
        );
      }
      expect(await b.store.directory.apply(REAL, 'RealSecret', found(1).options)).toMatchObject({ ok: true });
      expect(b.store.directory.load()?.password).toBe('RealSecret');
    });

    it('a box given another’s password file and its record (docs/several-proxies.md) takes them', async () => {
      const { site, a } = await twoBoxes();
      const c = await site.box({ passwordFile: join(dirname(a.passwordFile), 'box-c-bind-password') });
      await c.sync();
      copyFileSync(a.passwordFile, c.passwordFile);
      copyFileSync(`${a.passwordFile}.target`, `${c.passwordFile}.target`);
      expect(c.store.directory.load()?.password).toBe('RealSecret');
    });
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
