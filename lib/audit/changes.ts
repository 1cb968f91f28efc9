import type { DirectorySettings } from '../directory/settings.ts';
import type { DeviceGroup } from '../portal/settings.ts';
import { isSecretName, REDACTED } from './event.ts';

/** One changed field: its value before and after (a secret's are both REDACTED). */
export interface FieldChange {
  from: unknown;
  to: unknown;
}

/**
 * What a save changed, field by field, for settings.saved's detail: `{field: {from, to}}` for each top-level
 * field whose value differs (compared as JSON), nested objects named with dots (`limits.idle`). A field whose
 * name says secret (`password`, `bindPassword`...) or that is listed in `secrets` shows only that it changed.
 * `before` undefined (a first save): every field of `after` is new.
 */
export function settingsChanges(
  before: object | undefined,
  after: object,
  secrets: readonly string[] = [],
): Record<string, FieldChange> {
  const changes: Record<string, FieldChange> = {};
  const walk = (was: unknown, now: unknown, path: string) => {
    if (isPlain(was) || isPlain(now)) {
      const a = isPlain(was) ? was : {};
      const b = isPlain(now) ? now : {};
      for (const name of new Set([...Object.keys(a), ...Object.keys(b)]))
        walk(a[name], b[name], path === '' ? name : `${path}.${name}`);
      return;
    }
    if (JSON.stringify(was) === JSON.stringify(now)) return;
    const secret = secrets.includes(path) || path.split('.').some(isSecretName);
    changes[path] = secret ? { from: REDACTED, to: REDACTED } : { from: was ?? null, to: now ?? null };
  };
  walk(before, after, '');
  return changes;
}

const isPlain = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * settings.saved's detail for a Device Group added, changed or removed (the admin screen's and the CLI's): a
 * group decides who the portal admits, as the settings do. Its name, and its fields before and after; its id
 * is the store's, not a setting, and its networks are one line (the trail keeps strings, capped; a list that
 * deep only as its length).
 */
export function deviceGroupChange(
  action: 'added' | 'changed' | 'removed',
  before: DeviceGroup | undefined,
  after: DeviceGroup | undefined,
): Record<string, unknown> {
  const fields = (group: DeviceGroup | undefined) =>
    group === undefined
      ? undefined
      : { name: group.name, cidrs: group.cidrs.join(' '), active: group.active };
  return {
    settings: 'device-group',
    action,
    group: (after ?? before)?.name,
    changes: settingsChanges(fields(before), fields(after) ?? {}),
  };
}

/**
 * settings.saved's detail for directory settings applied (the admin screen's and `doorman directory set`'s):
 * what changed, and that a bind password was given (never it: the settings hold none, only this says so).
 */
export function directoryChange(
  before: DirectorySettings | undefined,
  after: DirectorySettings,
  passwordGiven: boolean,
): Record<string, unknown> {
  return {
    settings: 'directory',
    changes: {
      ...settingsChanges(before, after),
      ...(passwordGiven ? { bindPassword: { from: REDACTED, to: REDACTED } } : {}),
    },
  };
}
