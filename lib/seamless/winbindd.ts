import { readFileSync } from 'node:fs';
import { readCapped } from '../fs/read-capped.ts';
import { setRootEntryAccess, trustedDirectoryPath } from '../fs/root-owned.ts';

/** A pid file holds one number and a newline. */
const MAX_PID_FILE_BYTES = 64;
import { join } from 'node:path';
import type { DomainTools, StepOutcome } from './join.ts';
import { describeFailure } from './run-command.ts';

/**
 * The member's winbindd (NTLM for ntlm_auth, the trust) and the samba-dcerpcd that Samba ≥ 4.16 spawns beside
 * it, which outlives winbindd (lab trap 10): both started from Doorman's smb.conf and stopped by the pid files
 * in its `pid directory` (<sambaDir>/run), never by name, so another Samba on the host is left alone.
 */

/** How processes are signalled and named; injected so the stop logic is tested without real processes. */
export interface ProcessControl {
  /** process.kill; throws ESRCH when there is no such process. */
  kill(pid: number, signal: NodeJS.Signals | 0): void;
  /** /proc/<pid>/comm, or undefined when it is gone. */
  name(pid: number): string | undefined;
  sleep(ms: number): Promise<void>;
}

export const realProcesses: ProcessControl = {
  kill: (pid, signal) => process.kill(pid, signal),
  name: (pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      return undefined;
    }
  },
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export const DAEMONS = ['winbindd', 'samba-dcerpcd'] as const;
export type Daemon = (typeof DAEMONS)[number];

export function pidFile(tools: Pick<DomainTools, 'paths'>, daemon: Daemon): string {
  return join(tools.paths.sambaDir, 'run', `${daemon}.pid`);
}

/** The daemon's pid from its pid file, if that process still runs under the daemon's name. */
export function runningPid(
  tools: Pick<DomainTools, 'paths'>,
  daemon: Daemon,
  processes: ProcessControl,
  read: (file: string) => string = (file) => readCapped(file, MAX_PID_FILE_BYTES),
): number | undefined {
  let text: string;
  try {
    text = read(pidFile(tools, daemon));
  } catch {
    return undefined;
  }
  const pid = Number(text.trim());
  if (!Number.isInteger(pid) || pid <= 1) return undefined;
  // The pid may have been reused since: only a process of that name is ours. comm is cut at 15 characters.
  const name = processes.name(pid);
  return name !== undefined && daemon.startsWith(name) ? pid : undefined;
}

/** SIGTERM, wait up to 5 s, then SIGKILL. Returns what was done, for the step's detail. */
export async function stopDaemon(
  tools: Pick<DomainTools, 'paths'>,
  daemon: Daemon,
  processes: ProcessControl,
  read?: (file: string) => string,
): Promise<string> {
  const pid = runningPid(tools, daemon, processes, read);
  if (pid === undefined) return `${daemon} was not running`;
  const alive = () => {
    try {
      processes.kill(pid, 0);
      return processes.name(pid) !== undefined;
    } catch {
      return false;
    }
  };
  try {
    processes.kill(pid, 'SIGTERM');
  } catch {
    return `${daemon} (pid ${pid}) had just ended`;
  }
  for (let i = 0; i < 50 && alive(); i += 1) await processes.sleep(100);
  if (!alive()) return `stopped ${daemon} (pid ${pid})`;
  try {
    processes.kill(pid, 'SIGKILL');
  } catch {
    // gone between the check and the kill
  }
  return `killed ${daemon} (pid ${pid}), which did not stop within 5 s of SIGTERM`;
}

/** Both daemons, winbindd first (it may spawn samba-dcerpcd while it ends). */
export async function stopDaemons(
  tools: Pick<DomainTools, 'paths'>,
  processes: ProcessControl,
  read?: (file: string) => string,
): Promise<string> {
  const done: string[] = [];
  for (const daemon of DAEMONS) done.push(await stopDaemon(tools, daemon, processes, read));
  return done.join('; ');
}

/** `wbinfo -p`: winbindd answers on /run/samba/winbindd (libwbclient has that path compiled in, lab trap 3). */
export async function winbindPing(tools: DomainTools): Promise<boolean> {
  const outcome = await tools.run({ command: 'wbinfo', args: ['-p'], timeoutMs: 10_000 });
  return outcome.code === 0;
}

/** `wbinfo -t`: the machine account's secure channel to the DC works. */
export async function trustCheck(tools: DomainTools): Promise<StepOutcome> {
  const args = ['-t'];
  const outcome = await tools.run({ command: 'wbinfo', args, timeoutMs: 30_000 });
  if (outcome.code === 0) return { ok: true, detail: 'the trust to the domain works (wbinfo -t)' };
  return {
    ok: false,
    detail: describeFailure({ command: 'wbinfo', args }, outcome),
    fix: 'run Enable seamless again: it restarts winbind and re-joins if the computer account no longer works',
  };
}

/**
 * Start winbindd (`winbindd -D -s smb.conf`: it daemonises and writes its pid file) and wait, up to 10 s, until it
 * answers `wbinfo -p`. Any winbindd of ours still running is stopped first, so the new smb.conf is the one read.
 */
export async function startWinbindd(tools: DomainTools, processes: ProcessControl): Promise<StepOutcome> {
  const stopped = await stopDaemons(tools, processes);
  const args = ['-D', '-s', tools.paths.smbConf];
  const outcome = await tools.run({
    command: 'winbindd',
    args,
    env: { KRB5_CONFIG: tools.paths.krb5Conf },
  });
  if (outcome.code !== 0) {
    return {
      ok: false,
      detail: describeFailure({ command: 'winbindd', args }, outcome),
      fix: `see ${join(tools.paths.sambaDir, 'log', 'winbindd.log')}; is another winbindd (the winbind service) running on /run/samba/winbindd? Stop and disable it (systemctl disable --now winbind), then Enable again`,
    };
  }
  for (let i = 0; i < 100; i += 1) {
    if (runningPid(tools, 'winbindd', processes) !== undefined && (await winbindPing(tools))) {
      return {
        ok: true,
        detail: `winbindd answers (${stopped.includes('stopped') ? 'restarted' : 'started'})`,
      };
    }
    await processes.sleep(100);
  }
  return {
    ok: false,
    detail: 'winbindd was started but did not answer `wbinfo -p` within 10 s',
    fix: `see ${join(tools.paths.sambaDir, 'log', 'winbindd.log')}; is another winbindd (the winbind service) using /run/samba/winbindd? Stop and disable it, then Enable again`,
  };
}

/**
 * winbind's privileged pipe directory (state/winbindd_privileged, which winbindd makes root:root 0750) given to
 * Squid's helper group, so ntlm_auth run as the helper user reaches winbindd (lab trap 11). Only inside a sambaDir
 * that is root's alone (else this throws UNSAFE_PATH).
 */
export function openPrivilegedPipe(
  paths: Pick<DomainTools['paths'], 'sambaDir' | 'winbindPrivilegedDir'>,
  helper: { name: string; gid: number },
): StepOutcome {
  trustedDirectoryPath(paths.sambaDir);
  setRootEntryAccess(paths.winbindPrivilegedDir, 'directory', 0o750, helper.gid);
  return {
    ok: true,
    detail: `${paths.winbindPrivilegedDir} is root:${helper.name} 0750 (ntlm_auth as ${helper.name} reaches winbind)`,
  };
}
