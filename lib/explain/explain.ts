import type { ExplainFacts } from './facts.ts';
import { authdOk as answeredOk, icapStep, seamlessStep, squidCacheStep } from './later-steps.ts';
import {
  authdStep,
  clientMacOf,
  groupsStep,
  identifiedUser,
  iso,
  registrationStep,
  sessionStep,
  StepIds,
  type ExplainStep,
  type StepId,
} from './steps.ts';

/**
 * `doorman explain IP`: why that client is or is not identified now, step by step, from facts gathered by a
 * shell (cli/explain-gather.ts). The same Explanation is printed by the CLI, given as JSON (--json; its
 * fields are documented in docs/explain.md and are kept stable: new ones may be added, none renamed), and
 * shown on the admin screen Explain. Pure.
 *
 * The verdict follows Squid's own order: authd's answer to the session lookup (or, failing that, the last
 * seamless sign-on), then the group rule, then what Squid may still be caching. It is "unknown" only when a
 * fact it depends on could not be had (the directory not answering for the group rule).
 */

export const Verdicts = ['identified', 'not-identified', 'unknown'] as const;
export type Verdict = (typeof Verdicts)[number];

export interface Explanation {
  ip: string;
  /** The MAC used (given, or found), normalised; null when none is known. */
  mac: string | null;
  /** When, ISO 8601. */
  at: string;
  verdict: Verdict;
  /** How the client is identified: a session on its address, its MAC's registration, or seamless sign-on. */
  via: 'session' | 'registration' | 'seamless' | null;
  /** Who the client is (identified), or who the deciding step is about; null for nobody. */
  user: string | null;
  /** The step that decides the verdict when it is not "identified"; null when identified. */
  decidingStep: StepId | null;
  /** One sentence: the verdict and why. */
  summary: string;
  steps: ExplainStep[];
}

/**
 * The process exit status for a verdict: 0 identified, 1 not identified, 2 could not tell (and bad input).
 */
export const EXPLAIN_EXIT = { identified: 0, 'not-identified': 1, unknown: 2 } as const;

export function explain(facts: ExplainFacts): Explanation {
  const byId: Record<StepId, ExplainStep> = {
    session: sessionStep(facts),
    registration: registrationStep(facts),
    authd: authdStep(facts),
    groups: groupsStep(facts),
    'squid-cache': squidCacheStep(facts),
    icap: icapStep(facts),
    seamless: seamlessStep(facts),
  };
  const steps = StepIds.map((id) => byId[id]);
  const user = identifiedUser(facts) ?? null;
  const authdOk = answeredOk(facts);
  const base = { ip: facts.ip, mac: clientMacOf(facts) ?? null, at: iso(facts.now), steps };

  if (user !== null || authdOk) {
    const via = authdOk ? (byId.session.status === 'ok' ? 'session' : 'registration') : 'seamless';
    const blocking = [byId.groups, byId['squid-cache']].find(
      (s) => s.status !== 'ok' && s.status !== 'not-applicable',
    );
    if (blocking === undefined)
      return {
        ...base,
        verdict: 'identified',
        via,
        user,
        decidingStep: null,
        summary: `${facts.ip} is identified as ${user ?? '?'} (${viaWords(via)}).`,
      };
    return {
      ...base,
      verdict: blocking.status === 'unknown' ? 'unknown' : 'not-identified',
      via,
      user,
      decidingStep: blocking.id,
      summary: `${facts.ip} is named ${user ?? '?'} (${viaWords(via)}), ${refusal(blocking)}: ${blocking.found}`,
    };
  }
  const deciding = decidingFailure(facts, byId);
  return {
    ...base,
    verdict: 'not-identified',
    via: null,
    user: null,
    decidingStep: deciding.id,
    summary: `${facts.ip} is not identified: ${deciding.found}${deciding.advice === null ? '' : ` To do: ${deciding.advice}.`}`,
  };
}

const viaWords = (via: 'session' | 'registration' | 'seamless') =>
  via === 'session'
    ? 'a session on its address'
    : via === 'registration'
      ? "its MAC's Device Registration"
      : 'seamless sign-on';

/**
 * The step an unidentified client fails at: authd itself when it cannot answer; else the seamless sign-on
 * that failed, when one did; else the registration in Device Registration mode; else the session.
 */
function decidingFailure(facts: ExplainFacts, byId: Record<StepId, ExplainStep>): ExplainStep {
  if (facts.authd.kind === 'unreachable' || (facts.authd.kind === 'answered' && facts.authd.result === 'BH'))
    return byId.authd;
  if (byId.seamless.status === 'fails') return byId.seamless;
  if (
    facts.portal.mode === 'registration' &&
    byId.session.status === 'fails' &&
    byId.registration.status !== 'ok'
  )
    return byId.registration;
  return byId.session.status === 'fails' ? byId.session : byId.authd;
}

/** How a named client's blocking step reads in the summary. */
function refusal(blocking: ExplainStep): string {
  if (blocking.status === 'unknown') return 'but it cannot be told whether Squid lets it through';
  return blocking.id === 'squid-cache' ? 'but Squid may still refuse it' : 'but Squid refuses it';
}
