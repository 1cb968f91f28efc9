import { HELPER_KINDS, type HelperKind } from '../../lib/seamless/paths.ts';

/**
 * Listening sockets authd did not make itself, as sd_listen_fds(3) hands them over: systemd's socket units
 * (LISTEN_FDS=N, LISTEN_PID=<this pid>, the descriptors 3..3+N-1, LISTEN_FDNAMES=name:name:... from each
 * FileDescriptorName=), or a predecessor authd handing its sockets on during a planned restart
 * (DOORMAN_LISTEN_FDS=kind=fd,kind=fd,...: its own variable, since the predecessor cannot know the pid it
 * spawns before the spawn). Pure: the caller reads the environment and asks the descriptors their paths.
 */
export const FIRST_LISTEN_FD = 3;

export type InheritedFrom = 'systemd' | 'handover';

export interface InheritedFd {
  fd: number;
  /** The FileDescriptorName= (systemd) or the kind (handover); systemd's default is the unit's name. */
  name: string;
}

export class ListenFdsError extends Error {
  override name = 'ListenFdsError';
  readonly code = 'LISTEN_FDS';
}

/**
 * The descriptors this process was handed, or undefined when none were (LISTEN_PID names another process: the
 * variables were inherited by mistake, and are ignored as sd_listen_fds ignores them). Throws ListenFdsError
 * for values that are set but malformed: starting on sockets of our own then would hide the mistake.
 */
export function inheritedFds(
  env: NodeJS.ProcessEnv,
  pid: number,
): { from: InheritedFrom; fds: InheritedFd[] } | undefined {
  const handover = env.DOORMAN_LISTEN_FDS;
  if (handover !== undefined && handover !== '') {
    const fds = handover.split(',').map((part) => {
      const m = /^([a-z]+)=(\d{1,6})$/.exec(part);
      if (m === null || !(HELPER_KINDS as readonly string[]).includes(m[1] ?? ''))
        throw new ListenFdsError(`DOORMAN_LISTEN_FDS: ${JSON.stringify(part)} is not kind=fd`);
      return { name: m[1] ?? '', fd: Number(m[2]) };
    });
    return { from: 'handover', fds };
  }
  if (env.LISTEN_FDS === undefined || env.LISTEN_PID === undefined) return undefined;
  if (!/^\d+$/.test(env.LISTEN_PID)) throw new ListenFdsError(`LISTEN_PID=${JSON.stringify(env.LISTEN_PID)}`);
  if (Number(env.LISTEN_PID) !== pid) return undefined;
  const count = Number(env.LISTEN_FDS);
  if (!/^\d{1,4}$/.test(env.LISTEN_FDS) || count === 0)
    throw new ListenFdsError(`LISTEN_FDS=${JSON.stringify(env.LISTEN_FDS)}: expected a count of sockets`);
  const names = env.LISTEN_FDNAMES === undefined ? [] : env.LISTEN_FDNAMES.split(':');
  if (env.LISTEN_FDNAMES !== undefined && names.length !== count)
    throw new ListenFdsError(`LISTEN_FDNAMES has ${names.length} names for LISTEN_FDS=${count}`);
  return {
    from: 'systemd',
    fds: Array.from({ length: count }, (_, i) => ({ fd: FIRST_LISTEN_FD + i, name: names[i] ?? 'unknown' })),
  };
}

/**
 * Each helper kind's descriptor: by name (FileDescriptorName=session, or the handover's kind), else by the
 * path it is bound to (ListenStream=<stateDir>/run/session.sock, whatever the name). Every descriptor must be
 * one kind's, and no kind may have two; kinds without one are not served (a socket unit may leave out the
 * seamless kinds). `pathOf` is the socket's bound path, if the caller could read it.
 */
export function matchKinds(
  fds: readonly InheritedFd[],
  expected: Readonly<Record<HelperKind, string>>,
  pathOf: (fd: number) => string | undefined,
): Map<HelperKind, number> {
  const byKind = new Map<HelperKind, number>();
  for (const { fd, name } of fds) {
    const path = pathOf(fd);
    const kind =
      HELPER_KINDS.find((k) => k === name) ??
      HELPER_KINDS.find((k) => path !== undefined && expected[k] === path);
    if (kind === undefined)
      throw new ListenFdsError(
        `descriptor ${fd} (name ${JSON.stringify(name)}, ${path === undefined ? 'no path' : `path ${path}`}) ` +
          `is no helper's: name it ${HELPER_KINDS.join(', ')} (FileDescriptorName=) or bind it to ${expected.session} and its siblings`,
      );
    if (byKind.has(kind))
      throw new ListenFdsError(`two descriptors for ${kind} (${byKind.get(kind)} and ${fd})`);
    byKind.set(kind, fd);
  }
  if (!byKind.has('session'))
    throw new ListenFdsError(`no descriptor for the session lookup (FileDescriptorName=session)`);
  return byKind;
}

/** DOORMAN_LISTEN_FDS for a successor that gets `fds` (kind → its descriptor number in the successor). */
export function handoverValue(fds: ReadonlyMap<HelperKind, number>): string {
  return [...fds].map(([kind, fd]) => `${kind}=${fd}`).join(',');
}
