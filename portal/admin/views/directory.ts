import type { FieldProblem } from '../directory-admin.ts';
import { DIRECTORY_FIELDS, type DirectoryField, type DirectoryFormValues } from '../directory-form.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { fieldMaker, problemsByField, problemSummary } from './fields.ts';
import { layout } from './layout.ts';

/** What the last Save & apply did; undefined when the page is just shown. */
export type Outcome =
  | { kind: 'applied'; groupCount: number; message: string }
  | { kind: 'problems'; problems: readonly FieldProblem[]; passwordTyped: boolean }
  | { kind: 'failed'; code: string; message: string; passwordTyped: boolean };

export interface DirectoryView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  values: DirectoryFormValues;
  /** Whether a bind password is stored (the field itself is never filled). */
  hasPassword: boolean;
  /** Whether the values shown are settings in force (not a first set-up). */
  configured: boolean;
  /** Why the stored settings could not be read, if they could not. */
  unreadable: string | undefined;
  outcome?: Outcome;
}

const FIELD_NAMES: ReadonlySet<string> = new Set(DIRECTORY_FIELDS);

/** Each field's label: on the form, and in the list of problems at the top, which names every field at fault. */
const LABELS: Readonly<Record<DirectoryField, string>> = {
  kind: 'Directory service type',
  host: 'Fully-qualified domain name of the directory server',
  baseDn: 'LDAP search base',
  bindDn: 'Distinguished username',
  password: 'Password',
  transport: 'Transport',
  port: 'Port',
  address: 'Server address (optional)',
  caCertificate: 'CA certificate (optional)',
  connectTimeoutMs: 'Connect timeout (ms)',
  timeoutMs: 'Operation timeout (ms)',
  passwordCacheSeconds: 'Remember a successful password check for (seconds)',
  groupCacheSeconds: 'Remember a user’s groups for (seconds)',
};
const isFormField = (field: string): field is DirectoryField => FIELD_NAMES.has(field);

export const groupsFound = (n: number): string => `Found ${n} user group${n === 1 ? '' : 's'}`;

export function directoryPage(view: DirectoryView): string {
  const { paths, values, outcome } = view;
  const problems = problemsByField(outcome?.kind === 'problems' ? outcome.problems : []);
  const f = fieldMaker(problems, 'f');
  const text = (
    name: Exclude<DirectoryField, 'kind' | 'password' | 'transport' | 'caCertificate'>,
    value: string,
    hint: string,
  ) => f.text(name, value, LABELS[name], hint);
  const plain = values.transport === 'plain';
  return layout(
    'Directory service',
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'directory' },
    html`<h1>Directory service settings</h1>
      ${banner(view, problems)}
      <form method="post" action="${paths.directory}">
        <input type="hidden" name="csrf" value="${view.csrf}" />
        <fieldset>
          <legend>Directory</legend>
          ${f.wrap(
            'kind',
            html`<span class="label" id="f-kind">${LABELS.kind}</span>
              <label class="choice"
                ><input
                  type="radio"
                  name="kind"
                  value="active-directory"
                  ${checked(values.kind === 'active-directory')}${f.describedBy('kind')}
                />
                Windows domain (Active Directory)</label
              >
              <label class="choice"
                ><input
                  type="radio"
                  name="kind"
                  value="open-directory"
                  ${checked(values.kind === 'open-directory')}${f.describedBy('kind')}
                />
                Open directory (OpenLDAP, Open Directory)</label
              >`,
            'Users are found by sAMAccountName in a Windows domain, by uid in an open directory.',
          )}
          ${text('host', values.host, 'For example dc1.example.test. An IP address is accepted for an open directory only.')}
          ${text('baseDn', values.baseDn, 'Domain components, for example DC=example,DC=test.')}
          ${text('bindDn', values.bindDn, 'The full DN of the account Doorman searches with, for example CN=Squid Proxy,CN=Users,DC=example,DC=test (Active Directory) or uid=squid,cn=users,dc=example,dc=test (Open Directory). It need not be an administrator.')}
          ${f.password(
            'password',
            LABELS.password,
            view.hasPassword
              ? 'A password is stored. Leave this blank to keep it.'
              : 'The distinguished user’s password. It is stored on the Doorman server in a file only Doorman and Squid’s helpers can read.',
            'new-password',
          )}
        </fieldset>
        <fieldset>
          <legend>Connection</legend>
          ${f.wrap(
            'transport',
            html`<label for="f-transport">${LABELS.transport}</label>
              <select id="f-transport" name="transport" ${f.describedBy('transport')}>
                <option value="ldaps" ${selected(values.transport === 'ldaps')}>
                  LDAPS (TLS from the start, port 636)
                </option>
                <option value="starttls" ${selected(values.transport === 'starttls')}>
                  StartTLS (LDAP upgraded to TLS, port 389)
                </option>
                <option value="plain" ${selected(plain)}>Plain LDAP, not encrypted (port 389)</option>
              </select>
              <p class="warning" id="f-transport-hint" ${plain ? html` role="alert"` : ''}>
                Plain LDAP sends the distinguished user’s password, and every password Squid checks, over the
                network in clear text. Use it only on a network you trust completely.
              </p>`,
          )}
          ${text('port', values.port, 'Leave blank for the transport’s usual port: 636 for LDAPS, 389 otherwise.')}
          ${text('address', values.address, 'An IPv4 or IPv6 address to connect to instead of looking the name up in DNS. The certificate is still checked against the name above.')}
          ${f.wrap(
            'caCertificate',
            html`<label for="f-caCertificate">${LABELS.caCertificate}</label>
              <textarea
                id="f-caCertificate"
                name="caCertificate"
                rows="6"
                spellcheck="false"
                ${f.describedBy('caCertificate')}
              >
${values.caCertificate}</textarea>`,
            'PEM (-----BEGIN CERTIFICATE-----) of the authority that signed the directory server’s certificate. Blank: the system’s trusted authorities.',
          )}
          ${text('connectTimeoutMs', values.connectTimeoutMs, 'Blank: 5000.')}
          ${text('timeoutMs', values.timeoutMs, 'Blank: 10000.')}
        </fieldset>
        <fieldset>
          <legend>Caches</legend>
          ${text('passwordCacheSeconds', values.passwordCacheSeconds, 'Kept as a salted hash, never the password. 0 turns it off. Blank: 60.')}
          ${text('groupCacheSeconds', values.groupCacheSeconds, 'Blank: 60.')}
        </fieldset>
        <button type="submit">Save &amp; apply</button>
      </form>`,
  );
}

function banner(view: DirectoryView, problems: ReadonlyMap<string, readonly string[]>): Html | undefined {
  const { outcome } = view;
  const kept = view.configured
    ? 'Nothing was changed: the previous settings stay in force.'
    : 'Nothing was saved.';
  const retype = (typed: boolean) =>
    typed && html`<p>The password you typed was not kept: type it again before saving.</p>`;
  switch (outcome?.kind) {
    case undefined:
      if (view.unreadable !== undefined) {
        return html`<div class="banner error" role="alert">
          <p><strong>The stored settings cannot be read:</strong> ${view.unreadable}</p>
          <p>Enter them again and press Save &amp; apply.</p>
        </div>`;
      }
      return view.configured
        ? undefined
        : html`<div class="banner"><p>No directory service is configured yet.</p></div>`;
    case 'applied': {
      const headline = groupsFound(outcome.groupCount);
      return html`<div class="banner ok" role="status">
        <p><strong>${headline}.</strong> The settings are saved and in force.</p>
        ${outcome.message !== '' && !outcome.message.startsWith(headline) && html`<p>${outcome.message}</p>`}
      </div>`;
    }
    case 'problems':
      return problemSummary(
        problems.size,
        kept,
        outcome.problems,
        (field) => (isFormField(field) ? { id: `f-${field}`, label: LABELS[field] } : undefined),
        retype(outcome.passwordTyped),
      );
    case 'failed':
      return html`<div class="banner error" role="alert">
        <p><strong>Not applied:</strong> ${outcome.message}</p>
        <p>${kept}</p>
        ${retype(outcome.passwordTyped)}
      </div>`;
  }
}

const checked = (on: boolean) => (on ? html` checked` : '');
const selected = (on: boolean) => (on ? html` selected` : '');
