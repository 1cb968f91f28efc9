import type { z } from 'zod';

/** One thing wrong with a value an administrator gave: the field (a dotted path) and what is wrong with it. */
export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * Every problem zod found in `input`, each with its field and the value given (cut to 64 characters), so a
 * screen or the CLI can list them all at once. An unknown field is a problem too (`unknownField` says why).
 * `markMissing`: say "(missing)" where no value was given at all.
 */
export function problemsOf(
  error: z.ZodError,
  input: unknown,
  unknownField: string,
  options: { markMissing?: boolean } = {},
): FieldProblem[] {
  return error.issues.flatMap((issue): FieldProblem[] => {
    const prefix = issue.path.join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        field: prefix === '' ? key : `${prefix}.${key}`,
        message: unknownField,
      }));
    }
    const field = prefix === '' ? '(settings)' : prefix;
    const given = valueAt(input, issue.path);
    const shown =
      given === undefined
        ? options.markMissing
          ? ' (missing)'
          : ''
        : issue.message.includes(show(given))
          ? ''
          : ` (given: ${show(given)})`;
    return [{ field, message: `${issue.message}${shown}` }];
  });
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function show(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const cut = text.length > 64 ? `${text.slice(0, 64)}…` : text;
  return typeof value === 'string' ? JSON.stringify(cut) : cut;
}
