import { readFileSync } from 'node:fs';

/** A process's RSS and PSS in KiB from /proc (0 and 0 once it is gone), for the benches' memory figures. */
export function memoryOf(pid: number): { rss: number; pss: number } {
  try {
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    const pss = Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    return { rss, pss };
  } catch {
    return { rss: 0, pss: 0 };
  }
}
