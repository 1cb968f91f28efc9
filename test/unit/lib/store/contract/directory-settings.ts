import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SettingsTest } from '../../../../../lib/directory/directory.ts';
import { DirectoryError } from '../../../../../lib/directory/errors.ts';
import type { DirectorySettings } from '../../../../../lib/directory/settings.ts';
import type { ApplyOptions } from '../../../../../lib/store/directory-settings-store.ts';
import { thrown } from '../../../../support/thrown.ts';
import { useTempDir } from '../../../../support/temp-dir.ts';
import type { ContractStore, OpenSite } from './site.ts';

/**
 * The directory settings' contract (DirectorySettingsRepository), whichever engine: what
 * DirectorySettingsStore's own tests prove on SQLite, through the interface. The bind password is a file of
 * each box's own: boxes given the same file stand for one box's processes (the web app and authd).
 */

export const DIRECTORY_INPUT = {
  kind: 'open-directory',
  host: 'ldap.example.test',
  baseDn: 'dc=example,dc=test',
  bindDn: 'cn=squid,ou=services,dc=example,dc=test',
  transport: 'starttls',
};
export const BIND_PASSWORD = 'B1ndPassw0rd!';

/** A stand-in for testSettings: records what it was given, answers as told. */
export function tester(answer: SettingsTest) {
  const calls: Array<{ settings: DirectorySettings; password: string }> = [];
  const options: ApplyOptions = {
    test: async (settings, password) => {
      calls.push({ settings, password });
      return answer;
    },
  };
  return { calls, options };
}
export const found = (groupCount: number) => tester({ ok: true, groupCount });
const failing = (code: DirectoryError['code'], message: string) =>
  tester({ ok: false, error: new DirectoryError(code, message) });

export function describeDirectorySettings(openSite: OpenSite<Pick<ContractStore, 'directory'>>): void {
  const tmp = useTempDir('doorman-directory-contract-');
  const passwordFile = () => join(tmp.dir, 'directory-bind-password');
  const one = async () => {
    const site = await openSite();
    const box = await site.box({ passwordFile: passwordFile() });
    return { site, clock: site.clock, box, directory: box.store.directory };
  };
  const INPUT = DIRECTORY_INPUT;
  const PASSWORD = BIND_PASSWORD;

  describe('directory settings: apply', () => {
    it('tests the new values, then stores settings and password, and reports the group count', async () => {
      const { directory } = await one();
      const t = found(42);
      const result = await directory.apply(INPUT, PASSWORD, t.options);
      expect(result).toMatchObject({ ok: true, groupCount: 42, message: 'Found 42 user groups' });
      expect(t.calls).toEqual([{ settings: expect.objectContaining(INPUT), password: PASSWORD }]);
      const loaded = directory.load();
      expect(loaded?.settings).toEqual(expect.objectContaining({ ...INPUT, connectTimeoutMs: 5000 }));
      expect(loaded?.password).toBe(PASSWORD);
    });

    it('says "1 user group" for one', async () => {
      const { directory } = await one();
      expect((await directory.apply(INPUT, PASSWORD, found(1).options)).message).toBe('Found 1 user group');
    });

    it('keeps the password in its own file of mode 0600, with no temporary file left behind', async () => {
      const { directory } = await one();
      await directory.apply(INPUT, PASSWORD, found(3).options);
      expect(readFileSync(passwordFile(), 'utf8')).toBe(PASSWORD);
      expect(statSync(passwordFile()).mode & 0o777).toBe(0o600);
      expect(readdirSync(tmp.dir).sort()).toEqual([
        'directory-bind-password',
        'directory-bind-password.target',
      ]);
    });

    it('records beside the password what it was applied for (0600): the server, port, transport, CA and account', async () => {
      const { directory } = await one();
      const target = `${passwordFile()}.target`;
      await directory.apply(INPUT, PASSWORD, found(3).options);
      expect(JSON.parse(readFileSync(target, 'utf8'))).toEqual({
        kind: 'open-directory',
        host: 'ldap.example.test',
        transport: 'starttls',
        bindDn: 'cn=squid,ou=services,dc=example,dc=test',
      });
      expect(statSync(target).mode & 0o777).toBe(0o600);
      const other = { ...INPUT, host: 'other.example.test', port: 3389 };
      await directory.apply({ ...other, groupCacheSeconds: 30 }, 'N3wPassword', found(3).options);
      expect(JSON.parse(readFileSync(target, 'utf8'))).toEqual({
        kind: 'open-directory',
        host: 'other.example.test',
        port: 3389,
        transport: 'starttls',
        bindDn: 'cn=squid,ou=services,dc=example,dc=test',
      });
      expect(directory.load()).toMatchObject({ password: 'N3wPassword', settings: other });
    });

    it('lists every problem with its field and tests nothing when a field is wrong', async () => {
      const { directory } = await one();
      const t = found(1);
      const result = await directory.apply(
        { ...INPUT, host: 'bad host', port: 0, extra: true },
        '',
        t.options,
      );
      expect(result.ok).toBe(false);
      if (result.ok || !('problems' in result)) throw new Error('expected problems');
      expect(result.problems.map((p) => p.field).sort()).toEqual(['extra', 'host', 'password', 'port']);
      expect(result.problems.find((p) => p.field === 'password')?.message).toBe(
        'must not be empty (an empty password binds anonymously)',
      );
      expect(result.message.split('\n')).toHaveLength(4);
      expect(t.calls).toEqual([]);
      expect(directory.load()).toBeUndefined();
    });

    it('refuses a password with a line break or NUL, or longer than 1024 characters', async () => {
      const { directory } = await one();
      for (const bad of ['a\nb', 'a\rb', 'a\x00b', 'x'.repeat(1025)]) {
        const result = await directory.apply(INPUT, bad, found(1).options);
        expect(result.ok).toBe(false);
        expect(result.message).toMatch(/^password: /);
      }
    });

    it('needs a password the first time', async () => {
      const { directory } = await one();
      const result = await directory.apply(INPUT, undefined, found(1).options);
      expect(result).toMatchObject({ ok: false, problems: [{ field: 'password', message: 'is required' }] });
    });

    it('a failed test changes nothing: the previous settings and password stay in force', async () => {
      const { directory } = await one();
      await directory.apply(INPUT, PASSWORD, found(5).options);
      const before = directory.load();
      const versionBefore = directory.version();
      for (const [code, message] of [
        ['UNREACHABLE', 'cannot reach nope.example.test:389: unknown host name'],
        ['INVALID_CREDENTIALS', 'ldap.example.test:389 refused the bind as "cn=squid…": invalid credentials'],
        ['NO_SUCH_BASE', 'the search base "dc=nope,dc=test" does not exist on ldap.example.test:389'],
      ] as const) {
        const result = await directory.apply(
          { ...INPUT, host: 'nope.example.test' },
          'new-password',
          failing(code, message).options,
        );
        expect(result).toMatchObject({ ok: false, message, error: { code } });
        expect(directory.load()).toEqual(before);
        expect(directory.version()).toBe(versionBefore);
        expect(readFileSync(passwordFile(), 'utf8')).toBe(PASSWORD);
      }
    });

    it('without a password keeps the stored one, and tests with it', async () => {
      const { directory } = await one();
      await directory.apply(INPUT, PASSWORD, found(5).options);
      const t = found(7);
      const result = await directory.apply({ ...INPUT, groupCacheSeconds: 120 }, undefined, t.options);
      expect(result.ok).toBe(true);
      expect(t.calls[0]?.password).toBe(PASSWORD);
      expect(directory.load()).toMatchObject({ password: PASSWORD, settings: { groupCacheSeconds: 120 } });
    });

    it('without a password, refuses to send the stored one to another server or as another account', async () => {
      const { directory } = await one();
      await directory.apply(INPUT, PASSWORD, found(5).options);
      for (const change of [{ host: 'evil.example.test' }, { bindDn: 'cn=other,dc=example,dc=test' }]) {
        const t = found(1);
        const result = await directory.apply({ ...INPUT, ...change }, undefined, t.options);
        expect(result).toMatchObject({
          ok: false,
          problems: [
            {
              field: 'password',
              message: 'is required again when the server, port, transport, CA or bind account changes',
            },
          ],
        });
        expect(t.calls).toEqual([]);
      }
    });

    it('a new password replaces the old one', async () => {
      const { directory } = await one();
      await directory.apply(INPUT, PASSWORD, found(5).options);
      await directory.apply(INPUT, 'N3wPassword', found(5).options);
      expect(directory.load()?.password).toBe('N3wPassword');
      expect(statSync(passwordFile()).mode & 0o777).toBe(0o600);
    });
  });

  describe('directory settings: version', () => {
    it('is 0 before anything is applied and goes up with every apply, even within one millisecond', async () => {
      const { clock, directory } = await one();
      expect(directory.version()).toBe(0);
      await directory.apply(INPUT, PASSWORD, found(1).options);
      const first = directory.version();
      expect(first).toBeGreaterThan(0);
      await directory.apply(INPUT, PASSWORD, found(1).options);
      expect(directory.version()).toBeGreaterThan(first);
      clock.advance(60_000);
      await directory.apply(INPUT, PASSWORD, found(1).options);
      expect(directory.version()).toBe(clock.now());
    });

    it('another box with the same password file sees the change once it has caught up', async () => {
      const { site, directory } = await one();
      const reader = await site.box({ passwordFile: passwordFile() });
      await directory.apply(INPUT, PASSWORD, found(1).options);
      await reader.sync();
      expect(reader.store.directory.version()).toBe(directory.version());
      expect(reader.store.directory.load()?.settings.host).toBe('ldap.example.test');
      expect(reader.store.directory.load()?.password).toBe(PASSWORD);
    });
  });

  describe('directory settings: load', () => {
    it('is undefined before anything is applied', async () => {
      const { directory } = await one();
      expect(directory.load()).toBeUndefined();
    });

    it('drops one trailing line break from a hand-edited password file', async () => {
      const { directory } = await one();
      await directory.apply(INPUT, PASSWORD, found(1).options);
      writeFileSync(passwordFile(), `${PASSWORD}\n`);
      expect(directory.load()?.password).toBe(PASSWORD);
    });

    it('says so when the password file is missing', async () => {
      const { directory } = await one();
      await directory.apply(INPUT, PASSWORD, found(1).options);
      rmSync(passwordFile());
      const error = thrown(() => directory.load());
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toMatch(/bind password file .* is missing/);
    });
  });
}
