import type { DoctorContext } from '../../../../../lib/seamless/doctor/check-result.ts';
import type { DoctorFacts } from '../../../../../lib/seamless/doctor/checks.ts';
import { parseNetAdsInfoOffset } from '../../../../../lib/seamless/doctor/clock.ts';
import { aRecordsAnswer, ptrRecordsAnswer } from '../../../../../lib/seamless/doctor/dns.ts';
import { fileFactsOf, parseIdOutput } from '../../../../../lib/seamless/doctor/file-facts.ts';
import { parseKeyVersionNumber } from '../../../../../lib/seamless/doctor/key-version.ts';
import { parseKlistKeytab } from '../../../../../lib/seamless/doctor/klist.ts';
import { DC_PORTS, portProbe } from '../../../../../lib/seamless/doctor/ports.ts';
import { ID_PROXY, klistOutput, LAB_KEYTAB_LINES, NET_ADS_INFO_GOOD } from './fixtures.ts';

/** The lab's set-up as the checks' tests judge it: its context, and the facts of it working. */

export const CONTEXT: DoctorContext = {
  fqdn: 'proxy.example.test',
  realm: 'EXAMPLE.TEST',
  serverVersion: '2012',
  dc: '10.77.0.1',
  keytabPath: '/var/lib/doorman/samba/http.keytab',
  privilegedPipeDir: '/var/lib/doorman/samba/state/winbindd_privileged',
  helperGroup: 'proxy',
};
export const KEYTAB = parseKlistKeytab(klistOutput(LAB_KEYTAB_LINES));
export const PROXY = parseIdOutput(ID_PROXY);
export const stat = (mode: number, uid: number, gid: number) => fileFactsOf({ mode, uid, gid });
export const ptrAnswer = (names: string[]) => [{ address: '10.77.0.2', answer: ptrRecordsAnswer(names) }];

/** The lab's working set-up, as the I/O shell would hand it over. */
export const GOOD: DoctorFacts = {
  dns: {
    a: aRecordsAnswer(['10.77.0.2']),
    localAddresses: ['127.0.0.1', '10.77.0.2'],
    ptr: ptrAnswer(['proxy.example.test.']),
  },
  clock: parseNetAdsInfoOffset(NET_ADS_INFO_GOOD),
  ports: DC_PORTS.map(({ port }) => portProbe(port, undefined)),
  keytab: KEYTAB,
  dcKvno: parseKeyVersionNumber(['1']),
  keytabFile: stat(0o100640, 0, 13),
  privilegedPipeDir: stat(0o040750, 0, 13),
  helperUser: PROXY,
  winbind: { running: true, trust: true },
  ntlmClients: { addresses: 0, clients: [] },
};
