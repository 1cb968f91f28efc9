import { checkKeytabAccess, checkPrivilegedPipe } from './access-checks.ts';
import type { CheckResult, DoctorContext, Fact } from './check-result.ts';
import type { ClockReading } from './clock.ts';
import type { FileFacts, HelperUser } from './file-facts.ts';
import { checkEnctypes, checkKeytabSpn, checkKvno } from './keytab-checks.ts';
import type { KeytabEntry } from './klist.ts';
import {
  checkClock,
  checkDnsA,
  checkDnsPtr,
  checkPorts,
  type DnsAFacts,
  type PtrFacts,
} from './network-checks.ts';
import { checkClientsUseFqdn, checkWinbind, type WinbindFacts } from './ntlm-checks.ts';
import type { PortProbe } from './ports.ts';
import type { NtlmClientsSeen } from '../../store/ntlm-client-store.ts';

/**
 * Each Kerberos prerequisite of seamless authentication as a pure function of the facts the I/O shell gathered
 * (docs/seamless-design.md §3, the doctor table; lab REPORT §6.5 for each broken state). A check says what it
 * found and, when that is wrong, the fix. The checks live by what they judge: the network (network-checks.ts),
 * the keytab (keytab-checks.ts), what Squid's helper user may reach (access-checks.ts), NTLM's path
 * (ntlm-checks.ts); what a check and its result are, in check-result.ts.
 */

export interface DoctorFacts {
  dns: DnsAFacts & PtrFacts;
  clock: Fact<ClockReading>;
  ports: Fact<readonly PortProbe[]>;
  keytab: Fact<readonly KeytabEntry[]>;
  dcKvno: Fact<number>;
  keytabFile: Fact<FileFacts>;
  privilegedPipeDir: Fact<FileFacts>;
  helperUser: Fact<HelperUser>;
  winbind: Fact<WinbindFacts>;
  /** The addresses whose handshakes carried NTLM in the last day (authd's ntlm_clients table). */
  ntlmClients: Fact<NtlmClientsSeen>;
  /** The explicit proxy port, for the clients note. */
  proxyPort?: number;
}

/** Every check, in the order an administrator fixes them: the network first, then the keys, then access. */
export function runDoctorChecks(context: DoctorContext, facts: DoctorFacts): CheckResult[] {
  return [
    checkDnsA(context, facts.dns),
    checkDnsPtr(context, facts.dns),
    checkClock(context, facts.clock),
    checkPorts(context, facts.ports),
    checkKeytabSpn(context, facts.keytab),
    checkKvno(context, facts.keytab, facts.dcKvno),
    checkEnctypes(context, facts.keytab),
    checkKeytabAccess(context, { file: facts.keytabFile, user: facts.helperUser }),
    checkPrivilegedPipe(context, { file: facts.privilegedPipeDir, user: facts.helperUser }),
    checkWinbind(context, facts.winbind),
    checkClientsUseFqdn(context, facts.ntlmClients, facts.proxyPort),
  ];
}
