import { describe, expect, it } from 'vitest';
import { CHECK_IDS } from '../../../../../lib/seamless/doctor/check-result.ts';
import { runDoctorChecks } from '../../../../../lib/seamless/doctor/checks.ts';
import { parseNetAdsInfoOffset } from '../../../../../lib/seamless/doctor/clock.ts';
import { DC_PORTS, portProbe } from '../../../../../lib/seamless/doctor/ports.ts';
import { NET_ADS_INFO_SKEWED } from './fixtures.ts';
import { CONTEXT, GOOD, ptrAnswer, stat } from './lab-setup.ts';

describe('the doctor on the working set-up', () => {
  it('passes every check, one per id in order, no client having used NTLM', () => {
    const results = runDoctorChecks(CONTEXT, GOOD);
    expect(results.map((r) => r.id)).toEqual([...CHECK_IDS]);
    expect(results.map((r) => r.status)).toEqual([...Array<string>(11).fill('ok')]);
    expect(results.every((r) => r.ok && r.fix === undefined)).toBe(true);
  });
});

describe('the doctor on the broken set-up', () => {
  it("reports each of the lab's breaks at once, each with its fix", () => {
    const results = runDoctorChecks(CONTEXT, {
      ...GOOD,
      dns: { ...GOOD.dns, ptr: ptrAnswer(['other.example.test.']) },
      clock: parseNetAdsInfoOffset(NET_ADS_INFO_SKEWED),
      ports: DC_PORTS.map(({ port }) => portProbe(port, port === 445 ? 'ECONNREFUSED' : undefined)),
      dcKvno: 2,
      keytabFile: stat(0o100600, 0, 13),
      privilegedPipeDir: stat(0o040750, 0, 0),
      winbind: { running: true, trust: 'could not authenticate' },
      ntlmClients: { addresses: 1, clients: [{ address: '10.0.0.7', handshakes: 3, lastSeen: 0 }] },
    });
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['dns-a', 'ok'],
      ['dns-ptr', 'fail'],
      ['clock', 'fail'],
      ['ports', 'fail'],
      ['keytab-spn', 'ok'],
      ['kvno', 'fail'],
      ['enctypes', 'ok'],
      ['keytab-access', 'fail'],
      ['priv-pipe', 'fail'],
      ['winbind', 'fail'],
      ['clients-fqdn', 'note'],
    ]);
    expect(results.filter((r) => r.status === 'fail').every((r) => !r.ok && (r.fix ?? '') !== '')).toBe(true);
  });
});
