import { removeRootEntries } from '../fs/root-owned.ts';
import { adminArgument, type DomainTools, netAdsWithPassword, type StepOutcome } from './join.ts';
import { describeFailure } from './run-command.ts';
import type { AdminUser } from './settings.ts';

/**
 * Leaving the domain (docs/seamless-design.md §3, "Leave"): `net ads leave -U ADMIN`, the password on stdin,
 * deletes the computer account (lab §6.1: `Deleted account for 'PROXY' in realm 'EXAMPLE.TEST'`, and
 * `samba-tool computer list` no longer shows it). Then Samba's files go: the keytab, the machine secret and
 * winbind's caches; the logs stay for whoever wants to know what happened.
 */
export async function leaveDomain(
  tools: DomainTools,
  admin: AdminUser,
  password: Buffer,
): Promise<StepOutcome> {
  const args = ['leave', `--user=${adminArgument(admin)}`];
  const outcome = await netAdsWithPassword(tools, args, password);
  const said = `${outcome.stdout}\n${outcome.stderr}`;
  if (outcome.code === 0) {
    const deleted = /Deleted account for '([^']{1,64})' in realm '([^']{1,253})'/i.exec(said);
    return {
      ok: true,
      detail:
        deleted === null ? 'left the domain' : `deleted the computer account ${deleted[1]} in ${deleted[2]}`,
    };
  }
  return {
    ok: false,
    detail: describeFailure({ command: 'net', args: ['ads', ...args] }, outcome),
    fix: /LOGON_FAILURE|Logon failure|password|credentials/i.test(said)
      ? "check the administrator's user name and password"
      : 'if the domain controller cannot be reached, or the account is already gone, disable locally (`doorman seamless disable --local`): the computer account then stays in the domain, delete it there',
  };
}

/**
 * Everything Samba keeps in sambaDir except its logs, once sambaDir is root's alone (else UNSAFE_PATH, and
 * nothing is removed). Returns what was removed.
 */
export function removeSambaState(sambaDir: string): string[] {
  return removeRootEntries(sambaDir, ['log']);
}
