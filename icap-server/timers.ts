/** Timers, injectable so the ICAP server's idle, header, request, decision and linger timeouts are tested without waiting. */
export interface Timers {
  set(task: () => void, ms: number): unknown;
  clear(handle: unknown): void;
  /**
   * Optional: start a timer that has not fired over again, as if just set. The idle timer is restarted after
   * every answer; Node's Timeout.refresh does that without a new timer object.
   */
  refresh?(handle: unknown): void;
}

export const systemTimers: Timers = {
  set: (task, ms) => setTimeout(task, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  refresh: (handle) => (handle as ReturnType<typeof setTimeout>).refresh(),
};
