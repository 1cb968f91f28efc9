import type { DoctorReport } from '../../../lib/seamless/doctor/report.ts';
import { html, type Html } from '../html.ts';
import { doctorReportHtml } from './seamless-doctor.ts';

/**
 * What the Enable and Disable progress pages end with (portal/admin/seamless-screen.ts): the outcome banner, and
 * after an Enable the doctor's report.
 */

/** Enable joined the proxy to `domain`; the doctor's report when it ran one. */
export function enabledOutcome(domain: string, doctor: DoctorReport | undefined): Html {
  return html`<div class="banner ok" role="status" id="seamless-outcome">
      <p><strong>Seamless authentication is on.</strong> The proxy is a member of ${domain}.</p>
      <p>
        Point the clients at the proxy by its fully qualified name: Kerberos needs it (by its IP address
        Windows falls back to NTLM).
      </p>
    </div>
    ${
      doctor !== undefined &&
      html`<h2>Doctor</h2>
        ${doctorReportHtml(doctor)}`
    }`;
}

/**
 * Enable did not complete: a step failed (`message` undefined: the failed step says why), or it stopped with
 * `message`; then the doctor's report or why there is none (`doctor`).
 */
export function enableFailedOutcome(message: string | undefined, doctor: Html): Html {
  return html`<div class="banner error" role="alert" id="seamless-outcome">
      ${
        message === undefined
          ? html`<p>
              <strong>Enable did not complete.</strong> Fix what the failed step and the doctor name, then
              press Enable again.
            </p>`
          : html`<p><strong>Enable did not complete:</strong> ${message}</p>`
      }
    </div>
    ${doctor}`;
}

/** Disable turned seamless off; `account`, when it did so locally, names the computer account left in AD. */
export function disabledOutcome(account: string | undefined): Html {
  return html`<div class="banner ok" role="status" id="seamless-outcome">
    <p>
      <strong>Seamless authentication is off.</strong> The generated squid.conf no longer has the Negotiate
      and NTLM lines.
    </p>
    <p>
      <strong>Restart Squid</strong> (for example <code>systemctl restart squid</code>): Squid cannot
      unconfigure an authentication scheme on reconfigure, and keeps offering it until restarted.
    </p>
    ${account !== undefined && html`<p>${account} remains in Active Directory: delete it there when it is no longer wanted.</p>`}
  </div>`;
}

/** Disable did not complete: a step failed (`message` undefined), or it stopped with `message`. */
export function disableFailedOutcome(message: string | undefined): Html {
  return html`<div class="banner error" role="alert" id="seamless-outcome">
    ${
      message === undefined
        ? html`<p>
            <strong>Disable did not complete.</strong> Fix what the failed step names and press Disable again,
            or choose Disable locally.
          </p>`
        : html`<p><strong>Disable did not complete:</strong> ${message}</p>`
    }
  </div>`;
}
