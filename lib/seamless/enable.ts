import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  ensureRootDirectory,
  setRootEntryAccess,
  trustedDirectoryPath,
  writeRootFile,
} from '../fs/root-owned.ts';
import type { AppliedDirectory } from '../store/directory-settings-store.ts';
import { dcOf, type SeamlessContext } from './context.ts';
import type { CheckId } from './doctor/check-result.ts';
import type { DoctorReport } from './doctor/report.ts';
import { isJoined, joinDomain, setEncryptionTypes, type StepOutcome, writeHttpKeys } from './join.ts';
import { MAX_KEYTAB_BYTES, parseKeytab } from './keytab.ts';
import { memberKrb5Conf, memberSmbConf } from './samba-config.ts';
import type { SeamlessSettings } from './settings.ts';
import { type Report, squidStep, step } from './step.ts';
import { openPrivilegedPipe, startWinbindd, trustCheck } from './winbindd.ts';

/**
 * Enable's steps, run in order by the step runner (step.ts).
 *
 * Enable on a joined proxy is the repair (lab §6.1): the join is skipped while `net ads testjoin` says it works,
 * but the keytab, the encryption types, winbindd and the checks are always done again, because a re-join by
 * someone else leaves the keytab stale.
 */

/** The doctor's checks of the keytab that Enable's verify step stands or falls by. */
const KEY_CHECKS: readonly CheckId[] = ['keytab-spn', 'kvno', 'enctypes', 'keytab-access'];

export function writeConfiguration(
  { deps, paths, winbindParent }: SeamlessContext,
  settings: SeamlessSettings,
  applied: AppliedDirectory,
  machineName: string,
): StepOutcome {
  const helper = deps.helperAccount();
  const smb = memberSmbConf({
    serverVersion: settings.serverVersion,
    netbiosDomain: settings.netbiosDomain,
    realm: settings.realm,
    proxyHostName: machineName,
    sambaDir: paths.sambaDir,
  });
  const krb5 = memberKrb5Conf({
    serverVersion: settings.serverVersion,
    domain: settings.domain,
    realm: settings.realm,
    kdc: dcOf(applied),
  });
  // sambaDir is root's alone, and so is every directory above it (else this throws UNSAFE_PATH): nothing
  // in it can be planted by the service user. Squid's helper user gets through it (group) to the keytab
  // and to winbind's privileged pipe (state/winbindd_privileged, which winbindd makes 0750 and we give the
  // helper group); nothing else in it is theirs to read: private/ holds the machine secret. The replay
  // cache is not root's business: authd makes it, as the helper user.
  const samba = trustedDirectoryPath(paths.sambaDir);
  ensureRootDirectory(samba, 0o750, helper.gid);
  for (const sub of ['private', 'lock', 'cache', 'run', 'log']) ensureRootDirectory(join(samba, sub), 0o700);
  ensureRootDirectory(join(samba, 'state'), 0o750, helper.gid);
  writeRootFile(paths.smbConf, smb, 0o644);
  writeRootFile(paths.krb5Conf, krb5, 0o644);
  // libwbclient (wbinfo, ntlm_auth) has /run/samba/winbindd compiled in (lab trap 3).
  mkdirSync(winbindParent, { recursive: true, mode: 0o755 });
  return { ok: true, detail: `wrote ${paths.smbConf} and ${paths.krb5Conf} (KDC ${dcOf(applied)})` };
}

export async function replaceKeytab({ deps, paths, tools }: SeamlessContext): Promise<StepOutcome> {
  const helper = deps.helperAccount();
  trustedDirectoryPath(paths.sambaDir);
  const temp = `${paths.keytab}.new`;
  rmSync(temp, { force: true });
  const written = await writeHttpKeys(tools, temp);
  if (!written.ok) {
    rmSync(temp, { force: true });
    return written;
  }
  if (!existsSync(temp)) {
    return {
      ok: false,
      detail: 'net ads keytab add_update_ads reported success but wrote no keytab',
      fix: 'check that smb.conf has "kerberos method = dedicated keytab" (Enable writes it), then Enable again',
    };
  }
  // root:<helper group> 0640 before it takes the live name: the acceptor (the helper user) reads it.
  setRootEntryAccess(temp, 'file', 0o640, helper.gid);
  renameSync(temp, paths.keytab);
  return { ok: true, detail: `${written.detail}; ${paths.keytab} is root:${helper.name} 0640` };
}

export function privilegedPipe({ deps, paths }: SeamlessContext): StepOutcome {
  return openPrivilegedPipe(paths, deps.helperAccount());
}

/** The keytab's checks of the joined set-up's full doctor report (which Enable then shows as it is). */
export async function verifyKeys(
  { deps, paths }: SeamlessContext,
  report: DoctorReport,
  applied: AppliedDirectory,
): Promise<StepOutcome> {
  const checks = report.checks.filter((c) => KEY_CHECKS.includes(c.id));
  const failed = checks.filter((c) => c.status !== 'ok');
  if (failed.length === 0) {
    const entries = parseKeytab(await deps.gatherIo(applied).readFile(paths.keytab, MAX_KEYTAB_BYTES));
    const kvno = Math.max(0, ...entries.map((e) => e.kvno));
    return {
      ok: true,
      detail: `the keytab's key version ${kvno} is the domain controller's; ${checks.map((c) => c.id).join(', ')} ok`,
    };
  }
  return {
    ok: false,
    detail: failed.map((c) => `${c.id}: ${c.detail}`).join('; '),
    fix: failed
      .map((c) => c.fix)
      .filter((f) => f !== undefined)
      .join('; '),
  };
}

/** Enable (or repair): each step reported through onStep; the password is zeroed whatever happens. */
export async function enable(
  ctx: SeamlessContext,
  settings: SeamlessSettings,
  password: Buffer,
  onStep: Report,
): Promise<{ ok: boolean; doctor?: DoctorReport }> {
  const { deps, tools, clock, availability, runDoctor, draftState } = ctx;
  try {
    const draft = draftState(settings);
    let applied: AppliedDirectory | undefined;
    // Verify gathers every fact of the joined set-up: its report is also the one shown at the end.
    let joinedReport: DoctorReport | undefined;
    const steps: [string, string, () => Promise<StepOutcome>][] = [
      [
        'preconditions',
        'Check the directory service and the network',
        async () => {
          const found = availability();
          if (!found.availability.ok || found.applied === undefined) {
            return {
              ok: false,
              detail: found.availability.ok ? 'no directory applied' : found.availability.reason,
              fix: 'apply a Windows domain (Active Directory) on the Directory service settings screen, or with `doorman directory set --kind active-directory …`',
            };
          }
          applied = found.applied;
          const tested = await deps.testDirectory(applied);
          if (!tested.ok) {
            return {
              ok: false,
              detail: `the directory service does not work now: ${tested.error.message}`,
              fix: 'fix it on the Directory service settings screen (or check with `doorman directory test`) first',
            };
          }
          // A wrong clock or an unreachable DC dooms the join: stop here, with the doctor's fix.
          const report = await runDoctor(draft, applied, false, ['clock', 'ports', 'dns-a', 'dns-ptr']);
          const blocking = report.checks.filter(
            (c) => (c.id === 'clock' || c.id === 'ports') && c.status !== 'ok',
          );
          const dns = report.checks.filter((c) => c.id.startsWith('dns-') && c.status !== 'ok');
          const warnings = dns.map((c) => `warning: ${c.detail} (fix: ${c.fix ?? ''})`);
          if (blocking.length > 0) {
            return {
              ok: false,
              detail: [...blocking.map((c) => c.detail), ...warnings].join('; '),
              fix: blocking.map((c) => c.fix).join('; '),
            };
          }
          return {
            ok: true,
            detail: [
              `directory ${applied.settings.host} works; the DC's clock and ports are fine; ${draft.machineName} will be ${draft.proxyFqdn}`,
              ...warnings,
            ].join('; '),
          };
        },
      ],
      [
        'configuration',
        'Write smb.conf and krb5.conf',
        async () => writeConfiguration(ctx, settings, applied as AppliedDirectory, draft.machineName),
      ],
      [
        'join',
        `Join ${draft.machineName} to ${settings.realm}`,
        async () => {
          if (await isJoined(tools)) {
            return {
              ok: true,
              skipped: true,
              detail: 'already joined and the computer account works (net ads testjoin): kept it',
            };
          }
          return joinDomain(tools, settings.adminUser, password);
        },
      ],
      ['keytab', 'Register HTTP/ service principals and write the keytab', () => replaceKeytab(ctx)],
      [
        'enctypes',
        'Set the encryption types of the computer account',
        () => setEncryptionTypes(tools, draft.machineName, settings.serverVersion),
      ],
      ['winbindd', 'Start winbindd', () => startWinbindd(tools, deps.processes)],
      [
        'privileged-pipe',
        "Open winbind's privileged pipe to Squid's helper user",
        async () => privilegedPipe(ctx),
      ],
      ['trust', 'Check the trust to the domain', () => trustCheck(tools)],
      [
        'verify',
        'Check the keytab against the domain controller',
        async () => {
          joinedReport = await runDoctor(draft, applied, true);
          return verifyKeys(ctx, joinedReport, applied as AppliedDirectory);
        },
      ],
      [
        'save',
        'Save the seamless settings',
        async () => {
          deps.store.save({ ...draft, joinedAt: clock.now() });
          return { ok: true, detail: 'seamless authentication is enabled' };
        },
      ],
    ];
    for (const [id, title, work] of steps) {
      const ok = await step(onStep, id, title, work);
      // The password is needed by the join alone: gone as soon as the join is behind us.
      if (id === 'join') password.fill(0);
      if (!ok) return { ok: false };
    }
    await squidStep(onStep, deps);
    return { ok: true, doctor: joinedReport as DoctorReport };
  } finally {
    password.fill(0);
  }
}
