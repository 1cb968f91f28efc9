import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type Clock, systemClock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import type { SettingsTest } from '../directory/directory.ts';
import { dnsDomainOf } from '../directory/dn.ts';
import { showValue } from '../errors.ts';
import { readCapped } from '../fs/read-capped.ts';
import {
  ensureRootDirectory,
  setRootEntryAccess,
  trustedDirectoryPath,
  writeRootFile,
} from '../fs/root-owned.ts';
import type { AppliedDirectory } from '../store/directory-settings-store.ts';
import type { NtlmClientsSeen } from '../store/ntlm-client-store.ts';
import type { SeamlessState } from '../store/seamless-settings-store.ts';
import type { CheckId, DoctorContext } from './doctor/checks.ts';
import { MAX_NAMED_CLIENTS, runDoctorChecks } from './doctor/checks.ts';
import { type GatherIo, gatherFacts } from './doctor/gather.ts';
import { type DoctorReport, doctorReport } from './doctor/report.ts';
import {
  adminArgument,
  type DomainTools,
  isJoined,
  joinDomain,
  setEncryptionTypes,
  type StepOutcome,
  writeHttpKeys,
} from './join.ts';
import { MAX_KEYTAB_BYTES, parseKeytab } from './keytab.ts';
import { leaveDomain, removeSambaState } from './leave.ts';
import { seamlessPaths, type SeamlessPaths } from './paths.ts';
import type { CommandRunner } from './run-command.ts';
import { machineNetbiosName, memberKrb5Conf, memberSmbConf } from './samba-config.ts';
import {
  parseAdminUser,
  type SeamlessAvailability,
  type SeamlessSettings,
  seamlessAvailability,
} from './settings.ts';
import { resumeWinbindd } from './resume.ts';
import {
  openPrivilegedPipe,
  type ProcessControl,
  realProcesses,
  runningPid,
  startWinbindd,
  stopDaemons,
  trustCheck,
} from './winbindd.ts';

/**
 * Enable, Disable, status and the doctor: what `doorman seamless …` (root, in-process) and the admin screen
 * (through serve's privileged child, privileged.ts) call. Each step is reported as it starts and as it ends,
 * so the CLI prints a line per step and the admin page streams them; the first failing step stops the run
 * with its fix. Every outside effect goes through the injected dependencies (commands, processes, the stores,
 * the doctor's I/O, Squid's include), so the sequence is tested with fakes (test/unit/lib/seamless/control).
 *
 * Enable on a joined proxy is the repair (lab §6.1): the join is skipped while `net ads testjoin` says it works,
 * but the keytab, the encryption types, winbindd and the checks are always done again, because a re-join by
 * someone else leaves the keytab stale.
 */

export interface SeamlessStep {
  id: string;
  title: string;
  status: 'running' | 'ok' | 'fail' | 'skipped';
  detail?: string;
  fix?: string;
}

export interface SeamlessStatus {
  availability: SeamlessAvailability;
  state?: SeamlessState;
  winbind?: 'running' | 'stopped';
  trust?: 'ok' | 'fail';
}

export interface SeamlessControl {
  status(): Promise<SeamlessStatus>;
  enable(
    settings: SeamlessSettings,
    password: Buffer,
    onStep: (step: SeamlessStep) => void,
  ): Promise<{ ok: boolean; doctor?: DoctorReport }>;
  disable(
    admin: { user: string; password: Buffer } | undefined,
    onStep: (step: SeamlessStep) => void,
  ): Promise<{ ok: boolean }>;
  doctor(): Promise<DoctorReport>;
  /**
   * On a joined proxy whose winbindd is not running (after a reboot), start it and give its privileged pipe to
   * the helper group again (resume.ts); skipped when not joined, nothing done when it runs.
   */
  resume(): Promise<StepOutcome>;
}

/** The store as the control uses it (the CLI's is opened as the service user, see cli/commands/seamless.ts). */
export interface SeamlessStoreAccess {
  current(): SeamlessState | undefined;
  save(state: SeamlessState): void;
  clear(): void;
  /** The addresses whose handshakes carried NTLM since a time, for the doctor; absent: not recorded. */
  ntlmClients?(since: number, limit: number): NtlmClientsSeen;
}

export interface SeamlessDeps {
  run: CommandRunner;
  processes: ProcessControl;
  clock: Clock;
  store: SeamlessStoreAccess;
  /** The directory settings in force (undefined: none applied). */
  directory(): AppliedDirectory | undefined;
  /** Save & apply's own test, on the settings in force (directory.ts testSettings). */
  testDirectory(applied: AppliedDirectory): Promise<SettingsTest>;
  /** Squid's helper user (config.serviceUser) as NSS knows it. */
  helperAccount(): { name: string; uid: number; gid: number };
  /** The doctor's transports for the directory in force. */
  gatherIo(directory: AppliedDirectory | undefined): GatherIo;
  /**
   * This host's name; its first label is the computer name. Default: the computer name already joined, as
   * root's own smb.conf in sambaDir has it (a repair keeps the account, whatever the host is called now), else
   * os.hostname().
   */
  hostName?: string;
  /** Write Squid's include again and reconfigure Squid; undefined: the step tells the admin how. */
  regenerateSquid?: () => Promise<StepOutcome>;
  /** Where libwbclient looks for winbindd (compiled in: /run/samba); made if missing. */
  winbindSocketParent?: string;
}

type Report = (step: SeamlessStep) => void;

/** How far back the doctor looks for clients that used NTLM. */
const DAY_MS = 86_400_000;

/** The doctor's checks of the keytab that Enable's verify step stands or falls by. */
const KEY_CHECKS: readonly CheckId[] = ['keytab-spn', 'kvno', 'enctypes', 'keytab-access'];

/** Run one step: report it running, then its outcome; a throw is a failure with its message. */
async function step(
  onStep: Report,
  id: string,
  title: string,
  work: () => Promise<StepOutcome>,
): Promise<boolean> {
  onStep({ id, title, status: 'running' });
  let outcome: StepOutcome;
  try {
    outcome = await work();
  } catch (error) {
    outcome = {
      ok: false,
      detail: error instanceof Error ? error.message : String(error),
      fix: 'see the message; `doorman seamless doctor` checks the prerequisites',
    };
  }
  if (outcome.ok) {
    onStep({ id, title, status: outcome.skipped === true ? 'skipped' : 'ok', detail: outcome.detail });
    return true;
  }
  onStep({ id, title, status: 'fail', detail: outcome.detail, fix: outcome.fix });
  return false;
}

/** smb.conf is a few hundred bytes; more is not Doorman's. */
const MAX_SMB_CONF_BYTES = 64 * 1024;

/**
 * The computer name of an earlier join: `netbios name` in root's own smb.conf, read only from a sambaDir that
 * is root's alone; undefined when there is none (or it cannot be trusted).
 */
export function joinedNetbiosName(paths: SeamlessPaths): string | undefined {
  try {
    trustedDirectoryPath(paths.sambaDir);
    const text = readCapped(paths.smbConf, MAX_SMB_CONF_BYTES);
    for (const line of text.split('\n')) {
      const [key, value] = line.split('=', 2).map((part) => part.trim());
      if (key === 'netbios name' && value !== undefined && value !== '') return value;
    }
  } catch {
    // No earlier join, or nothing root can believe: the host's own name.
  }
  return undefined;
}

/** The proxy's FQDN: Samba 4.17 names the computer `<netbios name>.<realm>` (its dNSHostName, and the SPN's host). */
export function proxyNames(hostName: string, domain: string): { machineName: string; proxyFqdn: string } {
  const machineName = machineNetbiosName(hostName);
  return { machineName, proxyFqdn: `${machineName.toLowerCase()}.${domain}` };
}

/** The DC the krb5.conf names and the doctor probes: the directory's address, else its host name. */
export function dcOf(applied: AppliedDirectory): string {
  return applied.settings.address ?? applied.settings.host;
}

export function localSeamlessControl(config: Config, deps: SeamlessDeps): SeamlessControl {
  const paths: SeamlessPaths = seamlessPaths(config);
  const tools: DomainTools = { paths, run: deps.run };
  const clock = deps.clock;
  const winbindParent = deps.winbindSocketParent ?? '/run/samba';
  // Not the name in the session DB, which the service user can write: a name planted there (DC01) would make
  // root join, and so take over, another computer's account with the Domain Admin's rights.
  const hostName = () => deps.hostName ?? joinedNetbiosName(paths)?.toLowerCase() ?? hostname();

  const availability = (): { availability: SeamlessAvailability; applied?: AppliedDirectory } => {
    let applied: AppliedDirectory | undefined;
    try {
      applied = deps.directory();
    } catch (error) {
      return {
        availability: {
          ok: false,
          code: 'DIRECTORY_FAILING',
          reason: `the directory settings cannot be read (${(error as Error).message}): apply them again first`,
        },
      };
    }
    const result = seamlessAvailability(applied);
    return applied === undefined ? { availability: result } : { availability: result, applied };
  };

  const doctorContext = (state: SeamlessState, applied: AppliedDirectory | undefined): DoctorContext => ({
    fqdn: state.proxyFqdn,
    realm: state.realm,
    serverVersion: state.serverVersion,
    dc: applied === undefined ? `dc of ${state.realm}` : dcOf(applied),
    keytabPath: paths.keytab,
    privilegedPipeDir: paths.winbindPrivilegedDir,
    helperGroup: safeHelperName(),
  });

  const safeHelperName = () => {
    try {
      return deps.helperAccount().name;
    } catch {
      return config.serviceUser;
    }
  };

  /** The doctor's list of NTLM clients; throws (the fact is then unavailable) when nothing records them. */
  const ntlmClientsOfLastDay = () => {
    if (deps.store.ntlmClients === undefined) throw new Error('no record of NTLM clients here');
    return deps.store.ntlmClients(clock.now() - DAY_MS, MAX_NAMED_CLIENTS);
  };

  const runDoctor = async (
    state: SeamlessState,
    applied: AppliedDirectory | undefined,
    joined: boolean,
    only?: readonly CheckId[],
  ): Promise<DoctorReport> => {
    const context = doctorContext(state, applied);
    const facts = await gatherFacts(deps.gatherIo(applied), {
      context,
      machineName: state.machineName,
      serviceUser: config.serviceUser,
      joined,
      ...(joined && { ntlmClients: () => ntlmClientsOfLastDay() }),
    });
    const results = runDoctorChecks(context, facts);
    return doctorReport(only === undefined ? results : results.filter((r) => only.includes(r.id)));
  };

  /** The state Enable would save, before the join: the doctor's context for the prerequisites. */
  const draftState = (settings: SeamlessSettings): SeamlessState => {
    const names = proxyNames(hostName(), settings.domain);
    return {
      serverVersion: settings.serverVersion,
      domain: settings.domain,
      realm: settings.realm,
      netbios: settings.netbiosDomain,
      adminUser: adminArgument(settings.adminUser),
      proxyFqdn: names.proxyFqdn,
      machineName: names.machineName,
      joinedAt: clock.now(),
    };
  };

  const writeConfiguration = (
    settings: SeamlessSettings,
    applied: AppliedDirectory,
    machineName: string,
  ): StepOutcome => {
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
    for (const sub of ['private', 'lock', 'cache', 'run', 'log'])
      ensureRootDirectory(join(samba, sub), 0o700);
    ensureRootDirectory(join(samba, 'state'), 0o750, helper.gid);
    writeRootFile(paths.smbConf, smb, 0o644);
    writeRootFile(paths.krb5Conf, krb5, 0o644);
    // libwbclient (wbinfo, ntlm_auth) has /run/samba/winbindd compiled in (lab trap 3).
    mkdirSync(winbindParent, { recursive: true, mode: 0o755 });
    return { ok: true, detail: `wrote ${paths.smbConf} and ${paths.krb5Conf} (KDC ${dcOf(applied)})` };
  };

  const replaceKeytab = async (): Promise<StepOutcome> => {
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
  };

  const privilegedPipe = (): StepOutcome => openPrivilegedPipe(paths, deps.helperAccount());

  /** The keytab's checks of the joined set-up's full doctor report (which Enable then shows as it is). */
  const verifyKeys = async (report: DoctorReport, applied: AppliedDirectory): Promise<StepOutcome> => {
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
  };

  const squidStep = async (onStep: Report): Promise<boolean> =>
    step(onStep, 'squid', "Update Squid's configuration", async () => {
      if (deps.regenerateSquid !== undefined) return deps.regenerateSquid();
      return {
        ok: true,
        skipped: true,
        detail:
          'Squid was not told: write the include again and reconfigure Squid: (umask 077; doorman squid-conf > /etc/squid/conf.d/doorman.conf) && squid -k parse && squid -k reconfigure (removing an authentication scheme needs a Squid restart); set squid.seamless.squidInclude in the configuration to have it done here',
      };
    });

  return {
    async status() {
      const { availability: result } = availability();
      const state = deps.store.current();
      if (state === undefined) return { availability: result };
      const running = runningPid(tools, 'winbindd', deps.processes) !== undefined;
      const status: SeamlessStatus = {
        availability: result,
        state,
        winbind: running ? 'running' : 'stopped',
      };
      status.trust = running && (await trustCheck(tools)).ok ? 'ok' : 'fail';
      return status;
    },

    async enable(settings, password, onStep) {
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
            async () => writeConfiguration(settings, applied as AppliedDirectory, draft.machineName),
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
          ['keytab', 'Register HTTP/ service principals and write the keytab', replaceKeytab],
          [
            'enctypes',
            'Set the encryption types of the computer account',
            () => setEncryptionTypes(tools, draft.machineName, settings.serverVersion),
          ],
          ['winbindd', 'Start winbindd', () => startWinbindd(tools, deps.processes)],
          [
            'privileged-pipe',
            "Open winbind's privileged pipe to Squid's helper user",
            async () => privilegedPipe(),
          ],
          ['trust', 'Check the trust to the domain', () => trustCheck(tools)],
          [
            'verify',
            'Check the keytab against the domain controller',
            async () => {
              joinedReport = await runDoctor(draft, applied, true);
              return verifyKeys(joinedReport, applied as AppliedDirectory);
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
        await squidStep(onStep);
        return { ok: true, doctor: joinedReport as DoctorReport };
      } finally {
        password.fill(0);
      }
    },

    async disable(admin, onStep) {
      try {
        const state = deps.store.current();
        if (admin !== undefined) {
          const left = await step(onStep, 'leave', 'Leave the domain', async () => {
            if (!existsSync(paths.smbConf)) {
              return {
                ok: true,
                skipped: true,
                detail: 'no smb.conf: this proxy was not joined by Doorman (nothing to leave)',
              };
            }
            const user = parseAdminUser(admin.user);
            if (typeof user === 'string') {
              return {
                ok: false,
                detail: `adminUser: ${showValue(admin.user)} ${user}`,
                fix: 'give the Domain Admin as user, DOMAIN\\user or user@REALM',
              };
            }
            return leaveDomain(tools, user, admin.password);
          });
          admin.password.fill(0);
          if (!left) return { ok: false };
        } else {
          onStep({
            id: 'leave',
            title: 'Leave the domain',
            status: 'skipped',
            detail: `local disable: the computer account${state === undefined ? '' : ` ${state.machineName}$`} stays in the domain`,
            fix: 'delete the computer account in Active Directory Users and Computers (or samba-tool computer delete)',
          });
        }
        const steps: [string, string, () => Promise<StepOutcome>][] = [
          [
            'winbindd',
            'Stop winbindd and samba-dcerpcd',
            async () => ({ ok: true, detail: await stopDaemons(tools, deps.processes) }),
          ],
          [
            'files',
            "Delete the keytab and Samba's state",
            async () => {
              // The replay cache in stateDir is the helper user's: root leaves it alone.
              const removed = removeSambaState(paths.sambaDir);
              return {
                ok: true,
                detail:
                  removed.length === 0
                    ? 'nothing to delete'
                    : `deleted ${removed.map((name) => join(paths.sambaDir, name)).join(', ')}`,
              };
            },
          ],
          [
            'save',
            'Clear the seamless settings',
            async () => {
              deps.store.clear();
              return { ok: true, detail: 'seamless authentication is disabled' };
            },
          ],
        ];
        for (const [id, title, work] of steps) {
          if (!(await step(onStep, id, title, work))) return { ok: false };
        }
        await squidStep(onStep);
        return { ok: true };
      } finally {
        admin?.password.fill(0);
      }
    },

    async resume() {
      try {
        return await resumeWinbindd(tools, {
          joined: deps.store.current() !== undefined,
          processes: deps.processes,
          winbindSocketParent: winbindParent,
          helperAccount: deps.helperAccount,
        });
      } catch (error) {
        return {
          ok: false,
          detail: error instanceof Error ? error.message : String(error),
          fix: 'see the message; `doorman seamless doctor` checks the prerequisites',
        };
      }
    },

    async doctor() {
      const { applied } = availability();
      const state = deps.store.current();
      if (state !== undefined) return runDoctor(state, applied, true);
      // Not enabled: the prerequisites as Enable would see them, with the domain of the directory's base DN.
      const domain = applied === undefined ? undefined : dnsDomainOf(applied.settings.baseDn);
      // Nothing to check against: no Windows domain is known.
      if (domain === undefined || !domain.includes('.')) return { ...doctorReport([]), ok: false };
      const draft = draftState({
        serverVersion: '2012',
        domain,
        realm: domain.toUpperCase(),
        netbiosDomain: (domain.split('.')[0] ?? '').toUpperCase(),
        adminUser: { account: '-', form: 'short' },
      });
      return runDoctor(draft, applied, false, ['dns-a', 'dns-ptr', 'clock', 'ports', 'clients-fqdn']);
    },
  };
}

/** The defaults of the dependencies that need no DB: commands, processes, clock. */
export const defaultSeamlessDeps = {
  processes: realProcesses,
  clock: systemClock,
} as const;
