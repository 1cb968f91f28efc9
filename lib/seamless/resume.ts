import { mkdirSync } from 'node:fs';
import { trustedDirectoryPath } from '../fs/root-owned.ts';
import type { DomainTools, StepOutcome } from './join.ts';
import { NOT_ENABLED } from './not-enabled.ts';
import { openPrivilegedPipe, type ProcessControl, runningPid, startWinbindd } from './winbindd.ts';

/**
 * After a reboot (or a service manager that stopped everything the web app had started) the member's winbindd is
 * gone, and every NTLM sign-in fails (ntlm_auth needs it) until it is started again. Resume does what Enable's
 * winbindd and privileged-pipe steps do, and nothing else: no join, no keytab, no password, no domain admin.
 * serve's root child runs it once at start-up; `doorman seamless resume` runs it as root (a boot script, an
 * ExecStartPre).
 */
export interface ResumeOptions {
  /** Whether this proxy is joined (Enable saved its seamless settings). */
  joined: boolean;
  processes: ProcessControl;
  /** Where libwbclient looks for winbindd (/run/samba, compiled in): a tmpfs, empty after a reboot. */
  winbindSocketParent: string;
  /** Squid's helper user, who reaches winbind's privileged pipe through its group. */
  helperAccount(): { name: string; gid: number };
}

export async function resumeWinbindd(tools: DomainTools, options: ResumeOptions): Promise<StepOutcome> {
  if (!options.joined) return NOT_ENABLED;
  const pid = runningPid(tools, 'winbindd', options.processes);
  if (pid !== undefined) return { ok: true, detail: `winbindd is running (pid ${pid})` };
  const helper = options.helperAccount();
  // winbindd reads the smb.conf in sambaDir as root: only from a sambaDir that is root's alone.
  try {
    trustedDirectoryPath(tools.paths.sambaDir);
  } catch (error) {
    return {
      ok: false,
      detail: `winbindd not started: ${(error as Error).message}`,
      fix: `make ${tools.paths.sambaDir} and every directory above it root's and writable by root alone, then run \`doorman seamless resume\` (or Enable again)`,
    };
  }
  mkdirSync(options.winbindSocketParent, { recursive: true, mode: 0o755 });
  const started = await startWinbindd(tools, options.processes);
  if (!started.ok) return started;
  const pipe = openPrivilegedPipe(tools.paths, helper);
  return { ok: true, detail: `${started.detail}; ${pipe.detail}` };
}
