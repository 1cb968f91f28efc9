import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { PasswordCache } from '../../../../lib/directory/password-cache.ts';

const ALICE = 'uid=alice,ou=people,dc=example,dc=test';
const BOB = 'uid=bob,ou=people,dc=example,dc=test';
const T1 = 'entryCSN=20260101000000.000001Z#000000#000#000000';
const T2 = 'entryCSN=20260101000001.000002Z#000000#000#000000';

let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock();
});

describe('PasswordCache', () => {
  it('matches the remembered password for the same user and freshness, within the TTL', () => {
    const cache = new PasswordCache({ ttlSeconds: 60, clock });
    cache.remember(ALICE, T1, 'Passw0rd!');
    expect(cache.matches(ALICE, T1, 'Passw0rd!')).toBe(true);
    clock.advance(59_999);
    expect(cache.matches(ALICE, T1, 'Passw0rd!')).toBe(true);
  });

  it('never matches another password', () => {
    const cache = new PasswordCache({ ttlSeconds: 60, clock });
    cache.remember(ALICE, T1, 'Passw0rd!');
    for (const wrong of ['', 'passw0rd!', 'Passw0rd', 'Passw0rd!!', 'Passw0rd! ', '\x00']) {
      expect(cache.matches(ALICE, T1, wrong)).toBe(false);
    }
    // A wrong guess does not spoil the entry for the right password.
    expect(cache.matches(ALICE, T1, 'Passw0rd!')).toBe(true);
  });

  it('never matches for another user', () => {
    const cache = new PasswordCache({ ttlSeconds: 60, clock });
    cache.remember(ALICE, T1, 'Passw0rd!');
    expect(cache.matches(BOB, T1, 'Passw0rd!')).toBe(false);
  });

  it('compares DNs as DNs (case and spacing)', () => {
    const cache = new PasswordCache({ ttlSeconds: 60, clock });
    cache.remember(ALICE, T1, 'Passw0rd!');
    expect(cache.matches('UID=Alice, OU=People, DC=Example, DC=Test', T1, 'Passw0rd!')).toBe(true);
  });

  it('forgets the entry when the freshness token changes (password changed, account disabled)', () => {
    const cache = new PasswordCache({ ttlSeconds: 60, clock });
    cache.remember(ALICE, T1, 'Passw0rd!');
    expect(cache.matches(ALICE, T2, 'Passw0rd!')).toBe(false);
    // …and for good: going back to the old token does not bring it back.
    expect(cache.matches(ALICE, T1, 'Passw0rd!')).toBe(false);
    expect(cache.size).toBe(0);
  });

  it('expires entries after the TTL', () => {
    const cache = new PasswordCache({ ttlSeconds: 60, clock });
    cache.remember(ALICE, T1, 'Passw0rd!');
    clock.advance(60_000);
    expect(cache.matches(ALICE, T1, 'Passw0rd!')).toBe(false);
    expect(cache.size).toBe(0);
  });

  it('remembers nothing with a TTL of 0, or for a user without a freshness token', () => {
    const off = new PasswordCache({ ttlSeconds: 0, clock });
    off.remember(ALICE, T1, 'Passw0rd!');
    expect(off.matches(ALICE, T1, 'Passw0rd!')).toBe(false);
    expect(off.size).toBe(0);
    const cache = new PasswordCache({ ttlSeconds: 60, clock });
    cache.remember(ALICE, undefined, 'Passw0rd!');
    expect(cache.matches(ALICE, undefined, 'Passw0rd!')).toBe(false);
    expect(cache.size).toBe(0);
  });

  it('a new success replaces the entry (new password, new token, new expiry)', () => {
    const cache = new PasswordCache({ ttlSeconds: 60, clock });
    cache.remember(ALICE, T1, 'old');
    clock.advance(30_000);
    cache.remember(ALICE, T2, 'new');
    expect(cache.matches(ALICE, T2, 'old')).toBe(false);
    clock.advance(59_000);
    expect(cache.matches(ALICE, T2, 'new')).toBe(true);
    expect(cache.size).toBe(1);
  });

  it('keeps at most maxEntries, dropping the oldest', () => {
    const cache = new PasswordCache({ ttlSeconds: 60, clock, maxEntries: 3 });
    for (const name of ['a', 'b', 'c', 'd']) cache.remember(`uid=${name},dc=x`, T1, 'pw');
    expect(cache.size).toBe(3);
    expect(cache.matches('uid=a,dc=x', T1, 'pw')).toBe(false);
    expect(cache.matches('uid=d,dc=x', T1, 'pw')).toBe(true);
  });

  it('keeps no copy of the password, and two caches do not share digests', () => {
    const a = new PasswordCache({ ttlSeconds: 60, clock });
    const b = new PasswordCache({ ttlSeconds: 60, clock });
    a.remember(ALICE, T1, 'Passw0rd!');
    b.remember(ALICE, T1, 'Passw0rd!');
    // Nothing enumerable on the instance; the password is in no string we can reach.
    expect(JSON.stringify(a)).not.toContain('Passw0rd');
    expect(b.matches(ALICE, T1, 'Passw0rd!')).toBe(true);
  });
});
