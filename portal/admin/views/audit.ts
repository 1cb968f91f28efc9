import { type AuditEvent, AuditKinds } from '../../../lib/audit/event.ts';
import type { AuditPage } from '../../../lib/audit/query.ts';
import type { FieldProblem } from '../../../lib/validation/problems.ts';
import { type AUDIT_FIELDS, type AuditFilterValues, auditHref } from '../audit-filters.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { problemsByField } from './fields.ts';
import { layout } from './layout.ts';

export interface AuditView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  values: AuditFilterValues;
  problems: readonly FieldProblem[];
  /** Undefined while the filters have problems (nothing was asked). */
  page: AuditPage | undefined;
  /** Whether this is a later page (then "Newest" links back to the first). */
  older: boolean;
  retentionDays: number;
}

const LABELS: Record<(typeof AUDIT_FIELDS)[number], { label: string; hint: string }> = {
  user: { label: 'User', hint: 'A user name, or the name of an admin, an API key or a CLI user who acted.' },
  address: { label: 'Address', hint: 'A client IP address.' },
  kind: { label: 'Kind', hint: 'One kind of event.' },
  from: { label: 'From (UTC)', hint: 'YYYY-MM-DD or YYYY-MM-DDTHH:MM.' },
  to: { label: 'To (UTC)', hint: 'Before this time; a date alone counts the whole day.' },
};

/** `2026-11-27 04:00:00` (UTC, to the second: the page says UTC once). */
const shownTime = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').slice(0, 19);

/** The detail as `name: value` lines; a settings change as `field: from → to`. */
function detailOf(detail: Record<string, unknown>): Html[] {
  return Object.entries(detail).map(([name, value]) => {
    if (name === 'changes' && typeof value === 'object' && value !== null) {
      const changes = Object.entries(value as Record<string, { from?: unknown; to?: unknown } | string>);
      if (changes.length === 0) return html`<span>nothing changed</span>`;
      return html`${changes.map(([field, change]) =>
        // A secret's change is kept as one "[redacted]" (lib/audit/event.ts), not as from and to.
        typeof change !== 'object' || change === null
          ? html`<span>${field}: ${String(change)}</span>`
          : html`<span
              >${field}: ${JSON.stringify(change.from ?? null)} → ${JSON.stringify(change.to ?? null)}</span
            >`,
      )}`;
    }
    return html`<span>${name}: ${typeof value === 'string' ? value : JSON.stringify(value)}</span>`;
  });
}

function row(event: AuditEvent): Html {
  return html`<tr>
    <td data-label="Time">
      <time datetime="${new Date(event.at).toISOString()}">${shownTime(event.at)}</time>
    </td>
    <td data-label="Kind">${event.kind}</td>
    <td data-label="User">${event.user ?? '–'}</td>
    <td data-label="By">${event.actor}</td>
    <td data-label="Address">${event.address ?? '–'}</td>
    <td data-label="Box">${event.box}</td>
    <td data-label="Detail" class="detail">${detailOf(event.detail)}</td>
  </tr>`;
}

/**
 * The Audit screen: a filter form (GET, so a filtered page is a link an admin can keep or send; no CSRF
 * token, as nothing is changed), then the events newest first, a page at a time, with links to older pages.
 */
export function auditPage(view: AuditView): string {
  const { paths, values, page } = view;
  const problems = problemsByField(view.problems);
  const id = (name: string) => `a-${name}`;
  const described = (name: string) =>
    problems.has(name)
      ? html`aria-invalid="true" aria-describedby="${id(name)}-problem ${id(name)}-hint"`
      : html`aria-describedby="${id(name)}-hint"`;
  const field = (name: (typeof AUDIT_FIELDS)[number], control: Html) =>
    html`<div class="field${problems.has(name) ? ' invalid' : ''}">
      <label for="${id(name)}">${LABELS[name].label}</label> ${control}
      ${problems.get(name)?.map((m) => html`<p class="problem" id="${id(name)}-problem">${m}</p>`)}
      <p class="hint" id="${id(name)}-hint">${LABELS[name].hint}</p>
    </div>`;
  const text = (name: (typeof AUDIT_FIELDS)[number], inputmode?: string) =>
    field(
      name,
      html`<input
        type="text"
        id="${id(name)}"
        name="${name}"
        value="${values[name]}"
        ${inputmode === undefined ? '' : html`inputmode="${inputmode}"`}
        ${described(name)}
      />`,
    );
  const kind = field(
    'kind',
    html`<select id="${id('kind')}" name="kind" ${described('kind')}>
      <option value="">Any kind</option>
      ${AuditKinds.map(
        (k) => html`<option value="${k}" ${values.kind === k ? html`selected` : ''}>${k}</option>`,
      )}
    </select>`,
  );
  const cursorProblem = problems.get('before');
  const events = page?.events ?? [];
  const content = html`<h1>Audit</h1>
    <p>
      Who signed in where and when, and what the administrators did, on every box; kept ${view.retentionDays}
      days. Newest first; times in UTC.
    </p>
    ${cursorProblem && html`<div class="banner error" role="alert"><p>${cursorProblem}</p></div>`}
    <form method="get" action="${paths.audit}" class="filters" aria-label="Filter the events">
      <fieldset>
        <legend>Filter</legend>
        ${text('user')} ${text('address')} ${kind} ${text('from')} ${text('to')}
        <div class="actions">
          <button type="submit">Show events</button>
          <a href="${paths.audit}">Clear the filters</a>
        </div>
      </fieldset>
    </form>
    ${
      page !== undefined &&
      (events.length === 0
        ? html`<p role="status">No events${view.older ? ' older than these' : ''} match.</p>`
        : html`<table class="audit">
            <caption class="visually-hidden">
              Events, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Kind</th>
                <th scope="col">User</th>
                <th scope="col">By</th>
                <th scope="col">Address</th>
                <th scope="col">Box</th>
                <th scope="col">Detail</th>
              </tr>
            </thead>
            <tbody>
              ${events.map(row)}
            </tbody>
          </table>`)
    }
    ${
      page?.searchedTo !== undefined &&
      html`<p role="status" id="audit-searched">
        Searched back to ${shownTime(page.searchedTo)} (a page reads a bounded number of events): Older events
        searches further.
      </p>`
    }
    <nav class="pages actions" aria-label="Pages">
      ${view.older && html`<a href="${auditHref(paths.audit, values)}">Newest events</a>`}
      ${page?.next !== undefined && html`<a href="${auditHref(paths.audit, values, page.next)}" rel="next">Older events</a>`}
    </nav>`;
  return layout('Audit', { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'audit' }, content);
}
