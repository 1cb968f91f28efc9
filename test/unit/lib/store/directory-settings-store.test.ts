import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { StoreBusyError } from '../../../../lib/store/busy.ts';
import {
  DIRECTORY_PASSWORD_FILE,
  DirectorySettingsStore,
} from '../../../../lib/store/directory-settings-store.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { rejection, thrown } from '../../../support/thrown.ts';
import { BIND_PASSWORD as PASSWORD, DIRECTORY_INPUT as INPUT, found } from './contract/directory-settings.ts';

/**
 * What DirectorySettingsStore keeps in the DB, does with a row it cannot read, and does while another process
 * holds the write lock. What every store does with the directory settings is the contract
 * (contract/directory-settings.ts), run on SQLite by sqlite-contract.test.ts beside this file.
 */

const tmp = useTempDb('doorman-directory-settings-');
let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock();
});

const passwordFile = () => join(tmp.dir, DIRECTORY_PASSWORD_FILE);
const store = () => new DirectorySettingsStore(tmp.connect(), { passwordFile: passwordFile(), clock });

describe('the settings row', () => {
  it('holds the settings, never the bind password (a file of its own)', async () => {
    await store().apply(INPUT, PASSWORD, found(3).options);
    const db = tmp.connect();
    const rows = JSON.stringify(db.prepare('SELECT * FROM settings').all());
    expect(rows).toContain('ldap.example.test');
    expect(rows).not.toContain(PASSWORD);
  });
});

describe('load', () => {
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

  it('does not read what the password was applied for: one box writes both (and an older install has none)', async () => {
    await store().apply(INPUT, PASSWORD, found(1).options);
    rmSync(`${passwordFile()}.target`);
    expect(store().load()?.password).toBe(PASSWORD);
    writeFileSync(`${passwordFile()}.target`, JSON.stringify({ ...INPUT, host: 'elsewhere.example.test' }));
    expect(store().load()).toMatchObject({ password: PASSWORD, settings: { host: INPUT.host } });
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
