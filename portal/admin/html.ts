/**
 * The one way admin pages are built: the `html` tagged template. The template's literal text is trusted (it is
 * in our source); every interpolated value is escaped unless it is itself Html made by this tag. There is no
 * other way to make Html, so no string reaches a page unescaped by accident.
 */

/** Only this module holds it, so only this module can make Html. */
const MINT: unique symbol = Symbol('Html');

export class Html {
  readonly #text: string;

  constructor(mint: typeof MINT, text: string) {
    if (mint !== MINT) throw new TypeError('Html is made only by the html`` template');
    this.#text = text;
  }

  toString(): string {
    return this.#text;
  }
}

/**
 * What may be interpolated: text and numbers (escaped), Html (as is), lists of these (concatenated), and
 * nothing (undefined, null, false: for `${cond && html`...`}`).
 */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  // A real template's strings are frozen and carry .raw; a plain array passed as a call is not trusted text.
  if (!Object.isFrozen(strings) || !Array.isArray(strings.raw)) throw new TypeError('html is a template tag');
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(MINT, out);
}

/**
 * Escape for text and for quoted attribute values (the templates always quote attributes). `'` and `"` both,
 * so either quote style is safe; `&` first so nothing is escaped twice.
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c as keyof typeof ESCAPES]);
}

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' } as const;

function render(value: HtmlValue): string {
  if (value instanceof Html) return value.toString();
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  // true would render as "true": a template that interpolates a bare boolean is a bug, made visible.
  return escapeHtml(String(value));
}
