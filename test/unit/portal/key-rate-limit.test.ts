import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/clock.ts';
import { KeyFailureLimiter } from '../../../portal/middleware/key-rate-limit.ts';

describe('KeyFailureLimiter', () => {
  it('lets an address fail maxFailures times, then refuses it until its window ends', () => {
    const clock = new ManualClock();
    const limiter = new KeyFailureLimiter(clock, { maxFailures: 3, windowSeconds: 60 });
    limiter.recordFailure('192.0.2.1');
    clock.advance(10_000);
    limiter.recordFailure('192.0.2.1');
    expect(limiter.retryAfter('192.0.2.1')).toBe(0);
    limiter.recordFailure('192.0.2.1');
    expect(limiter.retryAfter('192.0.2.1')).toBe(50);
    expect(limiter.retryAfter('192.0.2.2')).toBe(0);
    clock.advance(49_001);
    expect(limiter.retryAfter('192.0.2.1')).toBe(1);
    clock.advance(999);
    expect(limiter.retryAfter('192.0.2.1')).toBe(0);
  });

  it('starts a fresh window after the old one ends', () => {
    const clock = new ManualClock();
    const limiter = new KeyFailureLimiter(clock, { maxFailures: 2, windowSeconds: 60 });
    limiter.recordFailure('192.0.2.1');
    clock.advance(60_000);
    limiter.recordFailure('192.0.2.1');
    expect(limiter.retryAfter('192.0.2.1')).toBe(0);
    limiter.recordFailure('192.0.2.1');
    expect(limiter.retryAfter('192.0.2.1')).toBe(60);
  });

  it('tracks at most maxTracked addresses, forgetting the oldest window first', () => {
    const clock = new ManualClock();
    const limiter = new KeyFailureLimiter(clock, { maxFailures: 1, windowSeconds: 60, maxTracked: 3 });
    for (const ip of ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']) {
      limiter.recordFailure(ip);
      clock.advance(1000);
    }
    expect(limiter.size).toBe(3);
    expect(limiter.retryAfter('10.0.0.1')).toBe(0);
    expect(limiter.retryAfter('10.0.0.2')).toBeGreaterThan(0);
    expect(limiter.retryAfter('10.0.0.4')).toBeGreaterThan(0);
  });
});
