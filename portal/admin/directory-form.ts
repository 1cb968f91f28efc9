import { validateDirectorySettings, type DirectorySettings } from '../../lib/directory/settings.ts';
import { showValue } from '../../lib/errors.ts';
import type { FieldProblem } from './directory-admin.ts';

/**
 * The directory settings form: its field names are the settings' own keys, so a problem reported for `port`
 * lands next to the port input. Converting between the form's strings and the settings object is here, pure.
 */
export const DIRECTORY_FIELDS = [
  'kind',
  'host',
  'baseDn',
  'bindDn',
  'password',
  'transport',
  'port',
  'address',
  'caCertificate',
  'connectTimeoutMs',
  'timeoutMs',
  'passwordCacheSeconds',
  'groupCacheSeconds',
] as const;
export type DirectoryField = (typeof DIRECTORY_FIELDS)[number];

/** What the form shows: strings as typed. The password is never among them. */
export type DirectoryFormValues = Readonly<Record<Exclude<DirectoryField, 'password'>, string>>;

const REQUIRED = ['kind', 'host', 'baseDn', 'bindDn'] as const;
const NUMBERS = [
  'port',
  'connectTimeoutMs',
  'timeoutMs',
  'passwordCacheSeconds',
  'groupCacheSeconds',
] as const;

export const EMPTY_FORM: DirectoryFormValues = {
  kind: 'active-directory',
  host: '',
  baseDn: '',
  bindDn: '',
  transport: 'ldaps',
  port: '',
  address: '',
  caCertificate: '',
  connectTimeoutMs: '',
  timeoutMs: '',
  passwordCacheSeconds: '',
  groupCacheSeconds: '',
};

/** The settings in force, as the form shows them. */
export function settingsToForm(s: DirectorySettings): DirectoryFormValues {
  const text = (n: number | undefined) => (n === undefined ? '' : String(n));
  return {
    kind: s.kind,
    host: s.host,
    baseDn: s.baseDn,
    bindDn: s.bindDn,
    transport: s.transport,
    port: text(s.port),
    address: s.address ?? '',
    caCertificate: s.caCertificate ?? '',
    connectTimeoutMs: text(s.connectTimeoutMs),
    timeoutMs: text(s.timeoutMs),
    passwordCacheSeconds: text(s.passwordCacheSeconds),
    groupCacheSeconds: text(s.groupCacheSeconds),
  };
}

export interface SubmittedForm {
  /** What to show again: as typed (single-line fields trimmed), without the password. */
  values: DirectoryFormValues;
  /** The settings to apply: blank optional fields left out, so their defaults apply. */
  input: Record<string, unknown>;
  /** undefined when left blank: keep the stored password. */
  password: string | undefined;
  /** What is wrong before the directory is even asked; empty when the input passes the schema. */
  problems: FieldProblem[];
}

/**
 * Read the posted form. Every field is checked here as the settings store will check it, so all problems are
 * listed at once without contacting the directory, as `doorman directory set` lists them: a blank required
 * field does not hide that another field is wrong, nor does a wrong field hide a problem between two others
 * (an IP address as the host of a Windows domain). Blank required fields and non-numbers get plainer words
 * than the schema's.
 */
export function readDirectoryForm(params: ReadonlyMap<string, string>, hasPassword: boolean): SubmittedForm {
  const get = (name: DirectoryField) => params.get(name) ?? '';
  const values: DirectoryFormValues = {
    kind: get('kind').trim(),
    host: get('host').trim(),
    baseDn: get('baseDn').trim(),
    bindDn: get('bindDn').trim(),
    transport: get('transport').trim(),
    port: get('port').trim(),
    address: get('address').trim(),
    // Browsers send a textarea's line ends as CRLF; PEM is read either way, LF is what a file would have.
    caCertificate: get('caCertificate').replace(/\r\n?/g, '\n').trim(),
    connectTimeoutMs: get('connectTimeoutMs').trim(),
    timeoutMs: get('timeoutMs').trim(),
    passwordCacheSeconds: get('passwordCacheSeconds').trim(),
    groupCacheSeconds: get('groupCacheSeconds').trim(),
  };
  const own = new Map<string, string>();
  const input: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(values)) {
    if (value === '') continue;
    input[name] = value;
  }
  for (const name of REQUIRED) if (values[name] === '') own.set(name, 'required');
  for (const name of NUMBERS) {
    const value = values[name];
    if (value === '') continue;
    if (/^\d{1,9}$/.test(value)) input[name] = Number(value);
    else own.set(name, `${showValue(value)} is not a whole number`);
  }
  const rawPassword = params.get('password') ?? '';
  const password = rawPassword === '' ? undefined : rawPassword;
  if (password === undefined && !hasPassword) own.set('password', 'required: no password is stored yet');

  // Our own words for the fields we checked; the schema's for every other field, all of them (a blank or
  // non-numeric field would only get the schema's blunter words for the same fault).
  const problems: FieldProblem[] = [...own].map(([field, message]) => ({ field, message }));
  const checked = validateDirectorySettings(input);
  if (!checked.ok) problems.push(...checked.problems.filter((p) => !own.has(p.field)));
  return { values, input, password, problems };
}
