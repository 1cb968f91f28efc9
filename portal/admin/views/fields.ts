import type { FieldProblem } from '../../../lib/validation/problems.ts';
import { html, type Html } from '../html.ts';

/** Every problem of a field, in the order reported: all of them are shown, at the field and in the summary. */
export function problemsByField(problems: readonly FieldProblem[]): Map<string, string[]> {
  const byField = new Map<string, string[]>();
  for (const p of problems) byField.set(p.field, [...(byField.get(p.field) ?? []), p.message]);
  return byField;
}

/**
 * Field markup with its label, hint and problems, tied together for screen readers by aria-describedby.
 * `prefix` keeps the ids of two forms on one page apart (`f-name`, `g-name`); the error summary links to
 * `#prefix-field`.
 */
export function fieldMaker(problems: ReadonlyMap<string, readonly string[]>, prefix: string) {
  const id = (name: string) => `${prefix}-${name}`;
  const describedBy = (name: string) =>
    problems.has(name)
      ? html` aria-invalid="true" aria-describedby="${id(name)}-problem ${id(name)}-hint"`
      : html` aria-describedby="${id(name)}-hint"`;
  /** One paragraph (the one aria-describedby names), a line per problem; nothing when the field is fine. */
  const problem = (name: string) => {
    const messages = problems.get(name);
    const lines = messages?.map((m, i) => (i === 0 ? m : html`<br />${m}`));
    return lines !== undefined && html`<p class="problem" id="${id(name)}-problem">${lines}</p>`;
  };
  /** Without a hint, the control carries the paragraph with id `prefix-name-hint` itself. */
  const wrap = (name: string, control: Html, hint?: string) =>
    html`<div class="field${problems.has(name) ? ' invalid' : ''}">
      ${control} ${problem(name)}
      ${hint !== undefined && html`<p class="hint" id="${id(name)}-hint">${hint}</p>`}
    </div>`;
  const text = (
    name: string,
    value: string,
    label: string,
    hint: string,
    options: { type?: 'text' | 'date' | 'password'; inputmode?: 'numeric'; autocomplete?: string } = {},
  ) =>
    wrap(
      name,
      html`<label for="${id(name)}">${label}</label>
        <input
          type="${options.type ?? 'text'}"
          id="${id(name)}"
          name="${name}"
          value="${value}"
          ${options.inputmode === undefined ? '' : html`inputmode="${options.inputmode}"`}
          ${options.autocomplete === undefined ? '' : html`autocomplete="${options.autocomplete}"`}
          ${describedBy(name)}
        />`,
      hint,
    );
  /** Never filled in: a password is not sent back to the browser, not even the one just typed. */
  const password = (name: string, label: string, hint: string, autocomplete: 'off' | 'new-password') =>
    text(name, '', label, hint, { type: 'password', autocomplete });
  const area = (name: string, value: string, label: string, hint: string, rows: number) =>
    wrap(
      name,
      html`<label for="${id(name)}">${label}</label>
        <textarea id="${id(name)}" name="${name}" rows="${rows}" ${describedBy(name)}>${value}</textarea>`,
      hint,
    );
  const checkbox = (name: string, checked: boolean, label: string, hint: string) =>
    wrap(
      name,
      html`<label class="choice" for="${id(name)}"
        ><input
          type="checkbox"
          id="${id(name)}"
          name="${name}"
          value="on"
          ${checked ? html`checked` : ''}
          ${describedBy(name)}
        />
        ${label}</label
      >`,
      hint,
    );
  return { id, describedBy, problem, wrap, text, password, area, checkbox };
}

/**
 * Every problem in one list at the top, each naming its field with a link to it (an error summary); a field
 * the form does not have is named by its key, as the store reports it.
 */
export function problemSummary(
  count: number,
  kept: string,
  problems: readonly FieldProblem[],
  fieldOf: (field: string) => { id: string; label: string } | undefined,
  /** More for the same alert, after the list. */
  more?: Html | false,
): Html {
  return html`<div class="banner error" role="alert" id="problem-summary">
    <p><strong>${count === 1 ? '1 field needs' : `${count} fields need`} attention.</strong> ${kept}</p>
    <ul>
      ${problems.map((p) => {
        const at = fieldOf(p.field);
        return at === undefined
          ? html`<li>${p.field === '' ? '' : `${p.field}: `}${p.message}</li>`
          : html`<li><a href="#${at.id}">${at.label}</a>: ${p.message}</li>`;
      })}
    </ul>
    ${more}
  </div>`;
}
