import { chmodSync, chownSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../lib/seamless/doctor/report.ts';
import { seamlessPaths } from '../../lib/seamless/paths.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { startSambaAd, type SambaAd } from '../harness/samba-ad.ts';
import { sampleCommandLines, startSeamlessMember, type SeamlessMember } from '../harness/seamless-member.ts';

/**
 * `doorman seamless enable` against a real Samba AD DC (samba-ad.ts, its own network namespace), the proxy
 * host in a mount namespace of its own (seamless-member.ts): the join with the administrator's password on
 * stdin only, the keytab, winbindd and the trust; the doctor green, then each broken state the lab found
 * reported with its fix; Disable deleting the computer account; Enable again.
 */
let ad: SambaAd;
let member: SeamlessMember;
let paths: ReturnType<typeof seamlessPaths>;

beforeAll(async () => {
  ad = await startSambaAd();
  member = await startSeamlessMember(ad);
  paths = seamlessPaths({ stateDir: member.stateDir, sambaDir: null });
}, 120_000);
afterAll(async () => {
  await member?.stop();
  await ad?.stop();
});

const enable = () => member.enable();

async function doctor(): Promise<DoctorReport & { code: number | null }> {
  const result = await member.doorman(['seamless', 'doctor', '--json'], { allowFailure: true });
  return { ...(JSON.parse(result.stdout) as DoctorReport), code: result.code };
}

const check = (report: DoctorReport, id: string) => report.checks.find((c) => c.id === id);

const computers = async () => (await ad.samba(['computer', 'list'])).stdout;

describe('doorman seamless enable', () => {
  it('joins with the password on stdin, never in a command line, and reports each step', async () => {
    const sampler = sampleCommandLines(join(member.dir, 'ps.log'));
    const result = await enable();
    const seen = await sampler.stop();
    expect(result.stderr).toBe('');
    expect(result.code, result.stdout).toBe(0);
    const steps = result.stdout.split('\n').filter((line) => line.startsWith('['));
    expect(steps.map((line) => line.slice(0, 7))).toEqual([
      '[ok  ] ', // preconditions
      '[ok  ] ', // configuration
      '[ok  ] ', // join
      '[ok  ] ', // keytab
      '[ok  ] ', // enctypes
      '[ok  ] ', // winbindd
      '[ok  ] ', // privileged pipe
      '[ok  ] ', // trust
      '[ok  ] ', // verify
      '[ok  ] ', // save
      '[skip] ', // squid: no --squid-include
      ...Array<string>(10).fill('[ok  ] '), // the doctor: every check
      '[ok  ] ', // clients-fqdn: no client fell back to NTLM (nothing recorded in the last day)
    ]);
    expect(result.stdout).toMatch(/\[ok {2}\] Join PROXY to EXAMPLE\.TEST: joined PROXY to example\.test\n/);
    expect(result.stdout).toMatch(/All Kerberos prerequisites are met/);
    // The sampler really saw the join's commands, and never the password.
    expect(seen).toMatch(/net ads join --user=Administrator/);
    expect(seen.split('\n').length).toBeGreaterThan(100);
    expect(seen.includes(ad.adminPassword)).toBe(false);
    expect(await computers()).toMatch(/^PROXY\$$/m);
  });

  it('leaves a keytab of HTTP/ keys only, root:<helper group> 0640, and a working trust', async () => {
    const stat = statSync(paths.keytab);
    expect([stat.uid, stat.gid, stat.mode & 0o777]).toEqual([0, lookupUser('proxy').gid, 0o640]);
    const listed = (await member.exec('klist', ['-k', paths.keytab])).stdout;
    const principals = new Set(
      listed
        .split('\n')
        .slice(3)
        .map((l) => l.trim().split(/\s+/)[1])
        .filter(Boolean),
    );
    expect([...principals].sort()).toEqual([
      'HTTP/PROXY@EXAMPLE.TEST',
      'HTTP/proxy.example.test@EXAMPLE.TEST',
    ]);
    expect((await member.exec('wbinfo', ['-t'])).stdout).toMatch(/succeeded/);
    const status = await member.doorman(['seamless', 'status', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({
      availability: { ok: true },
      state: {
        machineName: 'PROXY',
        proxyFqdn: 'proxy.example.test',
        realm: 'EXAMPLE.TEST',
        netbios: 'EXAMPLE',
      },
      winbind: 'running',
      trust: 'ok',
    });
  });
});

describe('doorman seamless doctor', () => {
  it('is all green on the joined proxy', async () => {
    const report = await doctor();
    expect(report.checks.filter((c) => c.status !== 'ok' && c.status !== 'note')).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.code).toBe(0);
  });

  it('reports a missing PTR record, and one pointing elsewhere, each with its fix', async () => {
    await member.dns(['delete', ad.host, member.reverseZone, member.ptrName, 'PTR', member.fqdn]);
    try {
      const missing = await doctor();
      expect(missing.code).toBe(1);
      expect(check(missing, 'dns-ptr')).toMatchObject({
        status: 'fail',
        detail: expect.stringMatching(/no such name|no records/),
        fix: expect.stringContaining(
          `add the PTR record ${member.ptrName}.${member.reverseZone} → proxy.example.test.`,
        ),
      });
      await member.dns(['add', ad.host, member.reverseZone, member.ptrName, 'PTR', 'other.example.test']);
      const other = await doctor();
      expect(check(other, 'dns-ptr')).toMatchObject({
        status: 'fail',
        detail: `${member.address} points to other.example.test, not proxy.example.test`,
        fix: expect.stringContaining('from other.example.test to proxy.example.test'),
      });
      await member.dns(['delete', ad.host, member.reverseZone, member.ptrName, 'PTR', 'other.example.test']);
    } finally {
      await member.dns(['add', ad.host, member.reverseZone, member.ptrName, 'PTR', member.fqdn]);
    }
    expect(check(await doctor(), 'dns-ptr')?.status).toBe('ok');
  });

  it('reports a clock 10 minutes fast', async () => {
    // faketime moves the clock of the doctor's own process: the DC's rootDSE time is then 600 s behind.
    const result = await member.exec(
      'faketime',
      [
        '-f',
        '+10m',
        join(import.meta.dirname, '..', '..', 'bin', 'doorman'),
        'seamless',
        'doctor',
        '--json',
        '--config',
        member.configFile,
      ],
      { allowFailure: true },
    );
    const report = JSON.parse(result.stdout) as DoctorReport;
    expect(check(report, 'clock')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(
        /10 min(?: \d+ s)? ahead of \(fast\) the domain controller .*offset -60\d s/,
      ),
      fix: expect.stringContaining('NTP'),
    });
  });

  it('reports a keytab the helper user cannot read', async () => {
    chmodSync(paths.keytab, 0o600);
    try {
      expect(check(await doctor(), 'keytab-access')).toMatchObject({
        status: 'fail',
        detail: expect.stringContaining('proxy may not read it'),
        fix: `chown root:proxy ${paths.keytab}; chmod 640 ${paths.keytab}`,
      });
    } finally {
      chmodSync(paths.keytab, 0o640);
    }
  });

  it('reports a stale key version after a re-join by hand, and Enable repairs it', async () => {
    // Someone joins again with net itself: a new machine password (kvno + 1), the keytab untouched (lab §6.1).
    await member.exec(
      'net',
      ['ads', 'join', '-U', 'Administrator', '-s', paths.smbConf, '--no-dns-updates'],
      {
        input: `${ad.adminPassword}\n`,
        env: { ...process.env, KRB5_CONFIG: paths.krb5Conf },
      },
    );
    const stale = await doctor();
    expect(check(stale, 'kvno')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(
        /key version 1 of HTTP\/proxy\.example\.test@EXAMPLE\.TEST, the domain controller's current one is 2/,
      ),
      fix: expect.stringContaining('doorman seamless enable'),
    });
    const repaired = await enable();
    expect(repaired.code, repaired.stdout).toBe(0);
    expect(repaired.stdout).toMatch(/\[skip\] Join PROXY to EXAMPLE\.TEST: already joined/);
    expect(check(await doctor(), 'kvno')).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining('key version 2'),
    });
  });
});

describe('doorman seamless disable', () => {
  it('deletes the computer account, stops winbindd, removes the keytab; Enable works again', async () => {
    const result = await member.doorman(['seamless', 'disable', '--admin', 'Administrator'], {
      input: `${ad.adminPassword}\n`,
      allowFailure: true,
    });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /\[ok {2}\] Leave the domain: deleted the computer account PROXY in EXAMPLE\.TEST/i,
    );
    expect(await computers()).not.toMatch(/^PROXY\$$/m);
    expect(existsSync(paths.keytab)).toBe(false);
    expect(existsSync(join(paths.sambaDir, 'private'))).toBe(false);
    expect((await member.exec('wbinfo', ['-p'], { allowFailure: true })).code).not.toBe(0);
    const status = await member.doorman(['seamless', 'status', '--json']);
    expect(JSON.parse(status.stdout)).not.toHaveProperty('state');

    const again = await enable();
    expect(again.code, again.stdout).toBe(0);
    expect(await computers()).toMatch(/^PROXY\$$/m);
    const report = await doctor();
    expect(report.checks.filter((c) => c.status !== 'ok' && c.status !== 'note')).toEqual([]);
  });
});

/** What a reboot leaves: winbindd and samba-dcerpcd gone (pid files stale), /run/samba (a tmpfs) empty. */
async function reboot(): Promise<void> {
  for (const daemon of ['winbindd', 'samba-dcerpcd']) {
    const file = join(paths.sambaDir, 'run', `${daemon}.pid`);
    if (!existsSync(file)) continue;
    const pid = Number(readFileSync(file, 'utf8').trim());
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      continue; // not running
    }
    for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i += 1)
      await new Promise((r) => setTimeout(r, 50));
  }
  const runSamba = join(member.dir, 'run-samba'); // the member's /run/samba
  for (const entry of readdirSync(runSamba)) rmSync(join(runSamba, entry), { recursive: true, force: true });
  // As winbindd makes it: root's group, so the helper user's ntlm_auth is refused until it is given again.
  chownSync(paths.winbindPrivilegedDir, 0, 0);
}

/**
 * An NTLMv2 challenge/response through winbind's privileged pipe, as Squid's helper user (ntlm_auth under authd)
 * makes it: `wbinfo --ntlmv2 -a` (plaintext, then challenge/response) run as that user.
 */
const ntlmAsHelperUser = () =>
  member.exec(
    'setpriv',
    [
      '--reuid=proxy',
      '--regid=proxy',
      '--init-groups',
      'wbinfo',
      '--ntlmv2',
      '-a',
      `EXAMPLE\\alice%${ad.users[0]?.password ?? ''}`,
    ],
    { allowFailure: true },
  );

describe('doorman seamless resume', () => {
  it('after a reboot, starts winbindd and opens its pipe again: the trust and NTLM work, with no Enable', async () => {
    await reboot();
    expect((await member.exec('wbinfo', ['-t'], { allowFailure: true })).code).not.toBe(0);
    expect((await ntlmAsHelperUser()).code).not.toBe(0);

    const result = await member.doorman(['seamless', 'resume'], { allowFailure: true });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^\[ok {2}\] Start winbindd: winbindd answers \(started\); .* is root:proxy 0750/,
    );
    expect((await member.exec('wbinfo', ['-t'])).stdout).toMatch(/succeeded/);
    const ntlm = await ntlmAsHelperUser();
    expect(ntlm.code, ntlm.stdout + ntlm.stderr).toBe(0);
    expect(statSync(paths.winbindPrivilegedDir).gid).toBe(lookupUser('proxy').gid);

    // Once more: winbindd runs, nothing is done.
    const again = await member.doorman(['seamless', 'resume']);
    expect(again.stdout).toMatch(/^\[ok {2}\] Start winbindd: winbindd is running \(pid \d+\)$/m);
  });
});
