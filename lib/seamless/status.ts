import { dnsDomainOf } from '../directory/dn.ts';
import type { SeamlessState } from '../store/seamless-settings-store.ts';
import type { SeamlessContext } from './context.ts';
import { type DoctorReport, doctorReport } from './doctor/report.ts';
import type { SeamlessAvailability } from './settings.ts';
import { runningPid, trustCheck } from './winbindd.ts';

/** What the status line and the doctor report: whether seamless authentication can work, and how it does. */

export interface SeamlessStatus {
  availability: SeamlessAvailability;
  state?: SeamlessState;
  winbind?: 'running' | 'stopped';
  trust?: 'ok' | 'fail';
}

export async function seamlessStatus({
  deps,
  tools,
  availability,
}: SeamlessContext): Promise<SeamlessStatus> {
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
}

/** The joined set-up's full report; not enabled, the prerequisites as Enable would see them. */
export async function seamlessDoctor({
  deps,
  availability,
  runDoctor,
  draftState,
}: SeamlessContext): Promise<DoctorReport> {
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
}
