import { escapeHtml, html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { layout } from './layout.ts';

/** Where the streamed part goes: a comment no interpolated value can forge (those are escaped). */
const SLOT = '<!--seamless-progress-->';

/**
 * The progress page cut in two around its streamed part: `head` (the layout, the title, the intro) is sent at
 * once, then the steps and the outcome as they come, then `tail`. The CSP forbids scripts, so the page grows
 * by chunked HTML alone.
 */
export function progressPage(view: {
  paths: AdminPaths;
  user: string;
  csrf: string;
  title: string;
  intro: Html;
}): { head: string; tail: string } {
  const page = layout(
    view.title,
    { paths: view.paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'seamless' },
    html`<h1>${view.title}</h1>
      ${view.intro}
      <!--seamless-progress-->
      <p><a href="${view.paths.seamless}">Back to seamless authentication</a></p>`,
  );
  const at = page.indexOf(SLOT);
  return { head: page.slice(0, at), tail: page.slice(at + SLOT.length) };
}

const STEP_WORDS: Readonly<Record<'ok' | 'fail' | 'skipped', string>> = {
  ok: 'done',
  fail: 'failed',
  skipped: 'skipped',
};

/**
 * The steps as HTML chunks, in the order they happen: an `<li>` per step. A step reported `running` is
 * written open, with a "running…" marker; when the same step finishes next, its result is appended and the
 * item closed (the stylesheet hides a marker that is no longer the item's last child: no script needed). A step
 * finished while another was open gets an item of its own. Pure: the caller writes the chunks.
 */
export class StepList {
  #open: string | undefined;
  /** Ids given to an item already: a step reported again (finished after another began) gets none. */
  readonly #ids = new Set<string>();
  #started = false;
  #ended = false;

  /** The list's start; step() and end() write it first if nobody did. */
  start(): string {
    if (this.#started) return '';
    this.#started = true;
    return '<ol class="steps" id="seamless-steps">';
  }

  step(s: { id: string; title: string; status: string; detail?: string; fix?: string }): string {
    if (this.#ended) return '';
    let out = this.start();
    const running = s.status === 'running';
    if (this.#open !== undefined && (this.#open !== s.id || running)) out += this.#close();
    if (running) {
      this.#open = s.id;
      return `${out}${this.#openItem(s.id)}${html`<span class="title">${s.title}</span>
        <span class="running">running…</span>`}`;
    }
    const words = STEP_WORDS[s.status as keyof typeof STEP_WORDS] ?? s.status;
    const result = html`<span class="status ${s.status}">${words}</span>
      ${s.detail !== undefined && s.detail !== '' && html`<p class="detail">${s.detail}</p>`}
      ${s.fix !== undefined && s.fix !== '' && html`<p class="fix"><strong>Fix:</strong> ${s.fix}</p>`}`;
    if (this.#open === s.id) {
      this.#open = undefined;
      return `${out} ${result}</li>`;
    }
    return `${out}${this.#openItem(s.id)}${html`<span class="title">${s.title}</span> ${result}`}</li>`;
  }

  /** Closes any open item and the list; nothing is written after it. */
  end(): string {
    if (this.#ended) return '';
    const out = this.start() + (this.#open === undefined ? '' : this.#close());
    this.#ended = true;
    return `${out}</ol>`;
  }

  /**
   * An item's start tag, as a plain string: the html tag (and Prettier, which formats its templates) expects
   * whole elements, and this one is closed by a later chunk.
   */
  #openItem(id: string): string {
    if (this.#ids.has(id)) return '<li class="step">';
    this.#ids.add(id);
    return `<li class="step" id="step-${escapeHtml(id)}">`;
  }

  #close(): string {
    this.#open = undefined;
    return '</li>';
  }
}
