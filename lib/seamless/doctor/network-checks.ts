import {
  type CheckResult,
  type DoctorContext,
  type Fact,
  fail,
  isUnavailable,
  pass,
  skip,
} from './check-result.ts';
import type { ClockReading } from './clock.ts';
import type { DnsAnswer, DnsFailure } from './dns.ts';
import { DC_PORTS, type PortProbe } from './ports.ts';

/**
 * What Kerberos needs of the network, each judged from the facts the I/O shell gathered: the proxy's name in
 * the DNS both ways, a clock within the skew of the domain controller's, and the domain controller's ports
 * open (lab REPORT §6.5 for each broken state).
 */

// -------------------------------------------------------------------------------------------------------------
// DNS

const FAILURE_WORDS: Record<DnsFailure, string> = {
  'no-such-name': 'no such name (NXDOMAIN)',
  'no-records': 'the name exists but has no records of this type',
  timeout: 'the DNS server did not answer in time',
  refused: 'the DNS server refused the query',
  'server-failure': 'the DNS server failed (SERVFAIL)',
  other: 'the lookup failed',
};
const failureText = (answer: Extract<DnsAnswer, { ok: false }>) =>
  `${FAILURE_WORDS[answer.failure]} (${answer.code})`;

export interface DnsAFacts {
  /** `resolve4(fqdn)` asked of the primary DNS server. */
  a: Fact<DnsAnswer>;
  /** This host's own IPv4 addresses. */
  localAddresses: readonly string[];
}

/** The seed's rule: the FQDN resolves, in the primary DNS, to an address of this host. */
export function checkDnsA(context: DoctorContext, facts: DnsAFacts): CheckResult {
  const id = 'dns-a';
  const addFix = `add an A record for ${context.fqdn} pointing to this host's address (${facts.localAddresses.join(', ') || 'its LAN address'}) in the DNS zone on the domain controller`;
  if (isUnavailable(facts.a))
    return skip(id, `the A record could not be looked up: ${facts.a.unavailable}`, addFix);
  if (!facts.a.ok) return fail(id, `${context.fqdn}: ${failureText(facts.a)}`, addFix);
  const local = facts.a.records.filter((address) => facts.localAddresses.includes(address));
  if (local.length === 0) {
    return fail(
      id,
      `${context.fqdn} has address ${facts.a.records.join(', ')}, none of them this host's (${facts.localAddresses.join(', ') || 'none found'})`,
      `correct the A record of ${context.fqdn} to this host's address`,
    );
  }
  return pass(id, `${context.fqdn} has address ${facts.a.records.join(', ')}`);
}

/** The reverse-lookup name of an IPv4 address: 10.77.0.2 → 2.0.77.10.in-addr.arpa. */
export function reverseName(address: string): string {
  return `${address.split('.').reverse().join('.')}.in-addr.arpa`;
}

export interface PtrFacts {
  /** `reverse(address)` for each of the FQDN's A-record addresses that is this host's. */
  ptr: Fact<readonly { address: string; answer: DnsAnswer }[]>;
}

/** The seed's rule: each of the proxy's addresses points back to the FQDN (lab: deleted → NXDOMAIN, other name). */
export function checkDnsPtr(context: DoctorContext, facts: PtrFacts): CheckResult {
  const id = 'dns-ptr';
  const generic = `add a PTR record for this host's address pointing to ${context.fqdn} in the reverse zone on the domain controller`;
  if (isUnavailable(facts.ptr))
    return skip(id, `the PTR record could not be looked up: ${facts.ptr.unavailable}`, generic);
  if (facts.ptr.length === 0) {
    return skip(
      id,
      `no address of this host to look up: ${context.fqdn} has no A record for it`,
      'fix the A record first',
    );
  }
  const problems: string[] = [];
  const fixes: string[] = [];
  for (const { address, answer } of facts.ptr) {
    const name = reverseName(address);
    if (!answer.ok) {
      problems.push(`${address} (${name}): ${failureText(answer)}`);
      fixes.push(`add the PTR record ${name} → ${context.fqdn}.`);
    } else if (!answer.records.includes(context.fqdn)) {
      problems.push(`${address} points to ${answer.records.join(', ')}, not ${context.fqdn}`);
      fixes.push(`change the PTR record ${name} from ${answer.records.join(', ')} to ${context.fqdn}.`);
    }
  }
  if (problems.length > 0)
    return fail(id, problems.join('; '), `in the reverse zone on the domain controller: ${fixes.join('; ')}`);
  return pass(id, facts.ptr.map(({ address }) => `${address} points to ${context.fqdn}`).join('; '));
}

// -------------------------------------------------------------------------------------------------------------
// Clock

/** Kerberos' default maximum skew (MIT `clockskew`, Windows "Maximum tolerance for computer clock synchronization"). */
export const MAX_SKEW_SECONDS = 300;

/** `630` → `10 min 30 s`. */
export function showDuration(seconds: number): string {
  const s = Math.abs(Math.round(seconds));
  const parts: string[] = [];
  const hours = Math.floor(s / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  if (hours > 0) parts.push(`${hours} h`);
  if (minutes > 0) parts.push(`${minutes} min`);
  if (s % 60 > 0 || parts.length === 0) parts.push(`${s % 60} s`);
  return parts.join(' ');
}

export function checkClock(context: DoctorContext, reading: Fact<ClockReading>): CheckResult {
  const id = 'clock';
  const fix = `set this host's clock right and keep it so: point its NTP client (chrony, systemd-timesyncd) at the same time source as the domain controller ${context.dc} (a Samba DC serves no NTP itself)`;
  if (isUnavailable(reading))
    return skip(id, `the domain controller's time could not be read: ${reading.unavailable}`, fix);
  const offset = reading.offsetSeconds;
  // offset = DC − local: negative means the local clock is ahead.
  const how =
    offset === 0
      ? 'the same as the domain controller'
      : `${showDuration(offset)} ${offset < 0 ? 'ahead of (fast)' : 'behind (slow)'} the domain controller`;
  const detail = `this host's clock is ${how} (${reading.source}, offset ${offset} s)`;
  if (Math.abs(offset) > MAX_SKEW_SECONDS) {
    return fail(id, `${detail}; Kerberos refuses tickets beyond ${showDuration(MAX_SKEW_SECONDS)}`, fix);
  }
  return pass(id, detail);
}

// -------------------------------------------------------------------------------------------------------------
// Ports

export function checkPorts(context: DoctorContext, probes: Fact<readonly PortProbe[]>): CheckResult {
  const id = 'ports';
  const generic = `check the domain controller's address (${context.dc}) in the directory settings, and that no firewall between this host and it blocks TCP 53, 88, 389 and 445`;
  if (isUnavailable(probes)) return skip(id, `the ports could not be probed: ${probes.unavailable}`, generic);
  const problems: string[] = [];
  let refused = false;
  let silent = false;
  for (const { port, service } of DC_PORTS) {
    const probe = probes.find((p) => p.port === port);
    if (probe === undefined) problems.push(`${port} (${service}) not probed`);
    else if (probe.outcome !== 'connected') {
      problems.push(
        `${port} (${service}) ${probe.outcome}${probe.code === undefined ? '' : ` (${probe.code})`}`,
      );
      if (probe.outcome === 'refused') refused = true;
      if (probe.outcome === 'timed-out' || probe.outcome === 'unreachable') silent = true;
    }
  }
  if (problems.length === 0)
    return pass(id, `${context.dc} accepted connections on ${DC_PORTS.map((p) => p.port).join(', ')}`);
  const fixes: string[] = [];
  if (refused) {
    fixes.push(
      `a refused port means nothing listens there: check that ${context.dc} is the domain controller and its services run`,
    );
  }
  if (silent)
    fixes.push(
      `a port that times out or is unreachable is usually filtered: open it in the firewalls between this host and ${context.dc}`,
    );
  if (fixes.length === 0) fixes.push(generic);
  return fail(id, `${context.dc}: ${problems.join(', ')}`, fixes.join('; '));
}
