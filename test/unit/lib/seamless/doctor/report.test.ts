import { describe, expect, it } from 'vitest';
import type { DoctorContext } from '../../../../../lib/seamless/doctor/check-result.ts';
import { checkClock } from '../../../../../lib/seamless/doctor/network-checks.ts';
import { checkClientsUseFqdn } from '../../../../../lib/seamless/doctor/ntlm-checks.ts';
import { doctorReport, renderDoctorText } from '../../../../../lib/seamless/doctor/report.ts';

const CONTEXT: DoctorContext = {
  fqdn: 'proxy.example.test',
  realm: 'EXAMPLE.TEST',
  serverVersion: '2012',
  dc: '10.77.0.1',
  keytabPath: '/k',
  privilegedPipeDir: '/p',
  helperGroup: 'proxy',
};
const good = checkClock(CONTEXT, { offsetSeconds: 0, source: 'net ads info' });
const skewed = checkClock(CONTEXT, { offsetSeconds: -600, source: 'net ads info' });
const skipped = checkClock(CONTEXT, { unavailable: 'LDAP timed out' });
const note = checkClientsUseFqdn(CONTEXT, { unavailable: 'not joined' });

describe('doctorReport', () => {
  it('is ok with passes and notes, and survives JSON unchanged', () => {
    const report = doctorReport([good, note]);
    expect(report.ok).toBe(true);
    expect(report.counts).toEqual({ ok: 1, fail: 0, skipped: 0, note: 1 });
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
    expect(Object.keys(report.checks[0] ?? {})).toEqual(['id', 'ok', 'status', 'title', 'detail']);
  });

  it('is not ok with a failed or a skipped check', () => {
    expect(doctorReport([good, skewed]).ok).toBe(false);
    expect(doctorReport([good, skipped]).ok).toBe(false);
    expect(doctorReport([good, skewed, skipped, note]).counts).toEqual({
      ok: 1,
      fail: 1,
      skipped: 1,
      note: 1,
    });
  });
});

describe('renderDoctorText', () => {
  it('lists each check with its detail and fix, then a summary', () => {
    expect(renderDoctorText(doctorReport([good, skewed, note]))).toBe(
      [
        "[ok  ] The clock is within 5 minutes of the domain controller's (clock)",
        "       this host's clock is the same as the domain controller (net ads info, offset 0 s)",
        "[FAIL] The clock is within 5 minutes of the domain controller's (clock)",
        "       this host's clock is 10 min ahead of (fast) the domain controller (net ads info, offset -600 s); Kerberos refuses tickets beyond 5 min",
        `       Fix: ${skewed.fix}`,
        '[note] Clients address the proxy by its FQDN (clients-fqdn)',
        `       ${note.detail}`,
        `       Advice: ${note.fix}`,
        '',
        'Seamless authentication is not ready: 1 ok, 1 failed, 0 skipped, 1 note.',
        '',
      ].join('\n'),
    );
    expect(renderDoctorText(doctorReport([good]))).toContain(
      'All Kerberos prerequisites are met (1 ok, 0 failed, 0 skipped).',
    );
  });
});
