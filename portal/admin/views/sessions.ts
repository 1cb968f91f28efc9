import type { Session, SessionSource } from '../../../lib/store/session.ts';
import type { SessionSearchField } from '../../../lib/store/session-search.ts';
import type { FieldProblem } from '../../../lib/validation/problems.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import {
  keyText,
  MAX_QUERY_CHARS,
  SEARCH_LABELS,
  searchQuery,
  type SearchField,
  type SearchMatch,
  type SearchValues,
} from '../sessions-form.ts';
import { problemsByField, problemSummary } from './fields.ts';
import { layout } from './layout.ts';
import { timeOf } from './time.ts';

/** What the last button on this screen did. */
export type SessionsOutcome =
  | { kind: 'ended'; session: Session }
  | { kind: 'not-found'; key: string }
  | { kind: 'ended-user'; username: string; ended: number };

export interface SessionsView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  values: SearchValues;
  problems: readonly FieldProblem[];
  /** The page found; undefined when the search had a problem. */
  found?: { sessions: readonly Session[]; more: boolean; paged: boolean };
  outcome?: SessionsOutcome;
}

const BY_LABELS: Readonly<Record<SessionSearchField, string>> = {
  user: 'User name',
  ip: 'IP address',
  mac: 'MAC address',
};
const MATCH_LABELS: Readonly<Record<SearchMatch, string>> = {
  exact: 'The whole value',
  prefix: 'The start of it',
};
const SOURCE_LABELS: Readonly<Record<SessionSource, string>> = {
  api: 'Login API',
  portal: 'Captive portal sign-in',
  registration: 'Device registration',
  agreement: 'Usage agreement',
};

export function sessionsPage(view: SessionsView): string {
  const { paths, values, found } = view;
  const problems = problemsByField(view.problems);
  const invalid = (field: SearchField) =>
    problems.has(field) ? html` aria-invalid="true" aria-describedby="s-${field}-problem"` : '';
  const problem = (field: SearchField) =>
    problems.has(field) &&
    html`<p class="problem" id="s-${field}-problem">${problems.get(field)?.join(' ')}</p>`;
  return layout(
    'Sessions',
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'sessions' },
    html`<h1>Sessions</h1>
      ${banner(view.outcome)}
      ${
        view.problems.length > 0 &&
        problemSummary(view.problems.length, 'Nothing was searched.', view.problems, (field) =>
          field in SEARCH_LABELS
            ? { id: `s-${field}`, label: SEARCH_LABELS[field as SearchField] }
            : undefined,
        )
      }
      <form method="get" action="${paths.sessions}" class="search" role="search">
        <div class="field${problems.has('q') ? ' invalid' : ''}">
          <label for="s-q">${SEARCH_LABELS.q}</label>
          <input
            type="search"
            id="s-q"
            name="q"
            value="${values.q}"
            maxlength="${MAX_QUERY_CHARS}"
            aria-describedby="s-q-hint"
            ${invalid('q')}
          />
          ${problem('q')}
          <p class="hint" id="s-q-hint">
            A user name (capitals or not), an IP address such as 10.0.0.5, or a MAC address such as
            aa:bb:cc:dd:ee:ff. Empty: every session.
          </p>
        </div>
        <div class="field${problems.has('by') ? ' invalid' : ''}">
          <label for="s-by">${SEARCH_LABELS.by}</label>
          <select id="s-by" name="by" ${invalid('by')}>
            ${Object.entries(BY_LABELS).map(
              ([value, label]) =>
                html`<option value="${value}" ${values.by === value ? html`selected` : ''}>${label}</option>`,
            )}
          </select>
          ${problem('by')}
        </div>
        <div class="field${problems.has('match') ? ' invalid' : ''}">
          <label for="s-match">${SEARCH_LABELS.match}</label>
          <select id="s-match" name="match" ${invalid('match')}>
            ${Object.entries(MATCH_LABELS).map(
              ([value, label]) =>
                html`<option value="${value}" ${values.match === value ? html`selected` : ''}>
                  ${label}
                </option>`,
            )}
          </select>
          ${problem('match')}
        </div>
        <button type="submit">Search</button>
      </form>
      ${found !== undefined && results(view, found)}`,
  );
}

function banner(outcome: SessionsOutcome | undefined): Html | false {
  if (outcome === undefined) return false;
  switch (outcome.kind) {
    case 'ended':
      return html`<div class="banner ok" role="status">
        <p>
          Ended the session of <strong>${outcome.session.username}</strong> on ${outcome.session.key.value}.
          Squid stops using its cached answer for that client within its helper TTL.
        </p>
      </div>`;
    case 'not-found':
      return html`<div class="banner error" role="alert">
        <p>There is no session on ${outcome.key} any more: it has ended meanwhile. Nothing was changed.</p>
      </div>`;
    case 'ended-user':
      return html`<div class="banner ok" role="status">
        <p>
          Ended ${outcome.ended === 1 ? '1 session' : `${outcome.ended} sessions`} of
          <strong>${outcome.username}</strong>.
        </p>
      </div>`;
  }
}

function results(view: SessionsView, found: NonNullable<SessionsView['found']>): Html {
  const { paths, values } = view;
  const { sessions, more } = found;
  const last = sessions.at(-1);
  const hidden = html`<input type="hidden" name="csrf" value="${view.csrf}" />
    <input type="hidden" name="q" value="${values.q}" />
    <input type="hidden" name="by" value="${values.by}" />
    <input type="hidden" name="match" value="${values.match}" />`;
  if (sessions.length === 0) {
    return html`<p id="session-count">${found.paged ? 'No more sessions.' : 'No live session matches.'}</p>
      ${found.paged && html`<p><a href="${paths.sessions}?${searchQuery(values)}">First page</a></p>`}`;
  }
  return html`<p id="session-count">
      ${sessions.length === 1 ? '1 session' : `${sessions.length} sessions`}${more ? ', more on the next page' : ''},
      in address order.
    </p>
    <div class="table-wrap">
      <table class="sessions">
        <caption class="visually-hidden">
          Live sessions
        </caption>
        <thead>
          <tr>
            <th scope="col">User</th>
            <th scope="col">Address</th>
            <th scope="col">Source</th>
            <th scope="col">Created</th>
            <th scope="col">Last seen</th>
            <th scope="col">Idle end</th>
            <th scope="col">Hard end</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          ${sessions.map(
            (s) =>
              html`<tr>
                <td data-label="User">${s.username}</td>
                <td data-label="Address" class="key">
                  <span
                    >${s.key.value}${s.mac !== undefined && html`<br /><span class="hint">MAC ${s.mac}</span>`}</span
                  >
                </td>
                <td data-label="Source">${SOURCE_LABELS[s.source]}</td>
                <td data-label="Created">${timeOf(s.createdAt)}</td>
                <td data-label="Last seen">${timeOf(s.lastSeen)}</td>
                <td data-label="Idle end">
                  ${s.idleTimeoutMs === undefined ? 'none' : timeOf(s.lastSeen + s.idleTimeoutMs)}
                </td>
                <td data-label="Hard end">${timeOf(s.expiresAt)}</td>
                <td data-label="Actions" class="actions">
                  <div>
                    <form method="post" action="${paths.endSession}">
                      ${hidden}
                      <input type="hidden" name="key" value="${keyText(s.key)}" />
                      <button type="submit" class="danger">
                        End<span class="visually-hidden"> the session on ${s.key.value}</span>
                      </button>
                    </form>
                    <form method="post" action="${paths.endUserSessions}">
                      ${hidden}
                      <input type="hidden" name="username" value="${s.username}" />
                      <button type="submit" class="danger">
                        End all of ${s.username}<span class="visually-hidden">'s sessions</span>
                      </button>
                    </form>
                  </div>
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
    <p class="hint">
      Last seen is as the store has it: the helpers write it a minute or so behind, so a session may end later
      than its idle end shown here.
    </p>
    <nav aria-label="Pages" class="pages">
      ${found.paged && html`<a href="${paths.sessions}?${searchQuery(values)}">First page</a>`}
      ${
        more &&
        last !== undefined &&
        html`<a href="${paths.sessions}?${searchQuery(values, last.key)}" rel="next">Next page</a>`
      }
    </nav>`;
}
