import type { AdminUserInfo } from '../../../lib/store/admin-store.ts';
import type { FieldProblem } from '../../../lib/validation/problems.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { fieldMaker, problemsByField, problemSummary } from './fields.ts';
import { layout } from './layout.ts';
import { timeOf } from './time.ts';

/** Which form a problem belongs to: the add form, or a row's reset or remove form (by the admin's name). */
export type AdminsForm = { kind: 'add' } | { kind: 'reset' | 'remove'; name: string };

export type AdminsOutcome =
  | { kind: 'added' | 'reset' | 'removed'; name: string; endedSignIns?: number }
  | { kind: 'problems'; form: AdminsForm; problems: readonly FieldProblem[] };

export interface AdminsView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  admins: readonly AdminUserInfo[];
  /** The add form's name as typed after a refusal (never a password). */
  newName?: string;
  outcome?: AdminsOutcome;
}

const LABELS: Readonly<Record<string, string>> = {
  user: 'User name',
  password: 'Password',
  confirm: 'Password again',
  yourself: 'Remove my own account',
};

export function adminsPage(view: AdminsView): string {
  const { paths, admins, outcome } = view;
  const problemsOf = (form: AdminsForm) =>
    outcome?.kind === 'problems' && sameForm(outcome.form, form) ? outcome.problems : [];
  const add = fieldMaker(problemsByField(problemsOf({ kind: 'add' })), 'a');
  return layout(
    'Admins',
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'admins' },
    html`<h1>Admins</h1>
      <p>Who may sign in to these screens. Each signs in with a name and password of their own.</p>
      ${banner(view)}
      <h2>Administrators</h2>
      <ul class="admins">
        ${admins.map((a, i) => {
          const self = a.name === view.user;
          const reset = fieldMaker(problemsByField(problemsOf({ kind: 'reset', name: a.name })), `r${i}`);
          const remove = fieldMaker(problemsByField(problemsOf({ kind: 'remove', name: a.name })), `d${i}`);
          return html`<li class="admin">
            <h3>${a.name}${self && html` <span class="hint">(you)</span>`}</h3>
            <p class="hint">Added ${timeOf(a.createdAt)}; password set ${timeOf(a.updatedAt)}.</p>
            <form method="post" action="${paths.adminPassword}">
              <input type="hidden" name="csrf" value="${view.csrf}" />
              <input type="hidden" name="user" value="${a.name}" />
              ${reset.password(
                'password',
                `New password for ${a.name}`,
                self
                  ? 'Your other sign-ins end; this one goes on.'
                  : `Every sign-in of ${a.name} ends: they sign in again with the new password.`,
                'new-password',
              )}
              ${reset.password('confirm', `New password for ${a.name}, again`, 'The same, to catch a typing slip.', 'new-password')}
              <button type="submit">
                Set the password<span class="visually-hidden"> of ${a.name}</span>
              </button>
            </form>
            <form method="post" action="${paths.removeAdmin}" class="remove">
              <input type="hidden" name="csrf" value="${view.csrf}" />
              <input type="hidden" name="user" value="${a.name}" />
              ${
                self &&
                remove.checkbox(
                  'yourself',
                  false,
                  'Yes, remove my own account',
                  'You are signed out at once and cannot sign in again unless another admin adds you (or `doorman admin passwd` on the server).',
                )
              }
              <button type="submit" class="danger">Remove ${a.name}</button>
            </form>
          </li>`;
        })}
      </ul>
      <h2>Add an administrator</h2>
      <form method="post" action="${paths.admins}">
        <input type="hidden" name="csrf" value="${view.csrf}" />
        ${add.text('user', view.newName ?? '', LABELS.user ?? '', '1 to 64 letters, digits, ". _ @ -", starting with a letter or digit.', { autocomplete: 'off' })}
        ${add.password('password', LABELS.password ?? '', 'At most 1 KiB. Tell it to them another way than this screen.', 'new-password')}
        ${add.password('confirm', LABELS.confirm ?? '', 'The same, to catch a typing slip.', 'new-password')}
        <button type="submit">Add</button>
      </form>`,
  );
}

const sameForm = (a: AdminsForm, b: AdminsForm) =>
  a.kind === b.kind && (a.kind === 'add' || (b.kind !== 'add' && a.name === b.name));

function banner(view: AdminsView): Html | false {
  const { outcome } = view;
  if (outcome === undefined) return false;
  switch (outcome.kind) {
    case 'added':
      return html`<div class="banner ok" role="status">
        <p>Added the administrator <strong>${outcome.name}</strong>.</p>
      </div>`;
    case 'reset': {
      const ended =
        outcome.name === view.user ? 'your other sign-ins have ended' : 'their sign-ins have ended';
      return html`<div class="banner ok" role="status">
        <p>Set a new password for <strong>${outcome.name}</strong>; ${ended}.</p>
      </div>`;
    }
    case 'removed':
      return html`<div class="banner ok" role="status">
        <p>Removed the administrator <strong>${outcome.name}</strong> and ended their sign-ins.</p>
      </div>`;
    case 'problems': {
      const at = outcome.form;
      const index = at.kind === 'add' ? -1 : view.admins.findIndex((a) => a.name === at.name);
      const prefix = at.kind === 'add' ? 'a' : `${at.kind === 'reset' ? 'r' : 'd'}${index}`;
      const who = at.kind === 'add' ? '' : ` (${at.name})`;
      return problemSummary(outcome.problems.length, 'Nothing was changed.', outcome.problems, (field) =>
        field in LABELS ? { id: `${prefix}-${field}`, label: `${LABELS[field] ?? field}${who}` } : undefined,
      );
    }
  }
}
