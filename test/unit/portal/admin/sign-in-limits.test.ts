import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { SignInLimits } from '../../../../portal/admin/sign-in-limits.ts';
import { ADMIN, startAdminPortal, type AdminPortal } from './harness.ts';

let portal: AdminPortal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

const addresses = (n: number) => Array.from({ length: n }, (_, i) => `127.0.0.${10 + i}`);

describe('wrong sign-ins per account', () => {
  it('refuses an account guessed at from many addresses, for a short window only', async () => {
    const p = (portal = await startAdminPortal(
      {},
      {
        signInLimits: { maxFailures: 5, windowSeconds: 300 },
        accountLimits: { maxFailures: 3, windowSeconds: 60 },
      },
    ));
    // One guess from each address: no address reaches its own limit, the account does.
    for (const from of addresses(3)) expect((await p.browser(from).signIn(ADMIN, 'guess')).status).toBe(403);
    const limited = await p.browser('127.0.0.20').signIn();
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.text).toContain('too many wrong sign-ins for this user name; try again in 60 seconds');
    // Another account is not affected (it does not exist: a plain 403, counted against it alone).
    expect((await p.browser('127.0.0.21').signIn('someone', 'guess')).status).toBe(403);
    // The lock ends with the short window.
    p.clock.advance(60_000);
    expect((await p.browser('127.0.0.20').signIn()).status).toBe(303);
  });

  it('never refuses the account at an address it has signed in from, whatever others guess', async () => {
    const p = (portal = await startAdminPortal({}, { accountLimits: { maxFailures: 2, windowSeconds: 60 } }));
    const desk = p.browser('127.0.0.2');
    expect((await desk.signIn()).status).toBe(303);
    for (const from of addresses(4)) await p.browser(from).signIn(ADMIN, 'guess');
    expect((await p.browser('127.0.0.30').signIn()).status).toBe(429);
    // The admin's own desk: still let in, and a typo there does not count against the account.
    expect((await p.browser('127.0.0.2').signIn(ADMIN, 'typo')).status).toBe(403);
    expect((await p.browser('127.0.0.2').signIn()).status).toBe(303);
  });

  it('counts checks in flight: parallel guesses from many addresses get at most the limit checked', async () => {
    const p = (portal = await startAdminPortal({}, { accountLimits: { maxFailures: 2, windowSeconds: 60 } }));
    const replies = await Promise.all(addresses(6).map((from) => p.browser(from).signIn(ADMIN, 'guess')));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 403).length).toBeLessThanOrEqual(2);
    expect(statuses.every((s) => s === 403 || s === 429)).toBe(true);
  });
});

describe('the per-account table', () => {
  it('cannot be flushed by made-up names: a real account keeps its count, and both answer alike', () => {
    const clock = new ManualClock();
    const limits = new SignInLimits(clock, {
      account: { maxFailures: 3, windowSeconds: 60 },
      isAccount: (name) => name === 'admin',
    });
    for (let i = 0; i < 3; i++) limits.failed(`192.0.2.${i}`, 'admin');
    expect(limits.accountRetryAfter('admin')).toBe(60);
    // more made-up names than any table keeps, each with one wrong guess
    for (let i = 0; i < 10_050; i++) limits.failed(`198.51.${i >> 8}.${i & 255}`, `junk${i}`);
    expect(limits.accountRetryAfter('admin')).toBe(60);
    // a made-up name is limited by the same rule, so a 429 does not tell which names are real
    for (let i = 0; i < 3; i++) limits.failed(`203.0.113.${i}`, 'nosuchadmin');
    expect(limits.accountRetryAfter('nosuchadmin')).toBe(60);
  });
});
