import { html, type Html } from '../../admin/html.ts';
import type { PortalMode } from '../../../lib/portal/settings.ts';
import type { SplashPaths } from '../paths.ts';
import { messageBlock, noticeBlock, splashLayout, type Message } from './layout.ts';

export type FormMode = Exclude<PortalMode, 'off'>;

export interface DeviceView {
  mac: string;
  /** A locally administered ("private", randomised) MAC: the page says what that means for the user. */
  randomised: boolean;
}

export interface FormView {
  paths: SplashPaths;
  mode: FormMode;
  /** The hidden CSRF field (see SplashCsrf). */
  csrf: string;
  /** The original URL as the ICAP service signed it, and its signature (see destination.ts); '' for none. */
  url: string;
  sig: string;
  /** The usage policy, plain text; '' for none. */
  policy: string;
  /** What was typed as the user name, shown again after a refusal. Never the password. */
  username?: string;
  /** Registration: the device found for the client address. */
  device?: DeviceView;
  /** Registration: the date (YYYY-MM-DD) on which registrations are cleared, if any. */
  clearDate?: string | null;
  message?: Message;
}

const TITLES: Readonly<Record<FormMode, string>> = {
  agreement: 'Before you use this network',
  authentication: 'Sign in to use this network',
  registration: 'Register this device',
};

const BUTTONS: Readonly<Record<FormMode, string>> = {
  agreement: 'Accept and continue',
  authentication: 'Sign in',
  registration: 'Register and continue',
};

/** The page for the current mode: the policy, and the sign-in fields where the mode has them. */
export function formPage(view: FormView): string {
  const { paths, mode, policy, device } = view;
  const credentials = mode !== 'agreement';
  const hasPolicy = policy.trim() !== '';
  const intro: Record<FormMode, Html> = {
    agreement: html`<p>To use this network, read the usage policy and accept it.</p>`,
    authentication: html`<p>Sign in with your organisation account to use this network.</p>`,
    registration: html`<p>
      Sign in with your organisation account to register this device. It is then connected without signing in
      again${view.clearDate ? html` until the start of ${view.clearDate}` : ''}.
    </p>`,
  };
  const randomisedText = html`This device uses a private (randomised) hardware address. If it picks another
  one (many phones do, per network or from time to time), it is no longer registered and you will have to
  register it again.`;
  // A problem with what was sent comes first; the randomised-MAC notice belongs with the device it is about,
  // after the sentence that says what the page is for. It is the page's #portal-message when there is no other.
  const randomised =
    device?.randomised === true &&
    (view.message === undefined
      ? messageBlock({ code: 'mac_randomised', tone: 'info', text: randomisedText })
      : noticeBlock('mac_randomised', randomisedText));
  return splashLayout(
    paths,
    TITLES[mode],
    html`<h1>${TITLES[mode]}</h1>
      ${messageBlock(view.message)} ${intro[mode]}
      ${device && html`<p>This device: <span class="device" id="device-mac">${device.mac}</span></p>`}
      ${randomised}
      <form id="portal-form" method="post" action="${paths.root}">
        <input type="hidden" name="csrf" value="${view.csrf}" />
        <input type="hidden" name="url" value="${view.url}" />
        <input type="hidden" name="sig" value="${view.sig}" />
        ${
          credentials &&
          html`<div class="field">
              <label for="username">User name</label>
              <input
                type="text"
                id="username"
                name="username"
                value="${view.username ?? ''}"
                autocomplete="username"
                autocapitalize="none"
                spellcheck="false"
                maxlength="256"
                required
              />
            </div>
            <div class="field">
              <label for="password">Password</label>
              <input
                type="password"
                id="password"
                name="password"
                autocomplete="current-password"
                maxlength="1024"
                required
              />
            </div>`
        }
        ${hasPolicy && policyBlock(policy)}
        ${
          credentials &&
          hasPolicy &&
          html`<div class="agree">
            <input type="checkbox" id="agree" name="agree" value="yes" required />
            <label for="agree">I have read the usage policy and accept it</label>
          </div>`
        }
        <button type="submit" id="continue">${BUTTONS[mode]}</button>
      </form>`,
  );
}

/**
 * The policy as the administrator wrote it (plain text): paragraphs at blank lines, line breaks kept. In a box
 * that scrolls when long, reachable by keyboard (tabindex) and named for screen readers (a region, labelled by
 * its heading).
 */
function policyBlock(policy: string): Html {
  return html`<div class="policy">
    <h2 id="policy-heading">Usage policy</h2>
    <div class="policy-text" id="policy" tabindex="0" role="region" aria-labelledby="policy-heading">
      ${paragraphs(policy).map((lines) => html`<p>${lines.map((l, i) => (i === 0 ? l : html`<br />${l}`))}</p>`)}
    </div>
  </div>`;
}

/** Lines grouped into paragraphs at blank lines: a split and a scan, linear in the text's length. */
export function paragraphs(text: string): string[][] {
  const out: string[][] = [];
  let current: string[] = [];
  for (const line of text.replaceAll('\r\n', '\n').replaceAll('\r', '\n').split('\n')) {
    if (line.trim() === '') {
      if (current.length > 0) out.push(current);
      current = [];
    } else current.push(line);
  }
  if (current.length > 0) out.push(current);
  return out;
}

export interface NoticeView {
  paths: SplashPaths;
  title: string;
  message: Message;
  /** More to say below the message. */
  details?: Html | undefined;
  /** A way on: back to the splash page, or on to the original page. */
  link?: { href: string; text: string } | undefined;
}

/** A page that only tells something: the portal is off, this device cannot be found, you are connected... */
export function noticePage(view: NoticeView): string {
  const { paths, title, message, details, link } = view;
  return splashLayout(
    paths,
    title,
    html`<h1>${title}</h1>
      ${messageBlock(message)} ${details} ${link && html`<p><a href="${link.href}">${link.text}</a></p>`}`,
  );
}

export interface ConnectedView {
  paths: SplashPaths;
  username: string;
  /** Registration: the device's MAC (and whether it is randomised). */
  device?: DeviceView | undefined;
  /** Hard expiry (ms), and idle limit (ms), of the session. */
  expiresAt?: number | undefined;
  idleTimeoutMs?: number | undefined;
  /** The page the user was going to, if known. */
  next?: string | undefined;
}

/** After success (or a visit while connected): who the device is connected as, and for how long. */
export function connectedPage(view: ConnectedView): string {
  const { paths, username, device } = view;
  const message: Message =
    device === undefined
      ? { code: 'connected', tone: 'ok', text: html`You are connected as <strong>${username}</strong>.` }
      : {
          code: 'registered',
          tone: 'ok',
          text: html`This device (<span class="device">${device.mac}</span>) is registered to
            <strong>${username}</strong>.`,
        };
  const limits = [
    view.idleTimeoutMs !== undefined && html`after ${minutes(view.idleTimeoutMs)} without use`,
    view.expiresAt !== undefined && html`at the latest at ${localTime(view.expiresAt)} (server time)`,
  ].filter((x) => x !== false);
  const ends =
    limits.length === 0
      ? undefined
      : html`<p>
          ${device === undefined ? 'This connection ends' : 'The registration ends'}
          ${limits.map((l, i) => (i === 0 ? l : html`, and ${l}`))}; then this page asks again.
        </p>`;
  return splashLayout(
    paths,
    device === undefined ? 'Connected' : 'Device registered',
    html`<h1>${device === undefined ? 'Connected' : 'Device registered'}</h1>
      ${messageBlock(message)}
      ${device?.randomised && noticeBlock('mac_randomised', html`This device uses a private (randomised) hardware address: if it picks another one, it is no longer registered and you will have to register it again.`)}
      ${ends}
      ${
        view.next === undefined
          ? html`<p>You can close this page and use the network.</p>`
          : html`<p><a href="${view.next}" id="next">Continue to ${view.next}</a></p>`
      }`,
  );
}

const minutes = (ms: number): string => {
  const m = Math.round(ms / 60_000);
  return m === 1 ? '1 minute' : `${m} minutes`;
};

/** YYYY-MM-DD HH:MM in the server's local time (the settings' dates are in it too). */
export function localTime(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
