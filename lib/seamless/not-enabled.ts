import { join } from 'node:path';
import type { StepOutcome } from './join.ts';
import type { SeamlessDirs } from './paths.ts';

/**
 * "Seamless authentication is not enabled", known by a root process without loading the stores: serve's root
 * child answers resume with it at every start of serve (privileged.ts) while idle, so this file imports nothing
 * but node:path (resume.ts's own imports cost ~10 MB, the stores' ~30 MB more: bench/idle-memory.sh).
 */

export const NOT_ENABLED: StepOutcome = {
  ok: true,
  skipped: true,
  detail: 'seamless authentication is not enabled: nothing to start',
};

/**
 * smb.conf in sambaDir (seamlessPaths's), which Enable writes before it joins and Disable removes: without it the
 * proxy is not joined. Computed here, not with paths.ts, whose imports (the config schema, zod) would cost serve's
 * idle root child ~30 MB to answer a start-up question that most installations answer "no".
 */
export function memberSmbConfPath(dirs: SeamlessDirs): string {
  if (dirs.sambaDir !== null) return join(dirs.sambaDir, 'smb.conf');
  let end = dirs.stateDir.length;
  while (end > 1 && dirs.stateDir[end - 1] === '/') end -= 1;
  return join(`${dirs.stateDir.slice(0, end)}-samba`, 'smb.conf');
}
