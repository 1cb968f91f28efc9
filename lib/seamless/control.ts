import { systemClock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import { seamlessContext, type SeamlessDeps } from './context.ts';
import { disable } from './disable.ts';
import type { DoctorReport } from './doctor/report.ts';
import { enable } from './enable.ts';
import type { StepOutcome } from './join.ts';
import { resumeWinbindd } from './resume.ts';
import type { SeamlessSettings } from './settings.ts';
import { seamlessDoctor, seamlessStatus, type SeamlessStatus } from './status.ts';
import { failureOf, type SeamlessStep } from './step.ts';
import { realProcesses } from './winbindd.ts';

/**
 * Enable, Disable, status and the doctor: what `doorman seamless …` (root, in-process) and the admin screen
 * (through serve's privileged child, privileged.ts) call. Each step is reported as it starts and as it ends,
 * so the CLI prints a line per step and the admin page streams them; the first failing step stops the run
 * with its fix. Every outside effect goes through the injected dependencies (commands, processes, the stores,
 * the doctor's I/O, Squid's include), so the sequence is tested with fakes (test/unit/lib/seamless/control).
 *
 * The pieces: the step runner (step.ts), the shared context (context.ts), Enable's steps (enable.ts), Disable
 * (disable.ts), status and the doctor (status.ts), resume (resume.ts); this file assembles them.
 */

export { dcOf, joinedNetbiosName, proxyNames } from './context.ts';
export type { SeamlessDeps, SeamlessStoreAccess } from './context.ts';
export type { SeamlessStatus } from './status.ts';
export type { SeamlessStep } from './step.ts';

export interface SeamlessControl {
  status(): Promise<SeamlessStatus>;
  enable(
    settings: SeamlessSettings,
    password: Buffer,
    onStep: (step: SeamlessStep) => void,
  ): Promise<{ ok: boolean; doctor?: DoctorReport }>;
  disable(
    admin: { user: string; password: Buffer } | undefined,
    onStep: (step: SeamlessStep) => void,
  ): Promise<{ ok: boolean }>;
  doctor(): Promise<DoctorReport>;
  /**
   * On a joined proxy whose winbindd is not running (after a reboot), start it and give its privileged pipe to
   * the helper group again (resume.ts); skipped when not joined, nothing done when it runs.
   */
  resume(): Promise<StepOutcome>;
}

export function localSeamlessControl(config: Config, deps: SeamlessDeps): SeamlessControl {
  const ctx = seamlessContext(config, deps);
  return {
    status: () => seamlessStatus(ctx),
    enable: (settings, password, onStep) => enable(ctx, settings, password, onStep),
    disable: (admin, onStep) => disable(ctx, admin, onStep),

    async resume() {
      try {
        return await resumeWinbindd(ctx.tools, {
          joined: deps.store.current() !== undefined,
          processes: deps.processes,
          winbindSocketParent: ctx.winbindParent,
          helperAccount: deps.helperAccount,
        });
      } catch (error) {
        return failureOf(error);
      }
    },

    doctor: () => seamlessDoctor(ctx),
  };
}

/** The defaults of the dependencies that need no DB: commands, processes, clock. */
export const defaultSeamlessDeps = {
  processes: realProcesses,
  clock: systemClock,
} as const;
