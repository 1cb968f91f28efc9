import { FactError } from './errors.ts';

/**
 * What a TCP connection to each of the domain controller's ports gave (2 s each). The ports Kerberos and the join
 * need: DNS (53), Kerberos (88), LDAP (389), SMB (445, `net ads join` and winbind). Lab REPORT §6.5: open → the
 * connection succeeds; a wrong DC address → `Connection refused`.
 */
export const DC_PORTS = [
  { port: 53, service: 'DNS' },
  { port: 88, service: 'Kerberos' },
  { port: 389, service: 'LDAP' },
  { port: 445, service: 'SMB' },
] as const;
export type DcPort = (typeof DC_PORTS)[number]['port'];

export type ProbeOutcome = 'connected' | 'refused' | 'timed-out' | 'unreachable' | 'failed';

export interface PortProbe {
  port: DcPort;
  outcome: ProbeOutcome;
  /** The socket's error code when it failed (ECONNREFUSED, ETIMEDOUT, …), for the detail. */
  code?: string;
}

/** node:net's error code (or `timeout`, when the shell's own timer fired first; undefined: connected). */
export function probeOutcomeOf(code: string | undefined): ProbeOutcome {
  switch (code) {
    case undefined:
      return 'connected';
    case 'ECONNREFUSED':
      return 'refused';
    case 'timeout':
    case 'ETIMEDOUT':
      return 'timed-out';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EHOSTDOWN':
      return 'unreachable';
    default:
      return 'failed';
  }
}

/** One probe result as the shell reports it; the port must be one of DC_PORTS. */
export function portProbe(port: number, code: string | undefined): PortProbe {
  const known = DC_PORTS.find((entry) => entry.port === port);
  if (known === undefined) {
    throw new FactError(
      'MALFORMED',
      'port',
      `${port} is not one of the domain controller's ports the doctor probes (${DC_PORTS.map((p) => p.port).join(', ')})`,
    );
  }
  const outcome = probeOutcomeOf(code);
  return code === undefined
    ? { port: known.port, outcome }
    : { port: known.port, outcome, code: code.slice(0, 32) };
}
