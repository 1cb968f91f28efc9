import { html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { layout } from './layout.ts';

const TITLES: Readonly<Record<number, string>> = {
  400: 'Bad request',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  413: 'Too large',
  415: 'Unsupported form',
  429: 'Too many attempts',
  500: 'Something went wrong',
  503: 'Busy: try again',
};

/** A refusal as a page. For a 500 there is no message: the details are in the server's log only. */
export function errorPage(paths: AdminPaths, status: number, message: string | undefined): string {
  const title = TITLES[status] ?? 'Error';
  return layout(
    title,
    { paths },
    html`<h1>${title}</h1>
      <div class="banner error" role="alert">
        <p>${message ?? 'The server could not complete this request. The details are in its log.'}</p>
      </div>
      <p><a href="${paths.root}">Back to the administration</a></p>`,
  );
}
