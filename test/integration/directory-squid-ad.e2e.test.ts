import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyDirectory } from '../harness/apply-directory.ts';
import { curlViaProxy } from '../harness/curl.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { startSambaAd, type SambaAd } from '../harness/samba-ad.ts';

/**
 * Basic authentication and groups through a real Squid against a Samba Active Directory domain controller
 * (in its own network namespace): display-name DNs, the three login forms, nested groups.
 */
let ad: SambaAd;
let lab: Lab;
const PASSWORD = 'Passw0rd!';

beforeAll(async () => {
  ad = await startSambaAd();
  lab = await startLab({
    // Level2 holds Level1, which holds bob: bob passes only if nesting is followed.
    config: {
      squid: { ttl: 0, negativeTtl: 0, groups: { ttl: 0, negativeTtl: 0, allow: ['Staff Users', 'Level2'] } },
    },
    beforeSquid: async (doorman) => {
      expect((await applyDirectory(doorman, ad)).stdout).toMatch(/^Found \d+ user groups$/m);
    },
  });
}, 90_000);
afterAll(async () => {
  await lab?.stop();
  await ad?.stop();
});

const get = (user?: string) =>
  curlViaProxy(
    `${lab.originUrl}page`,
    `http://127.0.0.1:${lab.squidPort}`,
    user === undefined ? {} : { user },
  );

describe('Basic authentication and groups against Active Directory, through Squid', () => {
  it.each([['alice'], ['EXAMPLE\\alice'], ['alice@example.test'], ['Alice']])(
    '%s with the right password passes as alice',
    async (login) => {
      const res = await get(`${login}:${PASSWORD}`);
      expect(res.status).toBe(200);
      expect(res.headers).toMatch(/^x-doorman-user: alice\r?$/im);
    },
  );

  it('logs every one of those logins as alice in access.log', () => {
    const users = lab.accessLog().map((line) => line.split(/\s+/)[7]);
    expect(users.filter((u) => u === 'alice').length).toBeGreaterThanOrEqual(4);
    expect(users.some((u) => u !== undefined && /example|@/i.test(u))).toBe(false);
  });

  it('answers 407 without credentials and to a wrong password', async () => {
    expect((await get()).status).toBe(407);
    expect((await get('alice:Wrong-passw0rd')).status).toBe(407);
  });

  it('lets bob through a nested group (Level1 in Level2)', async () => {
    const res = await get(`bob:${PASSWORD}`);
    expect(res.status).toBe(200);
    expect(res.headers).toMatch(/^x-doorman-user: bob\r?$/im);
  });

  it('answers 403 to a user in none of the allowed groups', async () => {
    expect((await get(`carol:${PASSWORD}`)).status).toBe(403);
  });
});
