import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authdLogPath } from '../../helpers/authd/supervisor.ts';
import { applyDirectory } from '../harness/apply-directory.ts';
import { curlViaProxy } from '../harness/curl.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../harness/slapd.ts';

/**
 * Password guessing through the proxy's own prompt (Basic, through a real Squid, the shim and authd) against
 * a real slapd that logs every bind: past the limits of passwordGuessing the helper answers ERR without
 * asking the directory, so slapd sees at most the limit's binds however many guesses arrive; the account's
 * owner still signs in from the address they signed in from before.
 */
const ACCOUNT_LIMIT = 5;
const ADDRESS_LIMIT = 10;
const GUESSES = 1000;
/** Guesses sent at once: Squid hands them to the helper together, as a guessing client would. */
const AT_ONCE = 25;

let slapd: Slapd;
let lab: Lab;

beforeAll(async () => {
  slapd = await startSlapd({ extraUsers: 20, logBinds: true });
  lab = await startLab({
    config: {
      passwordGuessing: {
        account: { maxFailures: ACCOUNT_LIMIT, windowSeconds: 900 },
        address: { maxFailures: ADDRESS_LIMIT, windowSeconds: 300 },
      },
    },
    beforeSquid: async (doorman) => void (await applyDirectory(doorman, slapd)),
  });
}, 60_000);
afterAll(async () => {
  await lab?.stop();
  await slapd?.stop();
});

const get = (user: string, from: string) =>
  curlViaProxy(`${lab.originUrl}page`, `http://127.0.0.1:${lab.squidPort}`, { user, from });

/** Send `count` requests, AT_ONCE at a time; returns their statuses. */
async function storm(count: number, request: (i: number) => Promise<{ status: number }>): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i += AT_ONCE) {
    const batch = Array.from({ length: Math.min(AT_ONCE, count - i) }, (_, j) => request(i + j));
    statuses.push(...(await Promise.all(batch)).map((r) => r.status));
  }
  return statuses;
}

/** Binds slapd received as users (ou=people) since `before` of them. */
const userBinds = (before = 0) => slapd.binds().filter((dn) => dn.includes(',ou=people,')).length - before;

describe('password guessing through Squid', () => {
  it('stops one account’s wrong passwords at its limit, at slapd; the owner still gets in from home', async () => {
    const alice = slapd.users[0]?.dn ?? '';
    expect((await get(`alice:${USER_PASSWORD}`, '127.0.0.2')).status).toBe(200);
    const aliceBinds = () => slapd.binds().filter((dn) => dn === alice).length;
    const before = aliceBinds();
    // From 40 addresses, so that the account's limit, not an address's, is what holds.
    const statuses = await storm(GUESSES, (i) => get(`alice:guess${i}`, `127.0.1.${(i % 40) + 1}`));
    expect(statuses.every((s) => s === 407)).toBe(true);
    expect(aliceBinds() - before).toBeLessThanOrEqual(ACCOUNT_LIMIT);
    // A stranger with the right password is refused too (the directory is not asked) ...
    const asked = aliceBinds();
    expect((await get(`alice:${USER_PASSWORD}`, '127.0.0.3')).status).toBe(407);
    expect(aliceBinds()).toBe(asked);
    // In cache.log (authd sends it through the shim), never with the password.
    expect(lab.cacheLog().join('\n')).toMatch(/doorman: basic: RATE_LIMITED account="alice"/);
    expect(lab.cacheLog().join('\n')).not.toContain(USER_PASSWORD);
    expect(lab.serveLog().join('\n')).not.toContain(USER_PASSWORD);
    expect(readFileSync(authdLogPath(join(lab.dir, 'state')), 'utf8')).not.toContain(USER_PASSWORD);
    // ... and alice at her own address is not.
    expect((await get(`alice:${USER_PASSWORD}`, '127.0.0.2')).status).toBe(200);
  }, 120_000);

  it('stops one address’s wrong passwords for many accounts at its limit; others still get in', async () => {
    const before = userBinds();
    const names = slapd.users.map((u) => u.name).filter((n) => n !== 'alice');
    const statuses = await storm(GUESSES, (i) => get(`${names[i % names.length]}:guess${i}`, '127.0.2.1'));
    expect(statuses.every((s) => s === 407)).toBe(true);
    expect(userBinds(before)).toBeLessThanOrEqual(ADDRESS_LIMIT);
    expect(lab.cacheLog().join('\n')).toMatch(/doorman: basic: RATE_LIMITED address="127\.0\.2\.1"/);
    // The guessed-at accounts' owners, elsewhere, are not held back.
    expect((await get(`bob:${USER_PASSWORD}`, '127.0.0.4')).status).toBe(200);
    expect((await get(`alice:${USER_PASSWORD}`, '127.0.0.2')).status).toBe(200);
  }, 120_000);
});
