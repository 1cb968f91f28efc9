import type { FieldProblem } from '../../lib/validation/problems.ts';

/** A one-entry-a-line text box read as a list: the entries, and the line number (from 1) each came from. */
export interface Lines {
  entries: string[];
  lineOf: number[];
}

/** Each line trimmed; blank lines left out (they are not entries), so the line numbers are kept apart. */
export function linesOf(text: string): Lines {
  const entries: string[] = [];
  const lineOf: number[] = [];
  text.split('\n').forEach((line, i) => {
    const entry = line.trim();
    if (entry === '') return;
    entries.push(entry);
    lineOf.push(i + 1);
  });
  return { entries, lineOf };
}

/**
 * A store's problem with entry `index` of a list (`cidrs.3`: index "3") as a problem of the form's text box,
 * naming the line the admin typed it on; a problem with the whole list (index undefined) as it is.
 */
export function problemsAtLines(
  field: string,
  lines: Lines,
  index: string | undefined,
  message: string,
): FieldProblem[] {
  const line = index === undefined ? undefined : lines.lineOf[Number(index)];
  return [{ field, message: line === undefined ? message : `line ${line}: ${message}` }];
}
