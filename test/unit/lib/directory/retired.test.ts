import { describe, expect, it } from 'vitest';
import { RetiredDirectories, type Retirable, type RetireTimers } from '../../../../lib/directory/retired.ts';

/** Timers that fire only when told; each remembers its delay. */
function manualTimers() {
  const pending = new Map<number, { task: () => void; ms: number }>();
  let next = 0;
  const timers: RetireTimers = {
    set: (task, ms) => {
      pending.set(++next, { task, ms });
      return next;
    },
    clear: (handle) => void pending.delete(handle as number),
  };
  const fireAll = () => {
    for (const [handle, { task }] of [...pending]) {
      pending.delete(handle);
      task();
    }
  };
  return { timers, pending, fireAll };
}

/** A directory that counts its closes. */
function directory(): Retirable & { closes: number } {
  const d = {
    settings: { connectTimeoutMs: 5000, timeoutMs: 10_000 },
    closes: 0,
    close: async () => {
      d.closes++;
    },
  };
  return d;
}

describe('RetiredDirectories', () => {
  it('closes a replaced directory once its checks could have finished, not before', () => {
    const { timers, pending, fireAll } = manualTimers();
    const retired = new RetiredDirectories(timers);
    const old = directory();
    retired.retire(old);
    expect([...pending.values()].map((t) => t.ms)).toEqual([15_000]);
    expect(old.closes).toBe(0);
    fireAll();
    expect(old.closes).toBe(1);
    expect(retired.waiting).toBe(0);
  });

  it('close() closes every one still in its grace at once and clears their timers', async () => {
    const { timers, pending } = manualTimers();
    const retired = new RetiredDirectories(timers);
    const [a, b] = [directory(), directory()];
    retired.retire(a);
    retired.retire(b);
    await retired.close();
    expect([a.closes, b.closes]).toEqual([1, 1]);
    expect(pending.size).toBe(0);
    expect(retired.waiting).toBe(0);
  });

  it('closes at once a directory retired after close(): nothing would close it later', async () => {
    const { timers, pending } = manualTimers();
    const retired = new RetiredDirectories(timers);
    await retired.close();
    const late = directory();
    retired.retire(late);
    expect(late.closes).toBe(1);
    expect(pending.size).toBe(0);
  });
});
