import type { ApiKeyInfo } from '../../../lib/store/api-key-store.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { fieldMaker, problemsByField } from './fields.ts';
import { layout } from './layout.ts';
import { timeOf } from './time.ts';

/** What the last form on this screen did. The new key is in `created` only: never stored, never shown again. */
export type ApiKeysOutcome =
  | { kind: 'created'; name: string; key: string }
  | { kind: 'revoked'; name: string; already: boolean }
  | { kind: 'problem'; field: 'name'; message: string };

export interface ApiKeysView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  keys: readonly ApiKeyInfo[];
  /** The name field as typed after a refused create. */
  name?: string;
  outcome?: ApiKeysOutcome;
}

export function apiKeysPage(view: ApiKeysView): string {
  const { paths, keys, outcome } = view;
  const problems = problemsByField(outcome?.kind === 'problem' ? [outcome] : []);
  const f = fieldMaker(problems, 'k');
  return layout(
    'API keys',
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'api-keys' },
    html`<h1>API keys</h1>
      <p>
        Scripts and devices sign users in and out through the login API with one of these keys. Only a hash of
        each is kept: a key is shown once, when it is made.
      </p>
      ${banner(outcome)}
      <h2>Keys</h2>
      ${
        keys.length === 0
          ? html`<p id="key-count">There are no API keys yet.</p>`
          : html`<div class="table-wrap">
              <table class="keys">
                <caption class="visually-hidden">
                  API keys
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Created</th>
                    <th scope="col">Last used</th>
                    <th scope="col">State</th>
                  </tr>
                </thead>
                <tbody>
                  ${keys.map(
                    (k) =>
                      html`<tr>
                        <td data-label="Name">${k.name}</td>
                        <td data-label="Created">${timeOf(k.createdAt)}</td>
                        <td data-label="Last used">${timeOf(k.lastUsedAt, 'never')}</td>
                        <td data-label="State">
                          ${
                            k.revokedAt === undefined
                              ? html`<form method="post" action="${paths.revokeApiKey}">
                                  <input type="hidden" name="csrf" value="${view.csrf}" />
                                  <input type="hidden" name="name" value="${k.name}" />
                                  <span>In use</span>
                                  <button type="submit" class="danger">
                                    Revoke<span class="visually-hidden"> the key ${k.name}</span>
                                  </button>
                                </form>`
                              : html`<span>Revoked ${timeOf(k.revokedAt)}</span>`
                          }
                        </td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
      }
      <p class="hint">
        Last used is kept to the minute. Revoke takes effect at the key's next request, on every box; a
        revoked name stays taken.
      </p>
      <h2>Make a key</h2>
      <form method="post" action="${paths.apiKeys}">
        <input type="hidden" name="csrf" value="${view.csrf}" />
        ${f.text(
          'name',
          view.name ?? '',
          'Name',
          'Who or what will use it, as "badge-reader" or "vpn gateway": 1 to 64 letters, digits, spaces, ". _ @ -".',
          { autocomplete: 'off' },
        )}
        <button type="submit">Make the key</button>
      </form>`,
  );
}

function banner(outcome: ApiKeysOutcome | undefined): Html | false {
  if (outcome === undefined) return false;
  switch (outcome.kind) {
    case 'created':
      return html`<div class="banner ok" role="status" id="new-key">
        <p>Made the API key <strong>${outcome.name}</strong>. Copy it now: it is not shown again.</p>
        <div class="field">
          <label for="new-key-value">The key</label>
          <input
            type="text"
            id="new-key-value"
            value="${outcome.key}"
            readonly
            autocomplete="off"
            spellcheck="false"
          />
        </div>
      </div>`;
    case 'revoked':
      return html`<div class="banner ok" role="status">
        <p>
          ${
            outcome.already
              ? html`The API key <strong>${outcome.name}</strong> was revoked already.`
              : html`Revoked the API key <strong>${outcome.name}</strong>: it is refused from its next
                  request.`
          }
        </p>
      </div>`;
    case 'problem':
      return html`<div class="banner error" role="alert" id="problem-summary">
        <p><a href="#k-name">Name</a>: ${outcome.message}</p>
      </div>`;
  }
}
