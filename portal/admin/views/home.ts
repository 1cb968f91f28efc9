import { html } from '../html.ts';
import type { CheckState, HomeCheck } from '../home-checks.ts';
import type { AdminPaths } from '../paths.ts';
import { layout } from './layout.ts';

export interface HomeView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  checks: readonly HomeCheck[];
}

const MARKS: Readonly<Record<CheckState, string>> = {
  ok: 'Working',
  fail: 'Failing',
  off: 'Off',
  unknown: 'Unknown',
};

/** At a glance: each part of Doorman, whether it works, what was found, and where to fix it. */
export function homePage(view: HomeView): string {
  const { paths, checks } = view;
  const failing = checks.filter((c) => c.state === 'fail');
  return layout(
    'Home',
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'home' },
    html`<h1>Is Doorman working?</h1>
      <p id="home-summary" class="status ${failing.length === 0 ? 'ok' : 'fail'}">
        ${
          failing.length === 0
            ? 'Nothing is failing.'
            : `${failing.length === 1 ? '1 part is' : `${failing.length} parts are`} failing: ${failing
                .map((c) => c.title)
                .join(', ')}.`
        }
      </p>
      <ul class="checks">
        ${checks.map(
          (c) =>
            html`<li
              class="check ${c.state === 'ok' ? 'ok' : c.state === 'fail' ? 'fail' : 'note'}"
              id="check-${c.id}"
            >
              <h2><span class="mark">${MARKS[c.state]}</span> ${c.title}</h2>
              ${c.lines.map((line) => html`<p>${line}</p>`)}
              <p>
                ${
                  'href' in c.fix
                    ? html`<a href="${c.fix.href}">Go to ${c.fix.label}</a>`
                    : html`On the server: <code>${c.fix.command}</code>`
                }
              </p>
            </li>`,
        )}
      </ul>
      <p class="hint">Checked just now; reload the page to check again.</p>`,
  );
}
