import type { Explanation } from '../../../lib/explain/explain.ts';
import type { ExplainStep, StepStatus } from '../../../lib/explain/steps.ts';
import type { FieldProblem } from '../../../lib/validation/problems.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { fieldMaker, problemsByField, problemSummary } from './fields.ts';
import { layout } from './layout.ts';

export const EXPLAIN_FIELDS = ['ip', 'mac'] as const;
export type ExplainField = (typeof EXPLAIN_FIELDS)[number];

export interface ExplainView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  /** The form as typed. */
  values: Record<ExplainField, string>;
  problems?: readonly FieldProblem[];
  explanation?: Explanation;
  /** Why no explanation could be made (this web app cannot gather one, or gathering failed). */
  error?: string;
}

const LABELS: Readonly<Record<ExplainField, string>> = {
  ip: 'Client IP address',
  mac: 'MAC address (optional)',
};

/** How each status reads, and the check style (ul.checks) it is shown in. */
const STATUS: Readonly<Record<StepStatus, { text: string; style: string }>> = {
  ok: { text: 'OK', style: 'ok' },
  fails: { text: 'Fails', style: 'fail' },
  unknown: { text: 'Unknown', style: 'note' },
  'not-applicable': { text: 'N/A', style: '' },
};

const VERDICT: Readonly<Record<Explanation['verdict'], { text: string; banner: string }>> = {
  identified: { text: 'Identified', banner: 'ok' },
  'not-identified': { text: 'Not identified', banner: 'error' },
  unknown: { text: 'Cannot tell', banner: 'error' },
};

/**
 * The Explain screen: a GET form (the address, and a MAC for a client the neighbour table lacks), and below
 * it the explanation of `doorman explain`: the verdict first, then each step with what was found and, for a
 * step that fails or cannot tell, what to do.
 */
export function explainPage(view: ExplainView): string {
  const { paths, values, explanation } = view;
  const problems = view.problems ?? [];
  const f = fieldMaker(problemsByField(problems), 'x');
  return layout(
    explanation === undefined ? 'Explain a client' : `Explain ${explanation.ip}`,
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'explain' },
    html`<h1>Explain a client</h1>
      <p>Why a client is or is not identified now, step by step: the same as <code>doorman explain</code>.</p>
      ${
        problems.length > 0 &&
        problemSummary(problems.length, 'Nothing was looked up.', problems, (field) =>
          field === 'ip' || field === 'mac' ? { id: f.id(field), label: LABELS[field] } : undefined,
        )
      }
      ${
        view.error !== undefined &&
        html`<div class="banner error" role="alert">
          <p><strong>No explanation:</strong> ${view.error}</p>
        </div>`
      }
      <form method="get" action="${paths.explain}">
        <fieldset>
          <legend>Client</legend>
          ${f.text(
            'ip',
            values.ip,
            LABELS.ip,
            'IPv4 or IPv6, as Squid sees the client (10.0.0.5, 2001:db8::5).',
            {
              autocomplete: 'off',
            },
          )}
          ${f.text(
            'mac',
            values.mac,
            LABELS.mac,
            'Six hex pairs (3a:48:7a:63:96:26). Leave empty to look it up in the neighbour table, as the portal does.',
            { autocomplete: 'off' },
          )}
          <button type="submit">Explain</button>
        </fieldset>
      </form>
      ${explanation !== undefined && explanationHtml(explanation)}`,
  );
}

function explanationHtml(e: Explanation): Html {
  const verdict = VERDICT[e.verdict];
  return html`<section aria-labelledby="explanation">
    <h2 id="explanation">${e.ip}${e.mac === null ? '' : ` (${e.mac})`}</h2>
    <div class="banner ${verdict.banner}" role="status">
      <p><strong>${verdict.text}.</strong> ${e.summary}</p>
      <p class="hint">As of ${e.at}.</p>
    </div>
    <ol class="checks explain">
      ${e.steps.map(stepHtml)}
    </ol>
  </section>`;
}

function stepHtml(s: ExplainStep): Html {
  const status = STATUS[s.status];
  const todo = s.advice !== null && (s.status === 'fails' || s.status === 'unknown');
  return html`<li class="check ${status.style}" id="step-${s.id}">
    <p><span class="mark">${status.text}</span> <strong>${s.title}</strong></p>
    <p>${s.found}</p>
    ${todo && html`<p><strong>To do:</strong> ${s.advice}</p>`}
  </li>`;
}
