import type { PortalMode } from '../../lib/portal/settings.ts';
import type { StoreStatus } from '../../lib/store/store.ts';
import type { DirectoryAdmin } from './directory-admin.ts';
import type { PortalAdmin } from './portal-admin.ts';
import type { SeamlessControl } from './seamless-admin.ts';
import { MODE_LABELS } from './views/portal.ts';
import { durationOf } from './views/time.ts';
import { PORTAL_SESSION_SOURCES } from '../../lib/store/portal-settings-store.ts';

/**
 * The Home screen's checks: is each part of Doorman working, in a line or two, and where to fix it. Every
 * check that waits on something outside this process (the directory, authd's socket, the seamless doctor, the
 * store's engine) runs at once with the others under one short deadline, and one that has not answered by
 * then is "unknown (timed out)": the page never hangs on a directory that does not answer.
 */

/** What `doorman serve` gives the Home screen to ask; each absent one is shown as not checked. */
export interface HomeProbes {
  /** Bind with the applied directory settings and count the user groups (the Directory screen's test). */
  directory?: () => Promise<{ groupCount: number }>;
  /**
   * One lookup over authd's socket, as Squid's helpers send it (helpers/authd/probe.ts); its answer carries
   * the last lookup Squid asked that authd, if any since it started.
   */
  authd?: () => Promise<
    | { ok: true; ms: number; lastLookup?: { at: number; ip: string; answer: 'OK' | 'ERR' } }
    | { ok: false; detail: string }
  >;
  /** The store's engine and whether it is connected (Store.status()). */
  store?: () => Promise<StoreStatus>;
  /** Each check's deadline, ms. Default 2000. */
  deadlineMs?: number;
}

export type CheckState = 'ok' | 'fail' | 'off' | 'unknown';

export interface HomeCheck {
  id: 'directory' | 'seamless' | 'portal' | 'authd' | 'store';
  title: string;
  state: CheckState;
  /** What was found, a sentence each. */
  lines: string[];
  /** Where to look or fix it: a screen's path, or a command to run on the server. */
  fix: { href: string; label: string } | { command: string };
}

export const DEFAULT_DEADLINE_MS = 2000;

type Answer<T> = { ok: true; value: T } | { ok: false; timedOut: boolean; message: string };

/** A probe's answer, its error, or that it did not answer within `ms`; its timer never keeps serve alive. */
export async function within<T>(ms: number, run: () => Promise<T>): Promise<Answer<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Answer<T>>((resolve) => {
    timer = setTimeout(
      () => resolve({ ok: false, timedOut: true, message: `no answer within ${ms} ms` }),
      ms,
    );
    timer.unref();
  });
  const answered = run().then(
    (value): Answer<T> => ({ ok: true, value }),
    (error: unknown): Answer<T> => ({
      ok: false,
      timedOut: false,
      message: error instanceof Error ? error.message : String(error),
    }),
  );
  try {
    return await Promise.race([answered, late]);
  } finally {
    clearTimeout(timer);
  }
}

export interface HomeSources {
  paths: { directory: string; seamless: string; portal: string; sessions: string };
  directory: DirectoryAdmin;
  portal: PortalAdmin;
  seamless: SeamlessControl | undefined;
  probes: HomeProbes;
  /** Now, ms: how long ago the last lookup was. */
  now: number;
}

const TIMED_OUT = 'unknown (timed out)';

/** Every check, at once, each under the deadline. */
export async function homeChecks(sources: HomeSources): Promise<HomeCheck[]> {
  const ms = sources.probes.deadlineMs ?? DEFAULT_DEADLINE_MS;
  return Promise.all([
    directoryCheck(sources, ms),
    seamlessCheck(sources, ms),
    portalCheck(sources),
    authdCheck(sources, ms),
    storeCheck(sources, ms),
  ]);
}

async function directoryCheck({ paths, directory, probes }: HomeSources, ms: number): Promise<HomeCheck> {
  const base = {
    id: 'directory',
    title: 'Directory service',
    fix: { href: paths.directory, label: 'Directory service' },
  } as const;
  let current;
  try {
    current = directory.current();
  } catch (error) {
    return {
      ...base,
      state: 'fail',
      lines: [`The stored settings cannot be read: ${(error as Error).message}`],
    };
  }
  if (current === undefined)
    return { ...base, state: 'off', lines: ['Not set up: no user can be checked against a directory.'] };
  const where = `${current.settings.host} (${current.settings.kind})`;
  if (probes.directory === undefined)
    return { ...base, state: 'unknown', lines: [`Applied: ${where}; not checked here.`] };
  const answer = await within(ms, probes.directory);
  if (answer.ok)
    return {
      ...base,
      state: 'ok',
      lines: [`Reachable: ${where}, ${answer.value.groupCount} user groups found.`],
    };
  return answer.timedOut
    ? { ...base, state: 'unknown', lines: [`${where}: ${TIMED_OUT}, no answer within ${ms} ms.`] }
    : { ...base, state: 'fail', lines: [`${where} is not reachable: ${answer.message}`] };
}

async function seamlessCheck({ paths, seamless }: HomeSources, ms: number): Promise<HomeCheck> {
  const base = {
    id: 'seamless',
    title: 'Seamless authentication',
    fix: { href: paths.seamless, label: 'Seamless authentication' },
  } as const;
  if (seamless === undefined)
    return {
      ...base,
      state: 'unknown',
      lines: ['Not known here: serve runs without root, so `doorman seamless status` on the server says.'],
    };
  // At once, under one deadline: the doctor's DNS and port checks are the slow part.
  const [status, doctor] = await Promise.all([
    within(ms, () => seamless.status()),
    within(ms, () => seamless.doctor()),
  ]);
  if (!status.ok)
    return {
      ...base,
      state: status.timedOut ? 'unknown' : 'fail',
      lines: [status.timedOut ? TIMED_OUT : status.message],
    };
  const { state } = status.value;
  if (state === undefined)
    return { ...base, state: 'off', lines: ['Not enabled: browsers are not signed in by Windows.'] };
  const joined = `Joined to ${state.domain} as ${state.realm}; winbindd ${status.value.winbind ?? 'unknown'}, trust ${status.value.trust ?? 'unknown'}.`;
  const summary = !doctor.ok
    ? `Doctor: ${doctor.timedOut ? TIMED_OUT : doctor.message}.`
    : `Doctor: ${doctor.value.counts.ok} ok, ${doctor.value.counts.fail} failed, ${doctor.value.counts.skipped} skipped.`;
  const good =
    status.value.winbind === 'running' && status.value.trust === 'ok' && doctor.ok && doctor.value.ok;
  return {
    ...base,
    state: good ? 'ok' : doctor.ok || !doctor.timedOut ? 'fail' : 'unknown',
    lines: [joined, summary],
  };
}

function portalCheck({ paths, portal }: HomeSources): HomeCheck {
  const base = {
    id: 'portal',
    title: 'Captive portal',
    fix: { href: paths.portal, label: 'Captive portal' },
  } as const;
  let mode: PortalMode;
  try {
    mode = portal.settings.load().mode;
  } catch (error) {
    return {
      ...base,
      state: 'fail',
      lines: [`The stored settings cannot be read: ${(error as Error).message}`],
    };
  }
  const live = portal.sessions.countBySource(PORTAL_SESSION_SOURCES);
  return {
    ...base,
    state: mode === 'off' ? 'off' : 'ok',
    lines: [
      `Mode: ${MODE_LABELS[mode]}.`,
      `${live === 1 ? '1 device is' : `${live} devices are`} signed in through the portal.`,
    ],
  };
}

async function authdCheck({ probes, now }: HomeSources, ms: number): Promise<HomeCheck> {
  const base = {
    id: 'authd',
    title: 'Squid helpers (authd)',
    fix: { command: 'doorman authd status' },
  } as const;
  if (probes.authd === undefined) return { ...base, state: 'unknown', lines: ['Not checked here.'] };
  const probe = probes.authd;
  const answer = await within(ms, probe);
  if (!answer.ok)
    return {
      ...base,
      state: answer.timedOut ? 'unknown' : 'fail',
      lines: [answer.timedOut ? TIMED_OUT : answer.message],
    };
  const probed = answer.value;
  if (!probed.ok)
    return {
      ...base,
      state: 'fail',
      lines: [`Not answering: ${probed.detail}. Squid's lookups fail until it is back.`],
    };
  const last = probed.lastLookup;
  return {
    ...base,
    state: 'ok',
    lines: [
      `Up: answered a lookup in ${Math.max(1, Math.round(probed.ms))} ms.`,
      last === undefined
        ? 'No lookup from Squid since authd started.'
        : `Last lookup from Squid: ${last.ip}, answered ${last.answer}, ${durationOf(Math.max(0, now - last.at))} ago (${new Date(last.at).toISOString().replace('T', ' ').slice(0, 19)} UTC).`,
    ],
  };
}

async function storeCheck({ probes }: HomeSources, ms: number): Promise<HomeCheck> {
  const base = { id: 'store', title: 'Store', fix: { command: 'doorman store status' } } as const;
  if (probes.store === undefined) return { ...base, state: 'unknown', lines: ['Not checked here.'] };
  const answer = await within(ms, probes.store);
  if (!answer.ok)
    return {
      ...base,
      state: answer.timedOut ? 'unknown' : 'fail',
      lines: [answer.timedOut ? TIMED_OUT : answer.message],
    };
  const s = answer.value;
  const engine = s.engine === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  const lines = [`${engine}, ${s.connected ? 'connected' : 'NOT connected'}: ${s.location}.`];
  if (s.staleMs !== undefined) lines.push(`This box's copy caught up ${Math.round(s.staleMs / 1000)} s ago.`);
  if (s.replicationLagMs !== undefined && s.replicationLagMs > 0)
    lines.push(`Standby lag: ${Math.round(s.replicationLagMs / 1000)} s.`);
  return { ...base, state: s.connected ? 'ok' : 'fail', lines };
}
