import { Counter, Gauge } from 'prom-client';
import { family } from './registry.ts';

/**
 * authd, seen from both sides: serve says whether authd answered this scrape and how often its supervisor
 * restarted it; authd says how long it has run (its start time moves at every restart, however it was restarted:
 * Prometheus' changes() counts those under systemd too).
 */
export const AUTHD_RESTART_REASONS = ['died', 'unresponsive'] as const;
export type AuthdRestartReason = (typeof AUTHD_RESTART_REASONS)[number];

const fromServe = family((registry) => {
  const up = new Gauge({
    name: 'doorman_authd_up',
    help: 'Whether authd answered this scrape (1) or not (0: stopped, restarting, or stuck); its metrics are absent then.',
    registers: [registry],
  });
  const restarts = new Counter({
    name: 'doorman_authd_restarts_total',
    help: "authd processes started again by serve's supervisor, by reason (died, unresponsive: killed and replaced). Not under systemd: see doorman_authd_start_time_seconds.",
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of AUTHD_RESTART_REASONS) restarts.inc({ reason }, 0);
  return { up, restarts };
});

const fromAuthd = family((registry) => {
  const started = Date.now() / 1000;
  new Gauge({
    name: 'doorman_authd_start_time_seconds',
    help: 'When the authd answering now started, seconds since the epoch (changes at every restart).',
    registers: [registry],
    collect() {
      this.set(started);
    },
  });
  new Gauge({
    name: 'doorman_authd_uptime_seconds',
    help: 'How long the authd answering now has run.',
    registers: [registry],
    collect() {
      this.set(Date.now() / 1000 - started);
    },
  });
});

export function authdUp(up: boolean): void {
  fromServe().up.set(up ? 1 : 0);
}

export function countAuthdRestart(reason: AuthdRestartReason): void {
  fromServe().restarts.inc({ reason });
}

/** serve's side made now (present at 0). */
export function authdSupervisionMetrics(): void {
  fromServe();
}

/** authd's own side, made at its start. */
export function authdProcessMetrics(): void {
  fromAuthd();
}
