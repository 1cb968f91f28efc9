import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyDirectory } from '../harness/apply-directory.ts';
import { curlViaProxy } from '../harness/curl.ts';
import { form, http } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../harness/slapd.ts';

/**
 * Basic authentication and groups through a real Squid against a real OpenLDAP: Doorman's directory applied
 * with `doorman directory set`, Squid configured by `doorman squid-conf`, clients are curl.
 */
let slapd: Slapd;
let lab: Lab;

beforeAll(async () => {
  slapd = await startSlapd();
  lab = await startLab({
    config: {
      squid: {
        ttl: 0,
        negativeTtl: 0,
        groups: { ttl: 0, negativeTtl: 0, allow: ['Staff Users', 'Ünïcødé Group'] },
      },
    },
    beforeSquid: async (doorman) => {
      const applied = await applyDirectory(doorman, slapd);
      expect(applied.stdout).toMatch(/^Found \d+ user groups$/m);
    },
  });
}, 60_000);
afterAll(async () => {
  await lab?.stop();
  await slapd?.stop();
});

const proxy = () => `http://127.0.0.1:${lab.squidPort}`;
const get = (user?: string) =>
  curlViaProxy(`${lab.originUrl}page`, proxy(), user === undefined ? {} : { user });

describe('Basic authentication and groups against OpenLDAP, through Squid', () => {
  it('asks for credentials (407) when there are none', async () => {
    expect((await get()).status).toBe(407);
  });

  it('lets alice (in Staff Users) through and logs her', async () => {
    const res = await get(`alice:${USER_PASSWORD}`);
    expect(res.status).toBe(200);
    expect(res.headers).toMatch(/^x-doorman-user: alice\r?$/im);
  });

  it('normalises the login name: ALICE is alice', async () => {
    const res = await get(`ALICE:${USER_PASSWORD}`);
    expect(res.status).toBe(200);
    expect(res.headers).toMatch(/^x-doorman-user: alice\r?$/im);
  });

  it('answers 407 to a wrong password', async () => {
    expect((await get('alice:wrong-password')).status).toBe(407);
  });

  it('answers 403 to a user outside the required groups', async () => {
    expect((await get(`carol:${USER_PASSWORD}`)).status).toBe(403);
  });

  it('finds membership in a non-ASCII group', async () => {
    expect((await get(`erin:${USER_PASSWORD}`)).status).toBe(200);
  });

  it('refuses LDAP-injection user names and an empty password without breaking the helpers', async () => {
    for (const user of ['*', ')(uid=*', 'alice)(uid=*', '\\00', '*)(|(uid=*']) {
      expect((await get(`${user}:${USER_PASSWORD}`)).status, user).toBe(407);
    }
    expect((await get('alice:')).status).toBe(407);
    expect((await get(`${'a'.repeat(10_000)}:${USER_PASSWORD}`)).status).toBe(407);
    expect((await get(`alice:${USER_PASSWORD}`)).status).toBe(200);
  });

  it('survives a directory outage and recovers without restarting anything', async () => {
    await slapd.halt();
    // bob was never checked: Squid must ask the helper, which cannot reach the directory
    const during = await get(`bob:${USER_PASSWORD}`);
    // Squid answers 407 again, but the helper said BH (our fault, not bob's), as cache.log shows
    expect(during.status).toBe(407);
    expect(lab.cacheLog().join('\n')).toMatch(
      /result=BH, notes=\{message: directory: cannot reach 127\.0\.0\.1:\d+/,
    );
    await slapd.restart();
    // bob is in proxy-users, not in the allowed groups: 403 means the password check worked again
    expect((await get(`bob:${USER_PASSWORD}`)).status).toBe(403);
    expect((await get(`dave:${USER_PASSWORD}`)).status).toBe(403);
  });

  it('applies squid.groups.allow to clients identified by the login API too, without a password prompt', async () => {
    const login = (username: string, from: string) =>
      http(`${lab.doormanUrl}api/login/`, {
        method: 'POST',
        from,
        ...form({ api_key: lab.apiKey, username }),
      });
    expect((await login('alice', '127.0.0.7')).status).toBe(200);
    expect((await login('carol', '127.0.0.8')).status).toBe(200);
    const inStaff = await curlViaProxy(`${lab.originUrl}page`, proxy(), { from: '127.0.0.7' });
    expect(inStaff.status).toBe(200);
    expect(inStaff.headers).toMatch(/^x-doorman-user: alice\r?$/im);
    // carol is identified, but outside the allowed groups: refused (403), not asked for a password (407)
    expect((await curlViaProxy(`${lab.originUrl}page`, proxy(), { from: '127.0.0.8' })).status).toBe(403);
  });
});
