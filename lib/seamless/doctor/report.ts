import type { CheckResult, CheckStatus } from './check-result.ts';

/**
 * The doctor's answer as a whole: `doorman seamless doctor --json` prints the report (stable ids and statuses for
 * scripts), the CLI and the dialogue show its text. ok only when no check failed or was skipped; a note never
 * fails it.
 */
export interface DoctorReport {
  ok: boolean;
  counts: Record<CheckStatus, number>;
  checks: CheckResult[];
}

export function doctorReport(results: readonly CheckResult[]): DoctorReport {
  const counts: Record<CheckStatus, number> = { ok: 0, fail: 0, skipped: 0, note: 0 };
  // Copies without undefined fields, so JSON.stringify and a deep equality agree.
  const checks = results.map((result): CheckResult => {
    counts[result.status] += 1;
    const { id, ok, status, title, detail, fix } = result;
    return fix === undefined ? { id, ok, status, title, detail } : { id, ok, status, title, detail, fix };
  });
  return { ok: counts.fail === 0 && counts.skipped === 0, counts, checks };
}

const MARK: Record<CheckStatus, string> = { ok: 'ok  ', fail: 'FAIL', skipped: 'SKIP', note: 'note' };

/**
 * Lines for a terminal or a <pre>: one per check, its detail and fix indented below, then a summary. Plain
 * text, no colours; the caller escapes it for HTML.
 */
export function renderDoctorText(report: DoctorReport): string {
  const lines: string[] = [];
  for (const check of report.checks) {
    lines.push(`[${MARK[check.status]}] ${check.title} (${check.id})`);
    lines.push(`       ${check.detail}`);
    if (check.fix !== undefined)
      lines.push(`       ${check.status === 'note' ? 'Advice' : 'Fix'}: ${check.fix}`);
  }
  const { ok, fail, skipped, note } = report.counts;
  const summary = [`${ok} ok`, `${fail} failed`, `${skipped} skipped`];
  if (note > 0) summary.push(`${note} note${note === 1 ? '' : 's'}`);
  lines.push('');
  lines.push(
    report.ok
      ? `All Kerberos prerequisites are met (${summary.join(', ')}).`
      : `Seamless authentication is not ready: ${summary.join(', ')}.`,
  );
  return `${lines.join('\n')}\n`;
}
