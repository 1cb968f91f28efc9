import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { FailedAttempts } from '../../../../portal/splash/failed-attempts.ts';

describe('FailedAttempts', () => {
  it('remembers a refused attempt for its ttl, per directory version, name and password', () => {
    const clock = new ManualClock();
    const failed = new FailedAttempts(clock, { ttlMs: 1000 });
    failed.remember(1, 'alice', 'guess', 'wrong-password');
    expect(failed.refusal(1, 'alice', 'guess')).toBe('wrong-password');
    expect(failed.refusal(2, 'alice', 'guess')).toBeUndefined();
    expect(failed.refusal(1, 'alice', 'guess2')).toBeUndefined();
    expect(failed.refusal(1, 'bob', 'guess')).toBeUndefined();
    // No two pairs make the same key: ("a\nb", "c") is not ("a", "b\nc").
    failed.remember(1, 'a\nb', 'c', 'unknown-user');
    expect(failed.refusal(1, 'a', 'b\nc')).toBeUndefined();
    clock.advance(999);
    expect(failed.refusal(1, 'alice', 'guess')).toBe('wrong-password');
    clock.advance(1);
    expect(failed.refusal(1, 'alice', 'guess')).toBeUndefined();
  });

  it('is bounded: the oldest go first', () => {
    const clock = new ManualClock();
    const failed = new FailedAttempts(clock, { maxEntries: 3 });
    for (let i = 0; i < 10; i++) failed.remember(1, 'alice', `p${i}`, 'wrong-password');
    expect(failed.size).toBe(3);
    expect(failed.refusal(1, 'alice', 'p6')).toBeUndefined();
    expect(failed.refusal(1, 'alice', 'p9')).toBe('wrong-password');
  });

  it('never holds the password itself', () => {
    const failed = new FailedAttempts(new ManualClock());
    failed.remember(1, 'alice', 'S3cret-password', 'wrong-password');
    expect(inspect(failed, { showHidden: true, depth: 5 })).not.toContain('S3cret');
  });
});
