import { hostname } from 'node:os';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import type { SettingsTest } from '../directory/directory.ts';
import { readCapped } from '../fs/read-capped.ts';
import { trustedDirectoryPath } from '../fs/root-owned.ts';
import type { AppliedDirectory } from '../store/directory-settings-store.ts';
import type { NtlmClientsSeen } from '../store/ntlm-client-store.ts';
import type { SeamlessState } from '../store/seamless-settings-store.ts';
import type { CheckId, DoctorContext } from './doctor/check-result.ts';
import { runDoctorChecks } from './doctor/checks.ts';
import { type GatherIo, gatherFacts } from './doctor/gather.ts';
import { MAX_NAMED_CLIENTS } from './doctor/ntlm-checks.ts';
import { type DoctorReport, doctorReport } from './doctor/report.ts';
import { adminArgument, type DomainTools, type StepOutcome } from './join.ts';
import { seamlessPaths, type SeamlessPaths } from './paths.ts';
import type { CommandRunner } from './run-command.ts';
import { machineNetbiosName } from './samba-config.ts';
import { type SeamlessAvailability, type SeamlessSettings, seamlessAvailability } from './settings.ts';
import type { ProcessControl } from './winbindd.ts';

/**
 * What Enable, Disable, status, the doctor and resume share: the injected dependencies, the paths and tools
 * made from the configuration, the directory in force and the doctor run on a seamless state.
 */

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

/** What every part of the control works with (seamlessContext). */
export interface SeamlessContext {
  config: Config;
  deps: SeamlessDeps;
  paths: SeamlessPaths;
  tools: DomainTools;
  clock: Clock;
  winbindParent: string;
  /** The directory in force and whether seamless authentication can work with it. */
  availability(): { availability: SeamlessAvailability; applied?: AppliedDirectory };
  /** The doctor's report on a state (only: the checks kept). */
  runDoctor(
    state: SeamlessState,
    applied: AppliedDirectory | undefined,
    joined: boolean,
    only?: readonly CheckId[],
  ): Promise<DoctorReport>;
  /** The state Enable would save, before the join: the doctor's context for the prerequisites. */
  draftState(settings: SeamlessSettings): SeamlessState;
}

/** How far back the doctor looks for clients that used NTLM. */
const DAY_MS = 86_400_000;

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

export function seamlessContext(config: Config, deps: SeamlessDeps): SeamlessContext {
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

  return { config, deps, paths, tools, clock, winbindParent, availability, runDoctor, draftState };
}
