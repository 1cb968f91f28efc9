import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type RunOptions } from '../../harness/run.ts';
import { startSambaAd, type SambaAd } from '../../harness/samba-ad.ts';
import { startSlapd, type Slapd } from '../../harness/slapd.ts';

// The harness itself: both directories start, answer the clients Squid's helpers use (OpenLDAP's), and go
// away without a trace. ldapsearch/ldapwhoami run in the host namespace, as Squid and Doorman do.

/** Values of `attribute` in ldapsearch's LDIF output, base64 ones (`attr:: …`) decoded. */
function values(ldif: string, attribute: string): string[] {
  const found: string[] = [];
  for (const line of ldif.split('\n')) {
    const match = /^([^:]+)(::?) (.*)$/.exec(line);
    if (!match || match[1]?.toLowerCase() !== attribute.toLowerCase()) continue;
    const value = match[3] ?? '';
    found.push(match[2] === '::' ? Buffer.from(value, 'base64').toString('utf8') : value);
  }
  return found;
}

/** Alive and not a zombie waiting for its parent (init, for orphans) to reap it. */
function isAlive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

const ldap = (command: string, args: string[], options: RunOptions = {}) =>
  run(command, ['-x', '-o', 'ldif-wrap=no', ...args], options);

describe('startSlapd', () => {
  let slapd: Slapd;
  const started = { ms: 0 };
  beforeAll(async () => {
    const t0 = performance.now();
    slapd = await startSlapd();
    started.ms = performance.now() - t0;
  });
  afterAll(() => slapd?.stop());

  const withCa = () => ({ env: { ...process.env, LDAPTLS_CACERT: slapd.caFile } });
  const whoami = (url: string, extra: string[] = [], options: RunOptions = {}) =>
    ldap('ldapwhoami', ['-H', url, ...extra, '-D', slapd.bindDn, '-w', slapd.bindPassword], options);
  const search = (filter: string, ...attributes: string[]) =>
    ldap('ldapsearch', [
      '-LLL',
      '-H',
      slapd.url,
      '-D',
      slapd.bindDn,
      '-w',
      slapd.bindPassword,
      '-b',
      slapd.baseDn,
      filter,
      ...attributes,
    ]);

  it('starts in well under a second, on loopback', () => {
    expect(started.ms).toBeLessThan(1000);
    expect(slapd.url).toBe(`ldap://127.0.0.1:${slapd.port}`);
    expect(slapd.ldapsUrl).toBe(`ldaps://127.0.0.1:${slapd.ldapsPort}`);
    expect(slapd.caPem).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it('binds the bind account over plain LDAP, StartTLS and LDAPS', async () => {
    const dn = `dn:${slapd.bindDn}`;
    expect((await whoami(slapd.url)).stdout.trim()).toBe(dn);
    expect((await whoami(slapd.url, ['-ZZ'], withCa())).stdout.trim()).toBe(dn);
    expect((await whoami(slapd.ldapsUrl, [], withCa())).stdout.trim()).toBe(dn);
  });

  it('LDAPS fails without our CA (the certificate is really checked)', async () => {
    const result = await whoami(slapd.ldapsUrl, [], {
      env: { ...process.env, LDAPTLS_CACERT: '/etc/ssl/certs/ca-certificates.crt' },
      allowFailure: true,
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/Can't contact LDAP server/);
  });

  it("binds as a user with the user's password; a wrong one gives 49", async () => {
    const alice = slapd.users.find((u) => u.name === 'alice');
    expect(alice).toBeDefined();
    const ok = await ldap('ldapwhoami', [
      '-H',
      slapd.url,
      '-D',
      alice?.dn ?? '',
      '-w',
      alice?.password ?? '',
    ]);
    expect(ok.stdout.trim()).toBe('dn:uid=alice,ou=people,dc=example,dc=test');
    const bad = await ldap('ldapwhoami', ['-H', slapd.url, '-D', alice?.dn ?? '', '-w', 'wrong'], {
      allowFailure: true,
    });
    expect(bad.code).toBe(49);
  });

  it('shows groupOfNames membership as memberOf, with spaces, non-ASCII, nesting and the cycle', async () => {
    expect(values((await search('(uid=alice)', 'memberOf')).stdout, 'memberOf').sort()).toEqual([
      'cn=Staff Users,ou=groups,dc=example,dc=test',
      'cn=proxy-users,ou=groups,dc=example,dc=test',
    ]);
    expect(values((await search('(uid=erin)', 'memberOf')).stdout, 'memberOf')).toEqual([
      'cn=Ünïcødé Group,ou=groups,dc=example,dc=test',
    ]);
    expect(values((await search('(cn=level1)', 'memberOf')).stdout, 'memberOf')).toEqual([
      'cn=level2,ou=groups,dc=example,dc=test',
    ]);
    expect(values((await search('(cn=cycle-a)', 'memberOf')).stdout, 'memberOf')).toEqual([
      'cn=cycle-b,ou=groups,dc=example,dc=test',
    ]);
    expect(values((await search('(cn=cycle-b)', 'memberOf')).stdout, 'memberOf')).toEqual([
      'cn=cycle-a,ou=groups,dc=example,dc=test',
    ]);
    expect(values((await search('(cn=posix-staff)', 'memberUid')).stdout, 'memberUid')).toEqual(['carol']);
    expect(values((await search('(cn=unique-group)', 'uniqueMember')).stdout, 'uniqueMember')).toEqual([
      'uid=dave,ou=people,dc=example,dc=test',
    ]);
  });

  it('hides passwords from the bind account and everything from anonymous searches', async () => {
    expect(values((await search('(uid=alice)', 'userPassword')).stdout, 'userPassword')).toEqual([]);
    const anonymous = await ldap('ldapsearch', ['-LLL', '-H', slapd.url, '-b', slapd.baseDn, '(uid=alice)'], {
      allowFailure: true,
    });
    // Not even the base entry is disclosed: "No such object".
    expect(anonymous.code).toBe(32);
    expect(anonymous.stdout.trim()).toBe('');
  });

  it('restart() keeps the data and the ports; halt() takes it down', async () => {
    const before = slapd.pid;
    await slapd.modify(
      'dn: cn=Staff Users,ou=groups,dc=example,dc=test\nchangetype: modify\nadd: member\nmember: uid=dave,ou=people,dc=example,dc=test\n',
    );
    await slapd.halt();
    expect((await whoami(slapd.url, [], { allowFailure: true })).code).toBe(255);
    await slapd.restart();
    expect(slapd.pid).not.toBe(before);
    expect((await whoami(slapd.url)).stdout.trim()).toBe(`dn:${slapd.bindDn}`);
    expect((await whoami(slapd.ldapsUrl, [], withCa())).code).toBe(0);
    expect(values((await search('(uid=dave)', 'memberOf')).stdout, 'memberOf').sort()).toEqual([
      'cn=Staff Users,ou=groups,dc=example,dc=test',
      'cn=cycle-b,ou=groups,dc=example,dc=test',
    ]);
  });

  it('extraUsers adds userNNNN, even ones in proxy-users', async () => {
    const big = await startSlapd({ extraUsers: 3 });
    try {
      expect(big.users.map((u) => u.name)).toEqual([
        'alice',
        'bob',
        'carol',
        'dave',
        'erin',
        'user0000',
        'user0001',
        'user0002',
      ]);
      const members = await ldap('ldapsearch', [
        '-LLL',
        '-H',
        big.url,
        '-D',
        big.bindDn,
        '-w',
        big.bindPassword,
        '-b',
        big.baseDn,
        '(cn=proxy-users)',
        'member',
      ]);
      expect(values(members.stdout, 'member')).toEqual([
        'uid=alice,ou=people,dc=example,dc=test',
        'uid=bob,ou=people,dc=example,dc=test',
        'uid=user0000,ou=people,dc=example,dc=test',
        'uid=user0002,ou=people,dc=example,dc=test',
      ]);
      const user = big.users.at(-1);
      const bind = await ldap('ldapwhoami', [
        '-H',
        big.url,
        '-D',
        user?.dn ?? '',
        '-w',
        user?.password ?? '',
      ]);
      expect(bind.code).toBe(0);
    } finally {
      await big.stop();
    }
    expect(existsSync(big.dir)).toBe(false);
  });
});

describe('startSambaAd', () => {
  let ad: SambaAd;
  const started = { ms: 0 };
  beforeAll(async () => {
    const t0 = performance.now();
    ad = await startSambaAd();
    started.ms = performance.now() - t0;
    console.error(`samba AD DC ready in ${Math.round(started.ms)} ms`);
  });
  afterAll(() => ad?.stop());

  const search = (filter: string, attributes: string[], bind = ad.bindUpn, password = ad.bindPassword) =>
    ldap(
      'ldapsearch',
      ['-LLL', '-H', ad.url, '-D', bind, '-w', password, '-b', ad.baseDn, filter, ...attributes],
      { allowFailure: true },
    );

  it('listens on its own veth address, in its own namespace', () => {
    expect(ad.host).toMatch(/^10\.213\.\d{1,3}\.2$/);
    expect(ad.url).toBe(`ldap://${ad.host}`);
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).toContain(ad.netns);
    expect(started.ms).toBeLessThan(30_000);
  });

  it('finds alice by sAMAccountName with her display-name DN and memberOf', async () => {
    const result = await search('(sAMAccountName=alice)', ['memberOf']);
    expect(result.code).toBe(0);
    expect(values(result.stdout, 'dn')).toEqual(['CN=Alice Anderson,CN=Users,DC=example,DC=test']);
    expect(values(result.stdout, 'memberOf').sort()).toEqual([
      'CN=Staff Users,CN=Users,DC=example,DC=test',
      'CN=proxy-users,CN=Users,DC=example,DC=test',
    ]);
  });

  it('binds with the full DN of the bind account too', async () => {
    const result = await search('(sAMAccountName=carol)', ['memberOf'], ad.bindDn);
    expect(result.code).toBe(0);
    expect(values(result.stdout, 'memberOf')).toEqual(['CN=Ünïcødé Group,CN=Users,DC=example,DC=test']);
  });

  it('resolves nesting with LDAP_MATCHING_RULE_IN_CHAIN: bob is in Level2 through Level1', async () => {
    const bob = ad.users.find((u) => u.name === 'bob');
    const result = await search(`(member:1.2.840.113556.1.4.1941:=${bob?.dn})`, ['cn']);
    expect(values(result.stdout, 'cn').sort()).toEqual(['Level1', 'Level2', 'proxy-users']);
  });

  it('answers a wrong password with 49 and "data 52e"', async () => {
    const result = await search('(sAMAccountName=alice)', ['cn'], 'alice@example.test', 'wrong');
    expect(result.code).toBe(49);
    expect(result.stderr).toMatch(/AcceptSecurityContext error, data 52e/);
  });

  it('speaks LDAPS and StartTLS with a certificate for its address', async () => {
    const env = { ...process.env, LDAPTLS_CACERT: ad.caFile };
    const alice = ad.users.find((u) => u.name === 'alice');
    for (const [url, extra] of [
      [ad.ldapsUrl, []],
      [ad.url, ['-ZZ']],
    ] as const) {
      const result = await ldap(
        'ldapsearch',
        [
          '-LLL',
          '-H',
          url,
          ...extra,
          '-D',
          alice?.upn ?? '',
          '-w',
          alice?.password ?? '',
          '-b',
          ad.baseDn,
          '(sAMAccountName=alice)',
          'sAMAccountName',
        ],
        { env },
      );
      expect(values(result.stdout, 'sAMAccountName')).toEqual(['alice']);
    }
  });

  it('issues Kerberos tickets to host-side clients (krb5ConfFile)', async () => {
    const env = {
      ...process.env,
      KRB5_CONFIG: ad.krb5ConfFile,
      KRB5CCNAME: `FILE:${join(ad.dir, 'alice.ccache')}`,
    };
    await run('kinit', ['alice'], { env, input: 'Passw0rd!\n' });
    expect((await run('klist', [], { env })).stdout).toContain('alice@EXAMPLE.TEST');
  });

  it('runs commands and samba-tool inside the namespace (winbindd answers there)', async () => {
    const wbinfo = await ad.exec('wbinfo', ['-a', 'EXAMPLE\\alice%Passw0rd!']);
    expect(wbinfo.stdout).toMatch(/plaintext password authentication succeeded/);
    const list = await ad.samba(['user', 'list']);
    expect(list.stdout.split('\n')).toEqual(expect.arrayContaining(['alice', 'bob', 'carol', 'squidbind']));
  });

  it('stop() removes the processes, the namespace and the directory', async () => {
    const pids = execFileSync('ip', ['netns', 'pids', ad.netns], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
    expect(pids).toContain(ad.pid);
    await ad.stop();
    expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })).not.toContain(ad.netns);
    expect(execFileSync('ip', ['link', 'show'], { encoding: 'utf8' })).not.toContain(ad.netns.slice(-6));
    expect(existsSync(ad.dir)).toBe(false);
    // Samba's children (winbindd, smbd) were SIGKILLed too; init reaps the orphans within moments.
    await expect.poll(() => pids.filter(isAlive), { timeout: 5000 }).toEqual([]);
  });
});
