import { Counter, Gauge } from 'prom-client';
import { KerberosRejectCodes } from '../seamless/reject-codes.ts';
import { family } from './registry.ts';

/**
 * Seamless sign-on in authd: how Kerberos and NTLM handshakes ended, by reason code, and the ntlm_auth pool.
 * Kerberos: OK, or the acceptor's reject code (lib/seamless/reject-codes.ts), ACCEPTOR_FAILED, or the name's
 * (FOREIGN_NAME: another realm or domain, INVALID_NAME). NTLM: OK, REFUSED (ntlm_auth's NA: a wrong password,
 * say), HELPER_BH, HELPER_FAILED (it died or timed out), INVALID_REPLY, POOL_BUSY (no ntlm_auth free in
 * time), FOREIGN_NAME, INVALID_NAME.
 */
export const KERBEROS_OUTCOMES = [
  'OK',
  ...KerberosRejectCodes,
  'ACCEPTOR_FAILED',
  'FOREIGN_NAME',
  'INVALID_NAME',
] as const;
export type KerberosOutcome = (typeof KERBEROS_OUTCOMES)[number];
export const NTLM_OUTCOMES = [
  'OK',
  'REFUSED',
  'HELPER_BH',
  'HELPER_FAILED',
  'INVALID_REPLY',
  'POOL_BUSY',
  'FOREIGN_NAME',
  'INVALID_NAME',
] as const;
export type NtlmOutcome = (typeof NTLM_OUTCOMES)[number];

/** The ntlm_auth pool now: processes leased to a handshake and handshakes waiting for one. */
export type NtlmPoolCount = () => { inUse: number; waiting: number } | undefined;

let ntlmPool: NtlmPoolCount = () => undefined;

const seamless = family((registry) => {
  const kerberos = new Counter({
    name: 'doorman_kerberos_handshakes_total',
    help: 'Kerberos (Negotiate) handshakes ended, by outcome: OK or the reason code of the refusal.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const ntlm = new Counter({
    name: 'doorman_ntlm_handshakes_total',
    help: 'NTLM handshakes ended (plain NTLM or inside Negotiate), by outcome: OK or the reason code of the refusal.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const pool = (name: string, help: string, pick: 'inUse' | 'waiting') =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(ntlmPool()?.[pick] ?? 0);
      },
    });
  pool('doorman_ntlm_auth_in_use', 'ntlm_auth processes leased to a handshake now.', 'inUse');
  pool(
    'doorman_ntlm_auth_waiting',
    'Handshakes waiting for a free ntlm_auth process now (the pool is at squid.seamless.*Children).',
    'waiting',
  );
  for (const outcome of KERBEROS_OUTCOMES) kerberos.inc({ outcome }, 0);
  for (const outcome of NTLM_OUTCOMES) ntlm.inc({ outcome }, 0);
  return { kerberos, ntlm };
});

export function countKerberos(outcome: KerberosOutcome): void {
  seamless().kerberos.inc({ outcome });
}

export function countNtlm(outcome: NtlmOutcome): void {
  seamless().ntlm.inc({ outcome });
}

/** Where the pool gauges are read from (authd's pool, once made). */
export function seamlessMetrics(count?: NtlmPoolCount): void {
  if (count !== undefined) ntlmPool = count;
  seamless();
}
