import type { StepOutcome } from './join.ts';

/**
 * The step runner of Enable and Disable: each step is reported as it starts and as it ends, so the CLI prints a
 * line per step and the admin page streams them; the first failing step stops the run with its fix.
 */

export interface SeamlessStep {
  id: string;
  title: string;
  status: 'running' | 'ok' | 'fail' | 'skipped';
  detail?: string;
  fix?: string;
}

export type Report = (step: SeamlessStep) => void;

/** A throw as a failed outcome: its message, and where to look next. */
export function failureOf(error: unknown): StepOutcome {
  return {
    ok: false,
    detail: error instanceof Error ? error.message : String(error),
    fix: 'see the message; `doorman seamless doctor` checks the prerequisites',
  };
}

/** Run one step: report it running, then its outcome; a throw is a failure with its message. */
export async function step(
  onStep: Report,
  id: string,
  title: string,
  work: () => Promise<StepOutcome>,
): Promise<boolean> {
  onStep({ id, title, status: 'running' });
  let outcome: StepOutcome;
  try {
    outcome = await work();
  } catch (error) {
    outcome = failureOf(error);
  }
  if (outcome.ok) {
    onStep({ id, title, status: outcome.skipped === true ? 'skipped' : 'ok', detail: outcome.detail });
    return true;
  }
  onStep({ id, title, status: 'fail', detail: outcome.detail, fix: outcome.fix });
  return false;
}

/** Enable's and Disable's last step: Squid's include written again, or the admin told how. */
export async function squidStep(
  onStep: Report,
  deps: { regenerateSquid?: () => Promise<StepOutcome> },
): Promise<boolean> {
  return step(onStep, 'squid', "Update Squid's configuration", async () => {
    if (deps.regenerateSquid !== undefined) return deps.regenerateSquid();
    return {
      ok: true,
      skipped: true,
      detail:
        'Squid was not told: write the include again and reconfigure Squid: (umask 077; doorman squid-conf > /etc/squid/conf.d/doorman.conf) && squid -k parse && squid -k reconfigure (removing an authentication scheme needs a Squid restart); set squid.seamless.squidInclude in the configuration to have it done here',
    };
  });
}
