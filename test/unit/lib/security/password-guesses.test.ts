import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import type { PasswordCheck } from '../../../../lib/directory/password-check.ts';
import { DirectoryError } from '../../../../lib/directory/errors.ts';
import {
  accountKey,
  clientGroup,
  describeRefusal,
  PasswordGuesses,
  type GuardedCheck,
  type GuessLimits,
} from '../../../../lib/security/password-guesses.ts';
import type { Db } from '../../../../lib/store/database.ts';
import { SignInFailureStore } from '../../../../lib/store/sign-in-failure-store.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const LIMITS: GuessLimits = {
  account: { maxFailures: 3, windowSeconds: 60 },
  address: { maxFailures: 5, windowSeconds: 300 },
};
const RIGHT = 'right';

const tmp = useTempDb('doorman-guesses-');

/** A directory that knows every user's password is RIGHT, and counts what it was asked. */
class Directory {
  asked = 0;
  down = false;
  async check(password: string): Promise<PasswordCheck> {
    this.asked++;
    await new Promise((resolve) => setImmediate(resolve));
    if (this.down) throw new DirectoryError('UNREACHABLE', 'cannot connect');
    return password === RIGHT
      ? { ok: true, user: 'alice', cached: false }
      : { ok: false, reason: 'wrong-password' };
  }
}

function setup(limits = LIMITS, db: Db = tmp.connect({ busyTimeoutMs: 0 }), clock = new ManualClock()) {
  const guesses = new PasswordGuesses(new SignInFailureStore(db), limits, { clock });
  const directory = new Directory();
  const attempt = (login: string, ip: string | undefined, password: string): Promise<GuardedCheck> =>
    guesses.guard(login, ip, () => directory.check(password));
  return { guesses, directory, attempt, clock, db };
}

const refused = (outcome: GuardedCheck) => (outcome.ok ? undefined : outcome.refusal);
const passed = (outcome: GuardedCheck) => (outcome.ok ? outcome.check.ok : undefined);

describe('accountKey', () => {
  it('gives every spelling of one name one counter', () => {
    for (const login of ['alice', ' ALICE ', 'EXAMPLE\\alice', 'alice@example.test', 'Other\\Alice@x']) {
      expect(accountKey(login)).toBe('alice');
    }
    // Variants a directory's matching rules take for alice (slapd matched the first two as uid=alice).
    for (const login of ['ａｌｉｃｅ', 'alİce', 'alıce', 'Alíce', 'EXAMPLE＼alice', 'alice＠example.test']) {
      expect(accountKey(login), login).toBe('alice');
    }
    expect(accountKey('STRAẞE')).toBe(accountKey('strasse'));
    expect(accountKey('@alice')).toBe('@alice');
    expect([...accountKey('é'.repeat(300))]).toHaveLength(256);
  });

  it('counts IPv6 clients by /64 and ignores what is not an address', () => {
    expect(clientGroup('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(clientGroup('::ffff:10.0.0.5')).toBe('10.0.0.5');
    expect(clientGroup('-')).toBeUndefined();
    expect(clientGroup(undefined)).toBeUndefined();
  });
});

describe('PasswordGuesses', () => {
  it('refuses an account after its failures without asking the directory, until the window ends', async () => {
    const { attempt, directory, clock } = setup();
    for (let i = 0; i < 3; i++)
      expect(passed(await attempt('alice', `10.0.0.${i + 1}`, `guess${i}`))).toBe(false);
    const refusal = refused(await attempt('ALICE', '10.0.0.9', RIGHT));
    expect(refusal).toEqual({ kind: 'account', key: 'alice', retryAfterSeconds: 60 });
    expect(refusal && describeRefusal(refusal)).toBe('RATE_LIMITED account="alice" retry_after=60s');
    expect(directory.asked).toBe(3);
    // Another account is not held back.
    expect(passed(await attempt('bob', '10.0.0.9', RIGHT))).toBe(true);
    clock.advance(60_000);
    expect(passed(await attempt('alice', '10.0.0.9', RIGHT))).toBe(true);
  });

  it('refuses an address after its failures, whatever account it guesses at', async () => {
    const { attempt, directory } = setup();
    for (let i = 0; i < 5; i++) await attempt(`user${i}`, '192.0.2.7', 'guess');
    expect(refused(await attempt('user9', '192.0.2.7', RIGHT))).toMatchObject({
      kind: 'address',
      key: '192.0.2.7',
      retryAfterSeconds: 300,
    });
    expect(directory.asked).toBe(5);
    expect(passed(await attempt('user9', '192.0.2.8', RIGHT))).toBe(true);
  });

  it('lets the owner in from an address they signed in from while strangers have used up the account', async () => {
    const { attempt, directory, db } = setup();
    expect(passed(await attempt('alice', '10.1.0.1', RIGHT))).toBe(true);
    for (let i = 0; i < 3; i++) await attempt('alice', '198.51.100.1', `guess${i}`);
    expect(refused(await attempt('alice', '198.51.100.2', RIGHT))).toMatchObject({ kind: 'account' });
    const asked = directory.asked;
    expect(passed(await attempt('Alice', '10.1.0.1', RIGHT))).toBe(true);
    expect(directory.asked).toBe(asked + 1);
    // Their own wrong passwords count against their address only, and a right one from there writes nothing.
    await attempt('alice', '10.1.0.1', 'typo');
    const rows = () =>
      db.prepare('SELECT kind, key, failures FROM sign_in_failures ORDER BY kind, key').all();
    expect(rows()).toEqual([
      { kind: 'account', key: 'alice', failures: 3 },
      { kind: 'address', key: '10.1.0.1', failures: 1 },
      { kind: 'address', key: '198.51.100.1', failures: 3 },
    ]);
    const changes = () => db.prepare('SELECT total_changes()').pluck().get();
    const before = changes();
    await attempt('alice', '10.1.0.1', RIGHT);
    expect(changes()).toBe(before);
  });

  it('counts checks in flight, so parallel guesses cannot all pass before the first failure is known', async () => {
    const { attempt, directory } = setup();
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => attempt('alice', `10.2.0.${i}`, `guess${i}`)),
    );
    expect(directory.asked).toBe(3);
    expect(outcomes.filter((o) => !o.ok)).toHaveLength(17);
  });

  it('counts parallel checks from a known address against its address limit', async () => {
    const { attempt, directory } = setup();
    await attempt('alice', '10.3.0.1', RIGHT);
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => attempt('alice', '10.3.0.1', 'x')));
    expect(directory.asked).toBe(1 + 5);
    expect(outcomes.filter((o) => !o.ok).map(refused)).toContainEqual({
      kind: 'address',
      key: '10.3.0.1',
      retryAfterSeconds: 1,
    });
  });

  it('counts nothing when the directory cannot be asked', async () => {
    const { attempt, directory } = setup({ ...LIMITS, account: { maxFailures: 1, windowSeconds: 60 } });
    directory.down = true;
    await expect(attempt('alice', '10.4.0.1', RIGHT)).rejects.toThrow('cannot connect');
    directory.down = false;
    expect(passed(await attempt('alice', '10.4.0.2', RIGHT))).toBe(true);
  });

  it('holds across two handles on one DB file, as the splash page and the Basic helper share it', async () => {
    const clock = new ManualClock();
    const splash = setup(LIMITS, tmp.connect({ busyTimeoutMs: 0 }), clock);
    const basic = setup(LIMITS, tmp.connect({ busyTimeoutMs: 0 }), clock);
    await splash.attempt('alice', '10.5.0.1', 'guess1');
    await basic.attempt('alice', '10.5.0.2', 'guess2');
    await splash.attempt('alice', '10.5.0.3', 'guess3');
    expect(refused(await basic.attempt('alice', '10.5.0.4', RIGHT))).toMatchObject({ kind: 'account' });
    // A right password through one makes the address known to the other.
    await splash.attempt('bob', '10.5.0.9', RIGHT);
    for (let i = 0; i < 3; i++) await basic.attempt('bob', '10.5.0.8', `guess${i}`);
    expect(passed(await basic.attempt('bob', '10.5.0.9', RIGHT))).toBe(true);
  });

  it('without an address, limits the account alone', async () => {
    const { attempt } = setup();
    for (let i = 0; i < 3; i++) await attempt('carol', undefined, `guess${i}`);
    expect(refused(await attempt('carol', '-', RIGHT))).toMatchObject({ kind: 'account' });
  });
});
