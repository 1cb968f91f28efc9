import { Counter, Gauge } from 'prom-client';
import { type AuditRecord, EXPIRY_REASONS } from '../audit/event.ts';
import { SessionSources, type SessionSource } from '../store/session.ts';
import { everySeries, SlotCounter } from './fixed.ts';
import { family } from './registry.ts';

/**
 * Sessions, from serve (which writes them): logins by way in, ends by way in and why, and the live ones by way
 * in, counted when scraped from the store serve holds (a count, never a list).
 */
export const SESSION_END_REASONS = ['logout', 'replaced'] as const;
export type SessionEndReason = (typeof SESSION_END_REASONS)[number];

/** Live sessions of a source, as the store counts them now; undefined while serve has no store open. */
export type LiveSessionCount = (source: SessionSource) => number | undefined;

let liveSessions: LiveSessionCount = () => undefined;

const LOGIN_SERIES = everySeries({ source: SessionSources });
/** By source, then reason: a source's slots are SESSION_END_REASONS.length wide (countSessionEnd). */
const END_SERIES = everySeries({ source: SessionSources, reason: SESSION_END_REASONS });

const sessions = family((registry) => {
  // Counted on every login: fixed slots (fixed.ts), no label key built per login.
  const logins = new SlotCounter(registry, {
    name: 'doorman_logins_total',
    help: 'Sessions started, by source: api (the login API), portal (a splash sign-in), registration (a device registered by MAC), agreement (a usage policy accepted).',
    series: LOGIN_SERIES,
  });
  const ends = new SlotCounter(registry, {
    name: 'doorman_session_ends_total',
    help: 'Sessions ended before their time, by source and reason: logout (the logout API), replaced (another user signed in on the same address or device, through the login API or the splash page).',
    series: END_SERIES,
  });
  const byAdmin = new Counter({
    name: 'doorman_sessions_ended_by_admin_total',
    help: 'Sessions ended by an administrator: on the Sessions screen (one, or all of a user) or by Clear current sessions.',
    registers: [registry],
  });
  const purged = new Counter({
    name: 'doorman_sessions_expired_total',
    help: 'Sessions ended by time, by source and reason (idle: unseen past the idle limit; hard: past the hard end; date: a registration past its clear date), counted when the hourly purge removes them (on a several-box site, by whichever box removed them).',
    labelNames: ['source', 'reason'],
    registers: [registry],
  });
  new Gauge({
    name: 'doorman_sessions_live',
    help: 'Live sessions (before their hard end) in the store, by source. Absent while the store is not open.',
    labelNames: ['source'],
    registers: [registry],
    collect() {
      this.reset();
      for (const source of SessionSources) {
        const count = liveSessions(source);
        if (count !== undefined) this.set({ source }, count);
      }
    },
  });
  for (const source of SessionSources) for (const reason of EXPIRY_REASONS) purged.inc({ source, reason }, 0);
  return { logins, ends, byAdmin, purged };
});

export function countLogin(source: SessionSource): void {
  sessions().logins.inc(SessionSources.indexOf(source));
}

export function countSessionEnd(source: SessionSource, reason: SessionEndReason): void {
  sessions().ends.inc(
    SessionSources.indexOf(source) * SESSION_END_REASONS.length + SESSION_END_REASONS.indexOf(reason),
  );
}

export function countEndedByAdmin(ended: number): void {
  sessions().byAdmin.inc(ended);
}

/**
 * Expiries, from the committed audit events the purge wrote (lib/audit/expiry.ts): one source of truth for
 * the trail and the counter. Only known sources and reasons become labels.
 */
export function countExpiries(records: readonly AuditRecord[]): void {
  for (const record of records) {
    if (record.kind !== 'session.expired') continue;
    const { source, reason } = record.detail;
    const knownSource = SessionSources.find((s) => s === source);
    const knownReason = EXPIRY_REASONS.find((r) => r === reason);
    if (knownSource !== undefined && knownReason !== undefined)
      sessions().purged.inc({ source: knownSource, reason: knownReason });
  }
}

/** Where the live sessions are counted from (serve's store, once open). */
export function sessionMetrics(count: LiveSessionCount): void {
  liveSessions = count;
  sessions();
}
