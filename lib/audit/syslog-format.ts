import { type AuditRecord, auditJsonLine } from './event.ts';

/** authpriv.info: the facility of security messages that only root reads (RFC 5424's 10 × 8 + 6). */
export const AUDIT_PRIORITY = 10 * 8 + 6;
export const AUDIT_TAG = 'doorman-audit';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'] as const;

/**
 * One datagram for /dev/log, as glibc's syslog(3) writes it (RFC 3164 without the host name, which the
 * receiver adds): `<86>Nov 27 04:00:00 doorman-audit[1234]: {"at":...}`. Both journald (which takes the
 * tag as SYSLOG_IDENTIFIER and skips the date) and rsyslog parse exactly this; the JSON line is the message.
 * The date is the local time the event was shipped at (the event's own time is in the JSON, in UTC).
 */
export function syslogDatagram(record: AuditRecord, pid: number, now: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  const day = String(now.getDate()).padStart(2, ' ');
  const time = `${pad(now.getHours())}:${pad(now.getMinutes())}:${pad(now.getSeconds())}`;
  return `<${AUDIT_PRIORITY}>${MONTHS[now.getMonth()]} ${day} ${time} ${AUDIT_TAG}[${pid}]: ${auditJsonLine(record)}`;
}
