import { showValue } from '../../lib/errors.ts';
import {
  isCalendarDate,
  MAX_TIMEOUT_MINUTES,
  PORTAL_MODES,
  type PortalMode,
  type PortalSettings,
} from '../../lib/portal/settings.ts';
import type { FieldProblem } from '../../lib/validation/problems.ts';
import { linesOf, problemsAtLines, type Lines } from './lines.ts';

/**
 * The captive portal settings form. Its fields are the settings' own keys, except the walled garden's two
 * lists (one entry a line), so a problem the settings store reports for `idleTimeoutMinutes` lands next to
 * that input and one for `walledGarden.hosts.3` next to the hosts box, naming the line. Pure: converting
 * between the form's strings and the settings object, nothing else.
 */
export const PORTAL_FIELDS = [
  'mode',
  'idleTimeoutMinutes',
  'hardTimeoutMinutes',
  'registrationClearDate',
  'policyText',
  'walledHosts',
  'walledCidrs',
] as const;
export type PortalField = (typeof PORTAL_FIELDS)[number];

/** What the form shows: strings as typed. */
export type PortalFormValues = Readonly<Record<PortalField, string>>;

/** The settings in force, as the form shows them (blank: none). */
export function portalSettingsToForm(s: PortalSettings): PortalFormValues {
  const minutes = (n: number | null) => (n === null ? '' : String(n));
  return {
    mode: s.mode,
    idleTimeoutMinutes: minutes(s.idleTimeoutMinutes),
    hardTimeoutMinutes: minutes(s.hardTimeoutMinutes),
    registrationClearDate: s.registrationClearDate ?? '',
    policyText: s.policyText,
    walledHosts: s.walledGarden.hosts.join('\n'),
    walledCidrs: s.walledGarden.cidrs.join('\n'),
  };
}

export interface SubmittedPortalForm {
  values: PortalFormValues;
  /** Every field of PortalSettings, for PortalSettingsStore.save. A field with a problem of our own keeps its text, which the store refuses. */
  input: Record<string, unknown>;
  /** What we found wrong ourselves, in plainer words than the schema's (blank means none, not null). */
  own: FieldProblem[];
  hosts: Lines;
  cidrs: Lines;
}

const WHOLE = /^\d{1,7}$/;
const isMode = (text: string): text is PortalMode => (PORTAL_MODES as readonly string[]).includes(text);

/**
 * Read the posted form. A blank timeout or date is "none" (null). A value we can tell is wrong gets our own
 * message and is passed on as typed: the settings store then refuses the save and lists every other problem,
 * so all of them are shown at once, and nothing is written.
 */
export function readPortalForm(params: ReadonlyMap<string, string>): SubmittedPortalForm {
  const get = (name: PortalField) => params.get(name) ?? '';
  // Browsers send a textarea's line ends as CRLF; what is stored and shown again has LF.
  const text = (name: PortalField) => get(name).replace(/\r\n?/g, '\n');
  const values: PortalFormValues = {
    mode: get('mode').trim(),
    idleTimeoutMinutes: get('idleTimeoutMinutes').trim(),
    hardTimeoutMinutes: get('hardTimeoutMinutes').trim(),
    registrationClearDate: get('registrationClearDate').trim(),
    policyText: text('policyText').trim(),
    walledHosts: text('walledHosts'),
    walledCidrs: text('walledCidrs'),
  };
  const own: FieldProblem[] = [];
  if (!isMode(values.mode)) {
    own.push({
      field: 'mode',
      message:
        values.mode === ''
          ? 'choose one of the four modes'
          : `${showValue(values.mode)} is not one of the four modes`,
    });
  }
  const minutes = (field: 'idleTimeoutMinutes' | 'hardTimeoutMinutes'): unknown => {
    const value = values[field];
    if (value === '') return null;
    const n = WHOLE.test(value) ? Number(value) : Number.NaN;
    if (n >= 1 && n <= MAX_TIMEOUT_MINUTES) return n;
    own.push({
      field,
      message: `${showValue(value)} is not a whole number of minutes from 1 to ${MAX_TIMEOUT_MINUTES} (one year); leave it blank for none`,
    });
    return value;
  };
  const idleTimeoutMinutes = minutes('idleTimeoutMinutes');
  const hardTimeoutMinutes = minutes('hardTimeoutMinutes');
  const date = values.registrationClearDate;
  if (date !== '' && !isCalendarDate(date)) {
    own.push({
      field: 'registrationClearDate',
      message: `${showValue(date)} is not a date written YYYY-MM-DD; leave it blank for never`,
    });
  }
  const hosts = linesOf(values.walledHosts);
  const cidrs = linesOf(values.walledCidrs);
  const input = {
    mode: values.mode,
    idleTimeoutMinutes,
    hardTimeoutMinutes,
    registrationClearDate: date === '' ? null : date,
    policyText: values.policyText,
    walledGarden: { hosts: hosts.entries, cidrs: cidrs.entries },
  };
  return { values, input, own, hosts, cidrs };
}

/**
 * The store's problems as the form's: each under the form field that holds it (a list entry's problem
 * names its line), ours instead of the store's where we found the field wrong ourselves. Ours first, then
 * the store's in its order (PortalSettings order).
 */
export function portalFormProblems(
  form: SubmittedPortalForm,
  stored: readonly FieldProblem[],
): FieldProblem[] {
  const ownFields = new Set(form.own.map((p) => p.field));
  const mapped = stored.flatMap((p): FieldProblem[] => {
    const [head, list, index] = p.field.split('.');
    if (head === 'walledGarden' && list === 'hosts') {
      return problemsAtLines('walledHosts', form.hosts, index, p.message);
    }
    if (head === 'walledGarden' && list === 'cidrs') {
      return problemsAtLines('walledCidrs', form.cidrs, index, p.message);
    }
    return ownFields.has(p.field) ? [] : [p];
  });
  return [...form.own, ...mapped];
}
