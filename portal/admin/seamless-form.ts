import { showValue } from '../../lib/errors.ts';
import {
  MAX_ADMIN_PASSWORD_LENGTH,
  parseAdminUser,
  parseSeamlessSettings,
  type SeamlessContext,
  type SeamlessSettings,
} from '../../lib/seamless/settings.ts';
import type { SeamlessState } from '../../lib/store/seamless-settings-store.ts';
import type { FieldProblem } from '../../lib/validation/problems.ts';

/**
 * The Enable seamless dialogue and the Disable form. The dialogue's field names are parseSeamlessSettings' own
 * keys, so a problem it reports for `domain` lands next to the domain input. Pure: the form's strings in, the
 * settings (and the password as a Buffer the caller zeroes) out.
 *
 * The password is never among the values shown again, and never quoted in a problem.
 */
export const SEAMLESS_FIELDS = [
  'serverVersion',
  'domain',
  'netbiosDomain',
  'adminUser',
  'adminPassword',
] as const;
export type SeamlessField = (typeof SEAMLESS_FIELDS)[number];

/** What the dialogue shows: strings as typed. The password is never among them. */
export type SeamlessFormValues = Readonly<Record<Exclude<SeamlessField, 'adminPassword'>, string>>;

/**
 * The server version choices: the three the join tells apart, and one for every later release (the parser
 * treats 2016 and later as 2012; the value sent is 2016, and the label says so).
 */
export const SERVER_VERSION_CHOICES = [
  { value: '2003', label: 'Windows Server 2003 (RC4 keys only)' },
  { value: '2008', label: 'Windows Server 2008 or 2008 R2' },
  { value: '2012', label: 'Windows Server 2012 or 2012 R2' },
  { value: '2016', label: 'Windows Server 2016 or later (treated as 2012)' },
] as const;

export const EMPTY_SEAMLESS_FORM: SeamlessFormValues = {
  serverVersion: '',
  domain: '',
  netbiosDomain: '',
  adminUser: '',
};

/** The settings of the domain the proxy joined, as the dialogue shows them for Enable again (repair). */
export function stateToForm(state: SeamlessState): SeamlessFormValues {
  return {
    serverVersion: state.serverVersion,
    domain: state.domain,
    netbiosDomain: state.netbios,
    adminUser: state.adminUser,
  };
}

const DC_RDN = /^dc=([^,=]+)$/i;

/**
 * The domain a search base names when it is made of domain components only: `DC=example,DC=test` →
 * `example.test`; undefined for anything else (`OU=Staff,DC=example,DC=test` names a part of the domain, and
 * the dialogue then starts blank rather than guess). A suggestion for a first Enable; the admin may change it.
 */
export function domainFromBaseDn(baseDn: string): string | undefined {
  if (baseDn.length > 1024) return undefined;
  const labels: string[] = [];
  for (const rdn of baseDn.split(',')) {
    const m = DC_RDN.exec(rdn.trim());
    if (m === null) return undefined;
    labels.push((m[1] as string).toLowerCase());
  }
  return labels.length >= 2 ? labels.join('.') : undefined;
}

export type SubmittedSeamlessForm =
  | { ok: true; values: SeamlessFormValues; settings: SeamlessSettings; password: Buffer }
  | { ok: false; values: SeamlessFormValues; problems: FieldProblem[]; passwordTyped: boolean };

const REQUIRED: Readonly<Record<Exclude<SeamlessField, 'netbiosDomain'>, string>> = {
  serverVersion: "choose the Windows Server version of the domain's domain controllers",
  domain: "required: the domain's DNS name, e.g. example.test",
  adminUser: 'required: a member of Domain Admins, e.g. Administrator or EXAMPLE\\Administrator',
  adminPassword: "required: the administrator's password, used for the join only and never stored",
};

/**
 * Read the posted dialogue and check it with parseSeamlessSettings: every problem at once, a blank required
 * field in plainer words than the parser's. A blank NetBIOS name is left to the parser's default (the first
 * label of the domain, upper-cased). On success the password comes back as a Buffer the caller must zero.
 */
export function readSeamlessForm(
  params: ReadonlyMap<string, string>,
  context: SeamlessContext = {},
): SubmittedSeamlessForm {
  const get = (name: SeamlessField) => params.get(name) ?? '';
  const values: SeamlessFormValues = {
    serverVersion: get('serverVersion').trim(),
    domain: get('domain').trim(),
    netbiosDomain: get('netbiosDomain').trim(),
    adminUser: get('adminUser').trim(),
  };
  // As typed: a password may begin or end with a space.
  const password = get('adminPassword');
  const own = new Map<string, string>();
  for (const [name, message] of Object.entries(REQUIRED)) {
    const blank =
      name === 'adminPassword' ? password === '' : values[name as keyof SeamlessFormValues] === '';
    if (blank) own.set(name, message);
  }
  const input: Record<string, unknown> = { ...values, adminPassword: password };
  if (values.netbiosDomain === '') delete input.netbiosDomain;
  const parsed = parseSeamlessSettings(input, context);
  if (parsed.ok && own.size === 0) {
    return { ok: true, values, settings: parsed.settings, password: parsed.password };
  }
  if (parsed.ok) parsed.password.fill(0);
  const problems: FieldProblem[] = [...own].map(([field, message]) => ({ field, message }));
  if (!parsed.ok) problems.push(...parsed.problems.filter((p) => !own.has(p.field)));
  return { ok: false, values, problems, passwordTyped: password !== '' };
}

/** The Disable form: leave the domain with an administrator's name and password, or only here ("locally"). */
export const DISABLE_FIELDS = ['how', 'adminUser', 'adminPassword'] as const;
export const DISABLE_HOWS = ['leave', 'local'] as const;
export type DisableHow = (typeof DISABLE_HOWS)[number];

export type SubmittedDisableForm =
  | { ok: true; how: DisableHow; adminUser: string; admin: { user: string; password: Buffer } | undefined }
  | { ok: false; adminUser: string; problems: FieldProblem[]; passwordTyped: boolean };

/**
 * Read the posted Disable form. `leave` needs the administrator (checked as the dialogue checks it) and the
 * password; `local` takes neither, and ignores them if typed (no Buffer is made of a password not used).
 */
export function readDisableForm(params: ReadonlyMap<string, string>): SubmittedDisableForm {
  const how = params.get('how') ?? '';
  const adminUser = (params.get('adminUser') ?? '').trim();
  const password = params.get('adminPassword') ?? '';
  const passwordTyped = password !== '';
  if (how === 'local') return { ok: true, how, adminUser, admin: undefined };
  if (how !== 'leave') {
    const problem = {
      field: 'how',
      message: `${showValue(how)} is not a way to disable: press "Disable and leave the domain" or "Disable locally"`,
    };
    return { ok: false, adminUser, problems: [problem], passwordTyped };
  }
  const problems: FieldProblem[] = [];
  if (adminUser === '') {
    problems.push({
      field: 'adminUser',
      message: 'required to leave the domain: a member of Domain Admins (or choose Disable locally)',
    });
  } else {
    const user = parseAdminUser(adminUser);
    if (typeof user === 'string')
      problems.push({ field: 'adminUser', message: `${showValue(adminUser)} ${user}` });
  }
  const passwordProblem = adminPasswordProblem(password);
  if (passwordProblem !== undefined) problems.push({ field: 'adminPassword', message: passwordProblem });
  if (problems.length > 0) return { ok: false, adminUser, problems, passwordTyped };
  return { ok: true, how, adminUser, admin: { user: adminUser, password: Buffer.from(password, 'utf8') } };
}

/** The dialogue's rules for the password (settings.ts), in words that never quote it. */
function adminPasswordProblem(password: string): string | undefined {
  if (password === '') return 'required to leave the domain (or choose Disable locally)';
  if (password.length > MAX_ADMIN_PASSWORD_LENGTH) {
    return `is longer than ${MAX_ADMIN_PASSWORD_LENGTH} characters`;
  }
  // It reaches `net ads leave` as one line on stdin: a line break or NUL would cut it short.
  if (/[\r\n\0]/.test(password)) return 'must not contain line breaks or NUL characters';
  return undefined;
}
