import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import type { SettingsTest } from '../../../../lib/directory/directory.ts';
import { DirectoryError } from '../../../../lib/directory/errors.ts';
import type { DirectorySettings } from '../../../../lib/directory/settings.ts';
import {
  DIRECTORY_PASSWORD_FILE,
  DirectorySettingsStore,
  type ApplyOptions,
} from '../../../../lib/store/directory-settings-store.ts';
import { StoreBusyError } from '../../../../lib/store/busy.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { rejection, thrown } from '../../../support/thrown.ts';

const tmp = useTempDb('doorman-directory-settings-');
let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock();
});

const INPUT = {
  kind: 'open-directory',
  host: 'ldap.example.test',
  baseDn: 'dc=example,dc=test',
  bindDn: 'cn=squid,ou=services,dc=example,dc=test',
  transport: 'starttls',
};
const PASSWORD = 'B1ndPassw0rd!';

const passwordFile = () => join(tmp.dir, DIRECTORY_PASSWORD_FILE);
const store = () => new DirectorySettingsStore(tmp.connect(), { passwordFile: passwordFile(), clock });

/** A stand-in for testSettings: records what it was given, answers as told. */
function tester(answer: SettingsTest) {
  const calls: Array<{ settings: DirectorySettings; password: string }> = [];
  const options: ApplyOptions = {
    test: async (settings, password) => {
      calls.push({ settings, password });
      return answer;
    },
  };
  return { calls, options };
}
const found = (groupCount: number) => tester({ ok: true, groupCount });
const failing = (code: DirectoryError['code'], message: string) =>
  tester({ ok: false, error: new DirectoryError(code, message) });

describe('apply', () => {
  it('tests the new values, then stores settings and password, and reports the group count', async () => {
    const s = store();
    const t = found(42);
    const result = await s.apply(INPUT, PASSWORD, t.options);
    expect(result).toMatchObject({ ok: true, groupCount: 42, message: 'Found 42 user groups' });
    expect(t.calls).toEqual([{ settings: expect.objectContaining(INPUT), password: PASSWORD }]);
    const loaded = s.load();
    expect(loaded?.settings).toEqual(expect.objectContaining({ ...INPUT, connectTimeoutMs: 5000 }));
    expect(loaded?.password).toBe(PASSWORD);
  });

  it('says "1 user group" for one', async () => {
    expect((await store().apply(INPUT, PASSWORD, found(1).options)).message).toBe('Found 1 user group');
  });

  it('keeps the password in its own file of mode 0600, and never in the DB', async () => {
    const s = store();
    await s.apply(INPUT, PASSWORD, found(3).options);
    expect(readFileSync(passwordFile(), 'utf8')).toBe(PASSWORD);
    expect(statSync(passwordFile()).mode & 0o777).toBe(0o600);
    const db = tmp.connect();
    const rows = JSON.stringify(db.prepare('SELECT * FROM settings').all());
    expect(rows).not.toContain(PASSWORD);
    // No temporary file left behind.
    expect(readdirSync(tmp.dir).filter((f) => f.includes(DIRECTORY_PASSWORD_FILE))).toEqual([
      DIRECTORY_PASSWORD_FILE,
    ]);
  });

  it('lists every problem with its field and tests nothing when a field is wrong', async () => {
    const s = store();
    const t = found(1);
    const result = await s.apply({ ...INPUT, host: 'bad host', port: 0, extra: true }, '', t.options);
    expect(result.ok).toBe(false);
    if (result.ok || !('problems' in result)) throw new Error('expected problems');
    expect(result.problems.map((p) => p.field).sort()).toEqual(['extra', 'host', 'password', 'port']);
    expect(result.problems.find((p) => p.field === 'password')?.message).toBe(
      'must not be empty (an empty password binds anonymously)',
    );
    expect(result.message.split('\n')).toHaveLength(4);
    expect(t.calls).toEqual([]);
    expect(s.load()).toBeUndefined();
  });

  it('refuses a password with a line break or NUL, or longer than 1024 characters', async () => {
    for (const bad of ['a\nb', 'a\rb', 'a\x00b', 'x'.repeat(1025)]) {
      const result = await store().apply(INPUT, bad, found(1).options);
      expect(result.ok).toBe(false);
      expect(result.message).toMatch(/^password: /);
    }
  });

  it('needs a password the first time', async () => {
    const result = await store().apply(INPUT, undefined, found(1).options);
    expect(result).toMatchObject({ ok: false, problems: [{ field: 'password', message: 'is required' }] });
  });

  it('a failed test changes nothing: the previous settings and password stay in force', async () => {
    const s = store();
    await s.apply(INPUT, PASSWORD, found(5).options);
    const before = s.load();
    const versionBefore = s.version();
    for (const [code, message] of [
      ['UNREACHABLE', 'cannot reach nope.example.test:389: unknown host name'],
      ['INVALID_CREDENTIALS', 'ldap.example.test:389 refused the bind as "cn=squid…": invalid credentials'],
      ['NO_SUCH_BASE', 'the search base "dc=nope,dc=test" does not exist on ldap.example.test:389'],
    ] as const) {
      const result = await s.apply(
        { ...INPUT, host: 'nope.example.test' },
        'new-password',
        failing(code, message).options,
      );
      expect(result).toMatchObject({ ok: false, message, error: { code } });
      expect(s.load()).toEqual(before);
      expect(s.version()).toBe(versionBefore);
      expect(readFileSync(passwordFile(), 'utf8')).toBe(PASSWORD);
    }
  });

  it('without a password keeps the stored one, and tests with it', async () => {
    const s = store();
    await s.apply(INPUT, PASSWORD, found(5).options);
    const t = found(7);
    const result = await s.apply({ ...INPUT, groupCacheSeconds: 120 }, undefined, t.options);
    expect(result.ok).toBe(true);
    expect(t.calls[0]?.password).toBe(PASSWORD);
    expect(s.load()).toMatchObject({ password: PASSWORD, settings: { groupCacheSeconds: 120 } });
  });

  it('a new password replaces the old one', async () => {
    const s = store();
    await s.apply(INPUT, PASSWORD, found(5).options);
    await s.apply(INPUT, 'N3wPassword', found(5).options);
    expect(s.load()?.password).toBe('N3wPassword');
    expect(statSync(passwordFile()).mode & 0o777).toBe(0o600);
  });
});

describe('version', () => {
  it('is 0 before anything is applied and goes up with every apply, even within one millisecond', async () => {
    const s = store();
    expect(s.version()).toBe(0);
    await s.apply(INPUT, PASSWORD, found(1).options);
    const first = s.version();
    expect(first).toBeGreaterThan(0);
    await s.apply(INPUT, PASSWORD, found(1).options);
    expect(s.version()).toBeGreaterThan(first);
    clock.advance(60_000);
    await s.apply(INPUT, PASSWORD, found(1).options);
    expect(s.version()).toBe(clock.now());
  });

  it('another handle on the same DB sees the change', async () => {
    const writer = store();
    const reader = store();
    await writer.apply(INPUT, PASSWORD, found(1).options);
    expect(reader.version()).toBe(writer.version());
    expect(reader.load()?.settings.host).toBe('ldap.example.test');
  });
});

describe('load', () => {
  it('is undefined before anything is applied', () => {
    expect(store().load()).toBeUndefined();
  });

  it('drops one trailing line break from a hand-edited password file', async () => {
    const s = store();
    await s.apply(INPUT, PASSWORD, found(1).options);
    writeFileSync(passwordFile(), `${PASSWORD}\n`);
    expect(s.load()?.password).toBe(PASSWORD);
  });

  it('says so when the password file is missing', async () => {
    const s = store();
    await s.apply(INPUT, PASSWORD, found(1).options);
    rmSync(passwordFile());
    const error = thrown(() => s.load());
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toMatch(/bind password file .* is missing/);
    expect(existsSync(passwordFile())).toBe(false);
  });

  it('says which stored field is no longer valid', () => {
    const db = tmp.connect();
    db.prepare("INSERT INTO settings (name, value, updated_at) VALUES ('directory', ?, 1)").run(
      JSON.stringify({ ...INPUT, transport: 'smoke-signals' }),
    );
    writeFileSync(passwordFile(), PASSWORD, { mode: 0o600 });
    const error = thrown(() =>
      new DirectorySettingsStore(db, { passwordFile: passwordFile(), clock }).load(),
    );
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('transport:');
  });
});

describe('apply while another connection holds the write lock', () => {
  function locked() {
    const timers = new ManualTimers(clock);
    const web = new DirectorySettingsStore(tmp.connect({ busyTimeoutMs: 0 }), {
      passwordFile: passwordFile(),
      clock,
      schedule: timers.schedule,
    });
    const holder = tmp.connect();
    holder.exec('BEGIN IMMEDIATE');
    return { timers, web, holder };
  }

  it('waits on a timer, writing nothing, and applies once the lock is free', async () => {
    const { timers, web, holder } = locked();
    const applying = web.apply(INPUT, PASSWORD, found(3).options);
    await timers.untilWaiting();
    await timers.fireNext();
    expect(existsSync(passwordFile())).toBe(false);
    expect(readdirSync(tmp.dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    holder.exec('ROLLBACK');
    await timers.fireNext();
    expect(await applying).toMatchObject({ ok: true, groupCount: 3 });
    expect(store().load()?.password).toBe(PASSWORD);
  });

  it('gives up with StoreBusyError after the deadline; the previous settings stay in force', async () => {
    await store().apply(INPUT, PASSWORD, found(1).options);
    const { timers, web, holder } = locked();
    const outcome = rejection(
      web.apply({ ...INPUT, host: 'other.example.test' }, 'N3wPassword', found(2).options),
    );
    await timers.untilWaiting();
    while (await timers.fireNext());
    expect(await outcome).toBeInstanceOf(StoreBusyError);
    holder.exec('ROLLBACK');
    const loaded = store().load();
    expect(loaded?.settings.host).toBe(INPUT.host);
    expect(loaded?.password).toBe(PASSWORD);
    expect(readdirSync(tmp.dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
