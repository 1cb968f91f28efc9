import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { DoormanError } from '../../../../lib/errors.ts';
import {
  backoffMs,
  BUSY_DEADLINE_MS,
  BUSY_MAX_BACKOFF_MS,
  isBusy,
  retryWhileBusy,
  StoreBusyError,
  unlessBusy,
} from '../../../../lib/store/busy.ts';
import { ManualTimers, settle } from '../../../support/manual-timers.ts';
import { rejection } from '../../../support/thrown.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const tmp = useTempDb('doorman-busy-');
const busy = (code = 'SQLITE_BUSY') => Object.assign(new Error('database is locked'), { code });

describe('isBusy', () => {
  it('is true for SQLITE_BUSY and its extended codes, and for StoreBusyError', () => {
    for (const code of [
      'SQLITE_BUSY',
      'SQLITE_BUSY_SNAPSHOT',
      'SQLITE_BUSY_RECOVERY',
      'SQLITE_BUSY_TIMEOUT',
    ]) {
      expect(isBusy(busy(code))).toBe(true);
    }
    expect(isBusy(new StoreBusyError(5000))).toBe(true);
  });

  it('is false for other errors and for things that are not errors', () => {
    for (const other of [
      busy('SQLITE_CONSTRAINT_UNIQUE'),
      new Error('x'),
      undefined,
      null,
      'SQLITE_BUSY',
      5,
    ]) {
      expect(isBusy(other)).toBe(false);
    }
  });

  it('is true for what SQLite itself throws when another handle holds the write lock', () => {
    const holder = tmp.connect();
    const writer = tmp.connect({ busyTimeoutMs: 0 });
    holder.exec('BEGIN IMMEDIATE');
    let error: unknown;
    try {
      writer.exec('BEGIN IMMEDIATE');
    } catch (caught) {
      error = caught;
    }
    holder.exec('ROLLBACK');
    expect(isBusy(error)).toBe(true);
  });
});

describe('StoreBusyError', () => {
  it('is a STORE_UNAVAILABLE DoormanError that names the reason and the wait', () => {
    const error = new StoreBusyError(5000);
    expect(error).toBeInstanceOf(DoormanError);
    expect(error.code).toBe('STORE_UNAVAILABLE');
    expect(error.message).toBe('the session database is locked by another process (waited 5.0 s)');
  });
});

describe('backoffMs', () => {
  it('doubles from 5 ms up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 50, 5000].map(backoffMs)).toEqual([5, 10, 20, 40, 80, 100, 100, 100]);
    expect(backoffMs(1e9)).toBe(BUSY_MAX_BACKOFF_MS);
  });
});

describe('retryWhileBusy', () => {
  let clock: ManualClock;
  let timers: ManualTimers;
  beforeEach(() => {
    clock = new ManualClock();
    timers = new ManualTimers(clock);
  });

  it('returns at once when the action works, without a timer', async () => {
    expect(await retryWhileBusy(() => 42, { clock, schedule: timers.schedule })).toBe(42);
    expect(timers.pending).toBe(0);
  });

  it('waits on timers with backoff while busy, then returns the result', async () => {
    let tries = 0;
    const started = clock.now();
    const result = retryWhileBusy(
      () => {
        if (++tries < 4) throw busy();
        return 'done';
      },
      { clock, schedule: timers.schedule },
    );
    // Nothing blocked: the first try failed and the promise waits on a timer.
    await settle();
    expect(tries).toBe(1);
    expect(timers.pending).toBe(1);
    while (await timers.fireNext());
    expect(await result).toBe('done');
    expect(tries).toBe(4);
    expect(clock.now() - started).toBe(5 + 10 + 20);
  });

  it('gives up with StoreBusyError at the deadline, the busy error as its cause', async () => {
    let tries = 0;
    const last = busy();
    const result = retryWhileBusy(
      () => {
        tries++;
        throw last;
      },
      { clock, schedule: timers.schedule },
    );
    const outcome = rejection(result);
    while (await timers.fireNext());
    const error = await outcome;
    expect(error).toBeInstanceOf(StoreBusyError);
    expect((error as StoreBusyError).waitedMs).toBe(BUSY_DEADLINE_MS);
    expect((error as StoreBusyError).cause).toBe(last);
    // 5+10+20+40+80 ms, then every 100 ms up to exactly the deadline, and one last try there.
    expect(tries).toBe(5 + Math.ceil((BUSY_DEADLINE_MS - 155) / 100) + 1);
  });

  it('throws any other error at once', async () => {
    const constraint = busy('SQLITE_CONSTRAINT_UNIQUE');
    await expect(
      retryWhileBusy(
        () => {
          throw constraint;
        },
        { clock, schedule: timers.schedule },
      ),
    ).rejects.toBe(constraint);
    expect(timers.pending).toBe(0);
  });
});

describe('unlessBusy', () => {
  it('says whether the action ran, and throws other errors', () => {
    expect(unlessBusy(() => {})).toBe(true);
    expect(
      unlessBusy(() => {
        throw busy('SQLITE_BUSY_SNAPSHOT');
      }),
    ).toBe(false);
    const other = new Error('disk I/O error');
    expect(() =>
      unlessBusy(() => {
        throw other;
      }),
    ).toThrow(other);
  });
});
