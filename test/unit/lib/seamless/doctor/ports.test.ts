import { describe, expect, it } from 'vitest';
import { FactError } from '../../../../../lib/seamless/doctor/errors.ts';
import { DC_PORTS, portProbe, probeOutcomeOf } from '../../../../../lib/seamless/doctor/ports.ts';

describe('port probes', () => {
  it('are 53, 88, 389 and 445', () => {
    expect(DC_PORTS.map((p) => p.port)).toEqual([53, 88, 389, 445]);
  });

  it("fold node:net's outcomes: connected, refused (the lab's wrong address), timed out, unreachable", () => {
    expect(portProbe(88, undefined)).toEqual({ port: 88, outcome: 'connected' });
    expect(portProbe(88, 'ECONNREFUSED')).toEqual({ port: 88, outcome: 'refused', code: 'ECONNREFUSED' });
    expect(['timeout', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE'].map(probeOutcomeOf)).toEqual([
      'timed-out',
      'timed-out',
      'unreachable',
      'unreachable',
      'failed',
    ]);
  });

  it('refuses a port the doctor does not probe', () => {
    expect(() => portProbe(80, undefined)).toThrow(FactError);
    expect(() => portProbe(80, undefined)).toThrow(
      "port: 80 is not one of the domain controller's ports the doctor probes (53, 88, 389, 445)",
    );
  });
});
