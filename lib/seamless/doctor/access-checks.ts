import {
  type CheckId,
  type CheckResult,
  type DoctorContext,
  type Fact,
  fail,
  isUnavailable,
  pass,
  skip,
} from './check-result.ts';
import { type FileFacts, type HelperUser, mayAccess, showMode } from './file-facts.ts';
import { ENABLE_AGAIN } from './keytab-checks.ts';

/**
 * What Squid's helper user may reach: the keytab it reads for Kerberos and winbind's privileged pipe it enters
 * for NTLM, judged from the files' owner and mode and the user's groups.
 */

export interface AccessFacts<T> {
  file: Fact<T>;
  user: Fact<HelperUser>;
}

/** Skipped: Squid's helper user could not be looked up, so nobody can say what it may read. */
const helperUserUnknown = (id: CheckId, context: DoctorContext, why: string): CheckResult =>
  skip(
    id,
    `Squid's helper user could not be looked up: ${why}`,
    `check that the user ${context.helperGroup} exists`,
  );

const owner = (file: FileFacts) => `uid ${file.uid}, gid ${file.gid}, mode ${showMode(file.mode)}`;

export function checkKeytabAccess(context: DoctorContext, facts: AccessFacts<FileFacts>): CheckResult {
  const id = 'keytab-access';
  const fix = `chown root:${context.helperGroup} ${context.keytabPath}; chmod 640 ${context.keytabPath}`;
  if (isUnavailable(facts.file))
    return skip(id, `${context.keytabPath}: ${facts.file.unavailable}`, `${ENABLE_AGAIN}; then ${fix}`);
  if (isUnavailable(facts.user)) return helperUserUnknown(id, context, facts.user.unavailable);
  const { file, user } = facts;
  const problems: string[] = [];
  if (file.kind !== 'file') problems.push(`it is a ${file.kind}, not a file`);
  else if (!mayAccess(file, user, 'r')) problems.push(`${user.name || `uid ${user.uid}`} may not read it`);
  if ((file.mode & 0o006) !== 0)
    problems.push('anyone on this host may read or write it, and impersonate the proxy with its keys');
  if (problems.length > 0)
    return fail(id, `${context.keytabPath} (${owner(file)}): ${problems.join('; ')}`, fix);
  return pass(
    id,
    `${context.keytabPath} (${owner(file)}) is readable by ${user.name || `uid ${user.uid}`}, not by others`,
  );
}

/**
 * winbindd checks that its privileged directory is mode 0750 (or it refuses to start); Squid's helper user then
 * needs to be in its group to reach the pipe NTLM authentication uses (lab trap 11: `BH NT_STATUS_UNSUCCESSFUL`).
 */
export function checkPrivilegedPipe(context: DoctorContext, facts: AccessFacts<FileFacts>): CheckResult {
  const id = 'priv-pipe';
  const dir = context.privilegedPipeDir;
  const fix = `chgrp ${context.helperGroup} ${dir}; chmod 0750 ${dir}`;
  if (isUnavailable(facts.file)) {
    return skip(
      id,
      `${dir}: ${facts.file.unavailable}`,
      `start winbind (run Enable seamless again), then ${fix}`,
    );
  }
  if (isUnavailable(facts.user)) return helperUserUnknown(id, context, facts.user.unavailable);
  const { file, user } = facts;
  const problems: string[] = [];
  if (file.kind !== 'directory') problems.push(`it is a ${file.kind}, not a directory`);
  if (file.mode !== 0o750) problems.push(`mode ${showMode(file.mode)}, but winbindd wants 0750`);
  if (file.kind === 'directory' && !mayAccess(file, user, 'x')) {
    problems.push(
      `${user.name || `uid ${user.uid}`} may not enter it (not its owner, and not in its group ${file.gid})`,
    );
  }
  if (problems.length > 0) return fail(id, `${dir} (${owner(file)}): ${problems.join('; ')}`, fix);
  return pass(id, `${dir} (${owner(file)}) can be entered by ${user.name || `uid ${user.uid}`}`);
}
