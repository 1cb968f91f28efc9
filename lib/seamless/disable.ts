import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { showValue } from '../errors.ts';
import type { SeamlessContext } from './context.ts';
import type { StepOutcome } from './join.ts';
import { leaveDomain, removeSambaState } from './leave.ts';
import { parseAdminUser } from './settings.ts';
import { type Report, squidStep, step } from './step.ts';
import { stopDaemons } from './winbindd.ts';

/**
 * Disable: leave the domain (with a Domain Admin; without one the computer account stays), stop winbindd, delete
 * the keytab and Samba's state, clear the seamless settings; the admin's password is zeroed whatever happens.
 */
export async function disable(
  { deps, paths, tools }: SeamlessContext,
  admin: { user: string; password: Buffer } | undefined,
  onStep: Report,
): Promise<{ ok: boolean }> {
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
    await squidStep(onStep, deps);
    return { ok: true };
  } finally {
    admin?.password.fill(0);
  }
}
