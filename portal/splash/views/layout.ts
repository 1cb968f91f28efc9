import { html, type Html } from '../../admin/html.ts';
import type { SplashPaths } from '../paths.ts';

/**
 * The stable codes of the splash pages' messages: `<p id="portal-message" data-code="CODE">` (one per page),
 * and `<p class="notice" data-code="CODE">` for a second notice beside it. Tests and clients branch on these,
 * never on the words.
 */
export const SPLASH_CODES = [
  'wrong_password',
  'rate_limited',
  'csrf',
  'bad_request',
  'no_device_group',
  'mac_not_found',
  'mac_randomised',
  'portal_off',
  'directory_unavailable',
  'registered',
  'connected',
  /** From a trusted proxy without the proxy key: who the client is cannot be known. */
  'unproven_client',
  /** The session DB is locked by another process (503). */
  'unavailable',
  /** Our fault (500): details in the log only. */
  'server_error',
] as const;
export type SplashCode = (typeof SPLASH_CODES)[number];

export interface Message {
  code: SplashCode;
  text: Html | string;
  /** error: the request was refused; ok: done; info: something to know. */
  tone: 'error' | 'ok' | 'info';
}

/** The page's one message, announced by screen readers (alert for refusals, status otherwise). */
export function messageBlock(message: Message | undefined): Html | undefined {
  if (message === undefined) return undefined;
  const role = message.tone === 'error' ? 'alert' : 'status';
  const kind = `message ${message.tone}`;
  return html`<p id="portal-message" data-code="${message.code}" class="${kind}" role="${role}">
    ${message.text}
  </p>`;
}

/** A second notice (the randomised MAC), beside the message. */
export function noticeBlock(code: SplashCode, text: Html | string): Html {
  return html`<p class="notice" data-code="${code}">${text}</p>`;
}

/** A whole splash page: one h1 (the caller's), no script (the CSP forbids it), readable on a small phone. */
export function splashLayout(paths: SplashPaths, title: string, content: Html): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <title>${title}</title>
        <link rel="stylesheet" href="${paths.style}" />
      </head>
      <body>
        <main>${content}</main>
      </body>
    </html> `.toString();
}
