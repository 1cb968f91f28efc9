import { describe, expect, it } from 'vitest';
import { KNOWN_PER_ACCOUNT, SignInFailureStore } from '../../../../lib/store/sign-in-failure-store.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const tmp = useTempDb('doorman-sign-in-failures-');

describe('SignInFailureStore', () => {
  it('counts failures in a window that starts again once it has ended', () => {
    const store = new SignInFailureStore(tmp.connect());
    expect(store.addFailure('account', 'alice', 1000, 60_000)).toEqual({ start: 1000, failures: 1 });
    expect(store.addFailure('account', 'alice', 2000, 60_000)).toEqual({ start: 1000, failures: 2 });
    expect(store.window('address', 'alice')).toBeUndefined();
    expect(store.addFailure('account', 'alice', 61_000, 60_000)).toEqual({ start: 61_000, failures: 1 });
  });

  it('takes a failure back only within the window it was counted in', () => {
    const store = new SignInFailureStore(tmp.connect());
    store.addFailure('address', '10.0.0.1', 1000, 60_000);
    store.takeBack('address', '10.0.0.1', 999);
    expect(store.window('address', '10.0.0.1')).toEqual({ start: 1000, failures: 1 });
    store.takeBack('address', '10.0.0.1', 1000);
    store.takeBack('address', '10.0.0.1', 1000);
    expect(store.window('address', '10.0.0.1')).toEqual({ start: 1000, failures: 0 });
  });

  it('keeps the most recent known addresses per account, each for as long as asked', () => {
    const store = new SignInFailureStore(tmp.connect());
    for (let i = 0; i <= KNOWN_PER_ACCOUNT; i++) store.learn('alice', `10.0.0.${i}`, 1000 + i);
    expect(store.isKnown('alice', '10.0.0.0', 0)).toBe(false);
    expect(store.isKnown('alice', '10.0.0.1', 0)).toBe(true);
    expect(store.isKnown('alice', '10.0.0.1', 1001)).toBe(false);
    expect(store.isKnown('bob', '10.0.0.1', 0)).toBe(false);
  });

  it('prunes ended windows a batch at a time', () => {
    const db = tmp.connect();
    const store = new SignInFailureStore(db);
    for (let i = 0; i < 150; i++) store.addFailure('account', `user${i}`, i, 10);
    store.addFailure('account', 'recent', 10_000, 10);
    store.prune(5000);
    expect(db.prepare('SELECT count(*) FROM sign_in_failures').pluck().get()).toBe(51);
    store.prune(5000);
    expect(store.window('account', 'recent')).toEqual({ start: 10_000, failures: 1 });
    expect(db.prepare('SELECT count(*) FROM sign_in_failures').pluck().get()).toBe(1);
  });
});
