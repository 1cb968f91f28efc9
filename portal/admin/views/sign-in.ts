import { html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { layout } from './layout.ts';

export interface SignInView {
  paths: AdminPaths;
  /** The form's CSRF token (see SignInCsrf). */
  csrf: string;
  /** What was typed as the user name, shown again after a refusal. Never the password. */
  user?: string;
  /** Why the last attempt was refused. */
  error?: string;
}

export function signInPage(view: SignInView): string {
  const { paths, csrf, user, error } = view;
  return layout(
    'Sign in',
    { paths },
    html`<h1>Sign in</h1>
      ${error !== undefined && html`<div class="banner error" role="alert"><p>${error}</p></div>`}
      <form method="post" action="${paths.signIn}">
        <input type="hidden" name="csrf" value="${csrf}" />
        <fieldset>
          <div class="field">
            <label for="f-user">User name</label>
            <input
              type="text"
              id="f-user"
              name="user"
              value="${user ?? ''}"
              autocomplete="username"
              required
              autofocus
            />
          </div>
          <div class="field">
            <label for="f-password">Password</label>
            <input type="password" id="f-password" name="password" autocomplete="current-password" required />
          </div>
        </fieldset>
        <button type="submit">Sign in</button>
      </form>
      <p class="hint">
        Administrators are managed on the Doorman server: <code>doorman admin passwd --user NAME</code>.
      </p>`,
  );
}
