import type { CheckStatus } from '../../../lib/seamless/doctor/check-result.ts';
import type { DoctorReport } from '../../../lib/seamless/doctor/report.ts';
import { html, type Html } from '../html.ts';
import type { AdminPaths } from '../paths.ts';
import { layout } from './layout.ts';

const CHECK_MARKS: Readonly<Record<CheckStatus, string>> = {
  ok: 'OK',
  fail: 'Failed',
  skipped: 'Skipped',
  note: 'Note',
};

/** The report: a summary, then each check with what was found and, unless it passed, the fix. */
export function doctorReportHtml(report: DoctorReport): Html {
  const { ok, fail, skipped, note } = report.counts;
  const summary = [`${ok} ok`, `${fail} failed`, `${skipped} skipped`];
  if (note > 0) summary.push(`${note} note${note === 1 ? '' : 's'}`);
  return html`<section class="doctor" id="doctor-report">
    <p class="banner ${report.ok ? 'ok' : 'error'}">
      <strong
        >${report.ok ? 'All Kerberos prerequisites are met' : 'Seamless authentication is not ready'}:</strong
      >
      ${summary.join(', ')}.
    </p>
    <ul class="checks">
      ${report.checks.map(
        (check) =>
          html`<li class="check ${check.status}" id="check-${check.id}">
            <p><span class="mark">${CHECK_MARKS[check.status]}</span> <strong>${check.title}</strong></p>
            <p>${check.detail}</p>
            ${
              check.fix !== undefined &&
              html`<p class="fix">
                <strong>${check.status === 'note' ? 'Advice' : 'Fix'}:</strong> ${check.fix}
              </p>`
            }
          </li>`,
      )}
    </ul>
  </section>`;
}

export interface DoctorView {
  paths: AdminPaths;
  user: string;
  csrf: string;
  report?: DoctorReport;
  /** Why the doctor could not run. */
  error?: string;
}

export function doctorPage(view: DoctorView): string {
  const { paths } = view;
  return layout(
    'Seamless authentication: doctor',
    { paths, signedIn: { user: view.user, csrf: view.csrf }, here: 'seamless' },
    html`<h1>Doctor</h1>
      ${
        view.report === undefined
          ? html`<div class="banner error" role="alert">
              <p><strong>The doctor could not run:</strong> ${view.error ?? 'no report'}</p>
            </div>`
          : doctorReportHtml(view.report)
      }
      <p>
        <a href="${paths.seamlessDoctor}">Run it again</a> ·
        <a href="${paths.seamless}">Back to seamless authentication</a>
      </p>`,
  );
}
