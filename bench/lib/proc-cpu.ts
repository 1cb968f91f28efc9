import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** The fields of /proc/PID/stat after the command name, or undefined once the process is gone. */
function statOf(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) a process has used so far, ms (0 once it is gone). */
export function cpuMsOf(pid: number): number {
  const f = statOf(pid);
  return f === undefined ? 0 : (Number(f[11]) + Number(f[12])) * TICK_MS;
}

/**
 * CPU time a process and its children have used so far, ms: its own, its reaped children's (cutime, cstime)
 * and its live children's. For PostgreSQL's postmaster: every backend, live or gone.
 */
export function cpuMsOfTree(pid: number): number {
  const own = statOf(pid);
  if (own === undefined) return 0;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statOf(Number(name));
    if (f !== undefined && Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks * TICK_MS;
}
