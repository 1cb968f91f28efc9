import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { SeamlessSettingsStore } from '../../../../lib/store/seamless-settings-store.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { joinedState } from '../../../support/seamless-state.ts';

const tmp = useTempDb('doorman-seamless-settings-');

const joined = joinedState(Date.UTC(2026, 10, 23));

describe('SeamlessSettingsStore', () => {
  it('is empty, version 0, until a join is saved; another handle sees the save', () => {
    const clock = new ManualClock();
    const store = new SeamlessSettingsStore(tmp.connect(), { clock });
    expect(store.current()).toBeUndefined();
    expect(store.version()).toBe(0);
    store.save(joined);
    expect(store.current()).toEqual(joined);
    const other = new SeamlessSettingsStore(tmp.connect(), { clock });
    expect(other.current()).toEqual(joined);
    expect(other.version()).toBe(store.version());
  });

  it('moves the version on every save and clear, even with the clock standing still or going back', () => {
    const clock = new ManualClock();
    const store = new SeamlessSettingsStore(tmp.connect(), { clock });
    store.clear(); // nothing to clear: stays "never saved"
    expect(store.version()).toBe(0);
    store.save(joined);
    const v1 = store.version();
    store.save(joined);
    const v2 = store.version();
    expect(v2).toBeGreaterThan(v1);
    clock.advance(-60_000);
    store.clear();
    expect(store.current()).toBeUndefined();
    const v3 = store.version();
    expect(v3).toBeGreaterThan(v2);
    store.save({ ...joined, serverVersion: '2003' });
    expect(store.version()).toBeGreaterThan(v3);
    expect(store.current()?.serverVersion).toBe('2003');
  });

  it('refuses a state that is not one, naming the field, and keeps what was saved', () => {
    const store = new SeamlessSettingsStore(tmp.connect(), { clock: new ManualClock() });
    store.save(joined);
    expect(() => store.save({ ...joined, serverVersion: '2019' as never })).toThrow(/serverVersion/);
    expect(() => store.save({ ...joined, password: 'x' } as never)).toThrow(/password|Unrecognized/i);
    expect(store.current()).toEqual(joined);
  });

  it('says to enable again when the stored row is not valid', () => {
    const db = tmp.connect();
    const store = new SeamlessSettingsStore(db, { clock: new ManualClock() });
    db.prepare(
      "INSERT INTO settings (name, value, updated_at) VALUES ('seamless', '{\"realm\":1}', 1)",
    ).run();
    expect(() => store.current()).toThrow(/doorman seamless enable/);
  });
});
