import type { SeamlessAvailability } from '../../../lib/seamless/settings.ts';
import type { FieldProblem } from '../../../lib/validation/problems.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import type { SeamlessStatus } from '../seamless-admin.ts';
import {
  SEAMLESS_FIELDS,
  SERVER_VERSION_CHOICES,
  type SeamlessField,
  type SeamlessFormValues,
} from '../seamless-form.ts';
import { fieldMaker, problemsByField, problemSummary } from './fields.ts';
import { layout } from './layout.ts';

/** What the last form sent from this screen did, when it did not stream; undefined when the page is just shown. */
export type SeamlessOutcome =
  | { kind: 'problems'; problems: readonly FieldProblem[]; passwordTyped: boolean }
  | { kind: 'disable-problems'; problems: readonly FieldProblem[]; passwordTyped: boolean }
  /** Refused before anything ran: unavailable, another change running, no privileged helper. */
  | { kind: 'refused'; message: string };

/** An Enable or Disable running now (from another tab or another admin). */
export interface SeamlessBusy {
  what: 'enable' | 'disable';
  by: string;
  since: number;
}

export interface SeamlessView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  availability: SeamlessAvailability;
  /** False when this web app has no SeamlessControl (serve not started as root): status only, no forms. */
  canControl: boolean;
  /** The control's status; undefined when it has none, or could not be read (`statusError` then says why). */
  status?: SeamlessStatus | undefined;
  statusError?: string | undefined;
  busy?: SeamlessBusy | undefined;
  /** The dialogue's values: as typed after a refusal, the joined domain's for a repair, else a suggestion. */
  values: SeamlessFormValues;
  /** The Disable form's administrator, as typed after a refusal. */
  disableUser: string;
  outcome?: SeamlessOutcome;
}

/** Each field's label: on the form, and in the list of problems at the top, which names every field at fault. */
export const SEAMLESS_LABELS: Readonly<Record<SeamlessField, string>> = {
  serverVersion: 'Domain controller version',
  domain: 'Domain (FQDN)',
  netbiosDomain: 'NetBIOS domain name',
  adminUser: 'Administrator user name',
  adminPassword: 'Administrator password',
};
const FIELD_NAMES: ReadonlySet<string> = new Set(SEAMLESS_FIELDS);

/** Not the dialogue's labels: both forms are on one page once joined, and each field needs its own name. */
const DISABLE_LABELS: Readonly<Record<string, string>> = {
  adminUser: 'Administrator user name, to leave the domain',
  adminPassword: 'Administrator password, to leave the domain',
};

/** When a thing happened, in UTC (the admin and the server may be in different zones): 2026-01-01 09:30 UTC. */
export const utcMinute = (ms: number): string =>
  `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

export function seamlessPage(view: SeamlessView): string {
  const { paths, outcome } = view;
  const joined = view.status?.state;
  const problems = problemsByField(outcome?.kind === 'problems' ? outcome.problems : []);
  const disableProblems = problemsByField(outcome?.kind === 'disable-problems' ? outcome.problems : []);
  const canChange = view.canControl && view.busy === undefined;
  return layout(
    'Seamless authentication',
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'seamless' },
    html`<h1>Seamless authentication</h1>
      <p>
        Windows computers of the domain that use the proxy by its name browse without being asked for a
        password: Kerberos first, NTLM when Kerberos cannot be used, Basic as the last resort. Enable joins
        the proxy to the Windows domain.
      </p>
      ${banner(view, problems.size, disableProblems.size)}
      <h2>Status</h2>
      ${statusSection(view)}
      ${
        !view.availability.ok &&
        html`<div class="banner error" id="seamless-unavailable" role="status">
          <p><strong>Enable seamless is unavailable:</strong> ${view.availability.reason}.</p>
        </div>`
      }
      ${view.availability.ok && canChange && enableForm(view, problems)}
      ${
        view.canControl &&
        html`<h2>Doctor</h2>
          <form method="get" action="${paths.seamlessDoctor}">
            <p class="hint" id="doctor-hint">
              Checks each Kerberos prerequisite (DNS A and PTR records, the clock, the domain controller's
              ports, the keytab, winbind) and names the fix for each one that fails.
            </p>
            <button type="submit" aria-describedby="doctor-hint">Run the doctor</button>
          </form>`
      }
      ${joined !== undefined && canChange && disableForm(view, disableProblems, joined.machineName)}`,
  );
}

function banner(view: SeamlessView, problemCount: number, disableProblemCount: number): Html | undefined {
  const { outcome } = view;
  const retype = (typed: boolean) =>
    typed &&
    html`<p class="warning" id="password-not-kept">The password you typed was not kept: type it again.</p>`;
  const busy = view.busy;
  const busyBanner =
    busy &&
    html`<div class="banner" role="status" id="seamless-busy">
      <p>
        <strong>${busy.what === 'enable' ? 'Enable' : 'Disable'} is running now</strong> (started by
        ${busy.by} at ${utcMinute(busy.since)}). Reload this page when it has finished.
      </p>
    </div>`;
  const noControl =
    !view.canControl &&
    html`<div class="banner" role="status" id="seamless-no-control">
      <p>
        This web app cannot join or leave the domain: <code>doorman serve</code> was not started as root, so
        it has no privileged helper for the join. Run <code>doorman seamless enable</code> as root on the
        proxy instead.
      </p>
    </div>`;
  switch (outcome?.kind) {
    case undefined:
      return html`${busyBanner}${noControl}`;
    case 'problems':
      return html`${problemSummary(problemCount, 'Nothing was changed.', outcome.problems, (field) =>
        FIELD_NAMES.has(field)
          ? { id: `f-${field}`, label: SEAMLESS_LABELS[field as SeamlessField] }
          : undefined,
      )}${retype(outcome.passwordTyped)}`;
    case 'disable-problems':
      return html`${problemSummary(disableProblemCount, 'Nothing was changed.', outcome.problems, (field) =>
        field in DISABLE_LABELS ? { id: `d-${field}`, label: DISABLE_LABELS[field] as string } : undefined,
      )}${retype(outcome.passwordTyped)}`;
    case 'refused':
      return html`<div class="banner error" role="alert">
          <p><strong>Nothing was changed:</strong> ${outcome.message}</p>
        </div>
        ${busyBanner}${noControl}`;
  }
}

function statusSection(view: SeamlessView): Html {
  const { status } = view;
  const state = status?.state;
  if (view.statusError !== undefined) {
    return html`<div class="banner error" role="alert" id="seamless-status">
      <p><strong>The status could not be read:</strong> ${view.statusError}</p>
    </div>`;
  }
  if (view.busy !== undefined && status === undefined) {
    return html`<p id="seamless-status">Being changed now: the status is shown once that has finished.</p>`;
  }
  if (state === undefined) {
    return html`<p id="seamless-status">
      <strong>Off.</strong> The proxy has not joined a domain; clients are asked for a password (Basic).
    </p>`;
  }
  const winbind = status?.winbind;
  const trust = status?.trust;
  return html`<div id="seamless-status">
    <p><strong>On.</strong> The proxy is a member of ${state.domain}.</p>
    <dl class="facts">
      <dt>Domain</dt>
      <dd>${state.domain}</dd>
      <dt>Kerberos realm</dt>
      <dd>${state.realm}</dd>
      <dt>NetBIOS domain name</dt>
      <dd>${state.netbios}</dd>
      <dt>Proxy FQDN</dt>
      <dd>${state.proxyFqdn} (clients must use this name for Kerberos: HTTP/${state.proxyFqdn})</dd>
      <dt>Computer account</dt>
      <dd>${state.machineName}$</dd>
      <dt>Joined</dt>
      <dd>${utcMinute(state.joinedAt)} by ${state.adminUser}</dd>
      <dt>Winbind</dt>
      <dd class="${winbind === 'running' ? 'good' : 'bad'}">${winbind ?? 'unknown'}</dd>
      <dt>Trust with the domain</dt>
      <dd class="${trust === 'ok' ? 'good' : 'bad'}">
        ${trust === undefined ? 'unknown' : trust === 'ok' ? 'ok' : 'failing: run the doctor, then Enable again'}
      </dd>
    </dl>
  </div>`;
}

function enableForm(view: SeamlessView, problems: ReadonlyMap<string, readonly string[]>): Html {
  const { paths, values } = view;
  const repair = view.status?.state !== undefined;
  const f = fieldMaker(problems, 'f');
  return html`<h2>${repair ? 'Enable again (repair)' : 'Enable seamless'}</h2>
    ${
      repair &&
      html`<p>
        Enable again repairs a joined proxy: it keeps the computer account and renews the service keys, the
        keytab and winbind.
      </p>`
    }
    <form method="post" action="${paths.seamlessEnable}">
      <input type="hidden" name="csrf" value="${view.csrf}" />
      <fieldset>
        <legend>Windows domain</legend>
        ${f.wrap(
          'serverVersion',
          html`<label for="f-serverVersion">${SEAMLESS_LABELS.serverVersion}</label>
            <select id="f-serverVersion" name="serverVersion" ${f.describedBy('serverVersion')}>
              <option value="" ${values.serverVersion === '' ? html`selected` : ''}>Choose…</option>
              ${SERVER_VERSION_CHOICES.map(
                (c) =>
                  html`<option value="${c.value}" ${values.serverVersion === c.value ? html`selected` : ''}>
                    ${c.label}
                  </option>`,
              )}
            </select>`,
          'The oldest Windows Server version among the domain controllers: it decides the Kerberos encryption types (RC4 for 2003, AES first for 2008 and later).',
        )}
        ${f.text('domain', values.domain, SEAMLESS_LABELS.domain, 'The domain’s DNS name, for example example.test: the domain, not the domain controller’s host name.')}
        ${f.text('netbiosDomain', values.netbiosDomain, SEAMLESS_LABELS.netbiosDomain, 'The pre-Windows 2000 domain name, at most 15 characters. Blank: the first label of the domain, upper-cased (EXAMPLE for example.test).')}
      </fieldset>
      <fieldset>
        <legend>Administrator (for the join only)</legend>
        ${f.text('adminUser', values.adminUser, SEAMLESS_LABELS.adminUser, 'A member of Domain Admins: Administrator, EXAMPLE\\Administrator or administrator@EXAMPLE.TEST.')}
        ${f.password(
          'adminPassword',
          SEAMLESS_LABELS.adminPassword,
          'Used for the join and then forgotten: never stored, logged or shown.',
          'off',
        )}
      </fieldset>
      <p class="hint">
        Each step is shown as it runs; the join takes a few seconds. The domain controller must resolve the
        proxy’s name (A and PTR records) and be within 5 minutes of the proxy’s clock.
      </p>
      <button type="submit">${repair ? 'Enable again' : 'Enable'}</button>
    </form>`;
}

function disableForm(
  view: SeamlessView,
  problems: ReadonlyMap<string, readonly string[]>,
  machineName: string,
): Html {
  const d = fieldMaker(problems, 'd');
  return html`<section class="danger-zone">
    <h2>Disable</h2>
    <form method="post" action="${view.paths.seamlessDisable}">
      <input type="hidden" name="csrf" value="${view.csrf}" />
      <p class="hint">
        Leaving the domain deletes the computer account ${machineName}$ from Active Directory and needs a
        Domain Admin. Either way Squid must then be restarted: it cannot drop an authentication scheme on
        reconfigure.
      </p>
      ${d.text('adminUser', view.disableUser, DISABLE_LABELS.adminUser as string, 'Needed to leave the domain; not for Disable locally.')}
      ${d.password(
        'adminPassword',
        DISABLE_LABELS.adminPassword as string,
        'Used to leave the domain and then forgotten.',
        'off',
      )}
      <p class="actions">
        <button type="submit" class="danger" name="how" value="leave">Disable and leave the domain</button>
        <button type="submit" class="danger" name="how" value="local" aria-describedby="local-hint">
          Disable locally
        </button>
      </p>
      <p class="hint" id="local-hint">
        Disable locally needs no administrator (for when the domain controller cannot be reached): the
        computer account ${machineName}$ remains in Active Directory, to be deleted there.
      </p>
    </form>
  </section>`;
}
