import { krb5Enctypes, machineNetbiosName } from '../samba-config.ts';
import type { ServerVersion } from '../settings.ts';
import type { ClockReading } from './clock.ts';
import type { DnsAnswer, DnsFailure } from './dns.ts';
import { type FileFacts, type HelperUser, mayAccess, showMode } from './file-facts.ts';
import type { KeytabEntry } from './klist.ts';
import { DC_PORTS, type PortProbe } from './ports.ts';
import type { NtlmClientsSeen } from '../../store/ntlm-client-store.ts';
import { UNKNOWN_ADDRESS } from '../ntlm-clients.ts';

/**
 * Each Kerberos prerequisite of seamless authentication as a pure function of the facts the I/O shell gathered
 * (docs/seamless-design.md §3, the doctor table; lab REPORT §6.5 for each broken state). A check says what it
 * found and, when that is wrong, the fix. A fact the shell could not gather comes as `{ unavailable: why }`: the
 * check is then skipped with that reason, never guessed.
 */

export const CHECK_IDS = [
  'dns-a',
  'dns-ptr',
  'clock',
  'ports',
  'keytab-spn',
  'kvno',
  'enctypes',
  'keytab-access',
  'priv-pipe',
  'winbind',
  'clients-fqdn',
] as const;
export type CheckId = (typeof CHECK_IDS)[number];

/** `note`: advice the doctor cannot verify from the proxy; it does not make the report fail. */
export type CheckStatus = 'ok' | 'fail' | 'skipped' | 'note';

export interface CheckResult {
  id: CheckId;
  /** False for `fail` and `skipped`. */
  ok: boolean;
  status: CheckStatus;
  title: string;
  /** What was found, with the values. */
  detail: string;
  /** What to do; present unless the check passed. */
  fix?: string;
}

export interface Unavailable {
  unavailable: string;
}
export type Fact<T> = T | Unavailable;

export function isUnavailable<T>(fact: Fact<T>): fact is Unavailable {
  return typeof fact === 'object' && fact !== null && 'unavailable' in fact;
}

/** What every check may need to know about the set-up it judges. */
export interface DoctorContext {
  /**
   * The proxy's fully qualified host name, lower-case: `proxy.example.test`. Already checked by the settings that
   * wrote smb.conf (samba-config.ts machineNetbiosName throws InvalidInputError for one that cannot be a
   * Windows computer name).
   */
  fqdn: string;
  /** The Kerberos realm: `EXAMPLE.TEST`. */
  realm: string;
  serverVersion: ServerVersion;
  /** The domain controller's address or name, for the messages. */
  dc: string;
  keytabPath: string;
  privilegedPipeDir: string;
  /** Squid's helper group (Debian: proxy), for the fixes. */
  helperGroup: string;
}

const TITLES: Record<CheckId, string> = {
  'dns-a': "The proxy's FQDN has an A record",
  'dns-ptr': "The proxy's address has a PTR record back to its FQDN",
  clock: "The clock is within 5 minutes of the domain controller's",
  ports: 'The domain controller answers on ports 53, 88, 389 and 445',
  'keytab-spn': 'The keytab holds the HTTP service principals, and nothing else',
  kvno: "The keytab's key version is the domain controller's current one",
  enctypes: 'The keytab holds the encryption types the server version uses',
  'keytab-access': "Squid's helper user can read the keytab, others cannot",
  'priv-pipe': "Squid's helper user can reach winbind's privileged pipe",
  winbind: "winbindd runs and the computer account's trust to the domain works",
  'clients-fqdn': 'Clients address the proxy by its FQDN',
};

const pass = (id: CheckId, detail: string): CheckResult => ({
  id,
  ok: true,
  status: 'ok',
  title: TITLES[id],
  detail,
});
const fail = (id: CheckId, detail: string, fix: string): CheckResult => ({
  id,
  ok: false,
  status: 'fail',
  title: TITLES[id],
  detail,
  fix,
});
const skip = (id: CheckId, detail: string, fix: string): CheckResult => ({
  id,
  ok: false,
  status: 'skipped',
  title: TITLES[id],
  detail,
  fix,
});

const ENABLE_AGAIN =
  'run Enable seamless again (`doorman seamless enable`): it flushes the keytab and writes the HTTP keys afresh (net ads keytab flush -P; net ads keytab add_update_ads HTTP -P)';

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

// -------------------------------------------------------------------------------------------------------------
// DNS

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

// -------------------------------------------------------------------------------------------------------------
// Keytab

/** The two service principals `net ads keytab add_update_ads HTTP` writes: the FQDN's and the NetBIOS name's. */
export function httpPrincipals(context: Pick<DoctorContext, 'fqdn' | 'realm'>): {
  fqdn: string;
  short: string;
} {
  const realm = context.realm.toUpperCase();
  return {
    fqdn: `HTTP/${context.fqdn}@${realm}`,
    short: `HTTP/${machineNetbiosName(context.fqdn)}@${realm}`,
  };
}

// Kerberos names are case-sensitive, but the host part of an HTTP/ SPN is matched as Windows matches it.
const samePrincipal = (a: string, b: string) => a.toUpperCase() === b.toUpperCase();

export function checkKeytabSpn(context: DoctorContext, entries: Fact<readonly KeytabEntry[]>): CheckResult {
  const id = 'keytab-spn';
  if (isUnavailable(entries))
    return skip(
      id,
      `the keytab ${context.keytabPath} could not be listed: ${entries.unavailable}`,
      ENABLE_AGAIN,
    );
  const wanted = httpPrincipals(context);
  const missing = [wanted.fqdn, wanted.short].filter(
    (p) => !entries.some((e) => samePrincipal(e.principal, p)),
  );
  const others = [
    ...new Set(entries.filter((e) => !e.principal.startsWith('HTTP/')).map((e) => e.principal)),
  ];
  const problems: string[] = [];
  if (missing.length > 0) {
    problems.push(`${entries.length === 0 ? 'it is empty: ' : ''}no keys for ${missing.join(' and ')}`);
  }
  if (others.length > 0) {
    problems.push(
      `it also holds ${others.slice(0, 5).join(', ')}${others.length > 5 ? ` and ${others.length - 5} more` : ''}: the machine account's own keys, readable by Squid's helper user (a keytab made with \`net ads keytab create\`)`,
    );
  }
  if (problems.length > 0) return fail(id, `${context.keytabPath}: ${problems.join('; ')}`, ENABLE_AGAIN);
  return pass(id, `${context.keytabPath} holds ${wanted.fqdn} and ${wanted.short}, nothing else`);
}

/** The entries of the FQDN's principal, and their highest key version. */
function fqdnKeys(
  context: DoctorContext,
  entries: readonly KeytabEntry[],
): { keys: KeytabEntry[]; kvno: number } | undefined {
  const principal = httpPrincipals(context).fqdn;
  const keys = entries.filter((e) => samePrincipal(e.principal, principal));
  if (keys.length === 0) return undefined;
  return { keys, kvno: Math.max(...keys.map((e) => e.kvno)) };
}

/** A re-join bumps the account's key version and leaves the keytab stale (lab §6.1): tickets then fail to decrypt. */
export function checkKvno(
  context: DoctorContext,
  entries: Fact<readonly KeytabEntry[]>,
  dcKvno: Fact<number>,
): CheckResult {
  const id = 'kvno';
  if (isUnavailable(entries))
    return skip(id, `the keytab could not be listed: ${entries.unavailable}`, ENABLE_AGAIN);
  if (isUnavailable(dcKvno)) {
    return skip(
      id,
      `the domain controller's key version (msDS-KeyVersionNumber) could not be read: ${dcKvno.unavailable}`,
      'check that the directory settings work (`doorman directory test`) and that the computer account exists',
    );
  }
  const principal = httpPrincipals(context).fqdn;
  const found = fqdnKeys(context, entries);
  if (found === undefined) return fail(id, `the keytab holds no keys for ${principal}`, ENABLE_AGAIN);
  if (found.kvno !== dcKvno) {
    const why =
      found.kvno < dcKvno
        ? "the computer account's password changed (a re-join, or a password change) after the keytab was written, so tickets cannot be decrypted"
        : 'the keytab is ahead of the account: it was written for another account of the same name';
    return fail(
      id,
      `the keytab has key version ${found.kvno} of ${principal}, the domain controller's current one is ${dcKvno}: ${why}`,
      ENABLE_AGAIN,
    );
  }
  return pass(id, `key version ${dcKvno} in the keytab and on the domain controller`);
}

/** The keys must come in every encryption type the krb5.conf of the server version permits (samba-config.ts). */
export function checkEnctypes(context: DoctorContext, entries: Fact<readonly KeytabEntry[]>): CheckResult {
  const id = 'enctypes';
  if (isUnavailable(entries))
    return skip(id, `the keytab could not be listed: ${entries.unavailable}`, ENABLE_AGAIN);
  const principal = httpPrincipals(context).fqdn;
  const expected = krb5Enctypes(context.serverVersion).split(' ');
  const found = fqdnKeys(context, entries);
  if (found === undefined) return fail(id, `the keytab holds no keys for ${principal}`, ENABLE_AGAIN);
  const current = found.keys.filter((e) => e.kvno === found.kvno);
  const have = new Set(current.map((e) => e.enctype));
  const missing = expected.filter((enctype) => !have.has(enctype));
  const shown = [...new Set(current.map((e) => e.enctypeShown))].join(', ');
  if (missing.length > 0) {
    return fail(
      id,
      `${principal} (key version ${found.kvno}) has ${shown}; Windows Server ${context.serverVersion} set-ups need ${expected.join(', ')}: missing ${missing.join(', ')}`,
      ENABLE_AGAIN,
    );
  }
  return pass(id, `${principal} (key version ${found.kvno}) has ${shown}`);
}

// -------------------------------------------------------------------------------------------------------------
// Access by Squid's helper user

export interface AccessFacts<T> {
  file: Fact<T>;
  user: Fact<HelperUser>;
}

/** Skipped: Squid's helper user could not be looked up, so nobody can say what it may read. */
const helperUserUnknown = (id: CheckId, context: DoctorContext, why: string): CheckResult =>
  skip(
    id,
    `Squid's helper user could not be looked up: ${why}`,
    `check that the user ${context.helperGroup} exists`,
  );

const owner = (file: FileFacts) => `uid ${file.uid}, gid ${file.gid}, mode ${showMode(file.mode)}`;

export function checkKeytabAccess(context: DoctorContext, facts: AccessFacts<FileFacts>): CheckResult {
  const id = 'keytab-access';
  const fix = `chown root:${context.helperGroup} ${context.keytabPath}; chmod 640 ${context.keytabPath}`;
  if (isUnavailable(facts.file))
    return skip(id, `${context.keytabPath}: ${facts.file.unavailable}`, `${ENABLE_AGAIN}; then ${fix}`);
  if (isUnavailable(facts.user)) return helperUserUnknown(id, context, facts.user.unavailable);
  const { file, user } = facts;
  const problems: string[] = [];
  if (file.kind !== 'file') problems.push(`it is a ${file.kind}, not a file`);
  else if (!mayAccess(file, user, 'r')) problems.push(`${user.name || `uid ${user.uid}`} may not read it`);
  if ((file.mode & 0o006) !== 0)
    problems.push('anyone on this host may read or write it, and impersonate the proxy with its keys');
  if (problems.length > 0)
    return fail(id, `${context.keytabPath} (${owner(file)}): ${problems.join('; ')}`, fix);
  return pass(
    id,
    `${context.keytabPath} (${owner(file)}) is readable by ${user.name || `uid ${user.uid}`}, not by others`,
  );
}

/**
 * winbindd checks that its privileged directory is mode 0750 (or it refuses to start); Squid's helper user then
 * needs to be in its group to reach the pipe NTLM authentication uses (lab trap 11: `BH NT_STATUS_UNSUCCESSFUL`).
 */
export function checkPrivilegedPipe(context: DoctorContext, facts: AccessFacts<FileFacts>): CheckResult {
  const id = 'priv-pipe';
  const dir = context.privilegedPipeDir;
  const fix = `chgrp ${context.helperGroup} ${dir}; chmod 0750 ${dir}`;
  if (isUnavailable(facts.file)) {
    return skip(
      id,
      `${dir}: ${facts.file.unavailable}`,
      `start winbind (run Enable seamless again), then ${fix}`,
    );
  }
  if (isUnavailable(facts.user)) return helperUserUnknown(id, context, facts.user.unavailable);
  const { file, user } = facts;
  const problems: string[] = [];
  if (file.kind !== 'directory') problems.push(`it is a ${file.kind}, not a directory`);
  if (file.mode !== 0o750) problems.push(`mode ${showMode(file.mode)}, but winbindd wants 0750`);
  if (file.kind === 'directory' && !mayAccess(file, user, 'x')) {
    problems.push(
      `${user.name || `uid ${user.uid}`} may not enter it (not its owner, and not in its group ${file.gid})`,
    );
  }
  if (problems.length > 0) return fail(id, `${dir} (${owner(file)}): ${problems.join('; ')}`, fix);
  return pass(id, `${dir} (${owner(file)}) can be entered by ${user.name || `uid ${user.uid}`}`);
}

// -------------------------------------------------------------------------------------------------------------
// winbind

export interface WinbindFacts {
  /** `wbinfo -p` answered. */
  running: boolean;
  /** `wbinfo -t`: true, or what it said when it failed (undefined when not asked: winbindd is down). */
  trust?: true | string;
}

/** NTLM goes through winbindd; its secure channel (`wbinfo -t`) breaks when the computer account is reset. */
export function checkWinbind(context: DoctorContext, facts: Fact<WinbindFacts>): CheckResult {
  const id = 'winbind';
  const restart =
    "run Enable seamless again (`doorman seamless enable`): it restarts winbindd with Doorman's smb.conf";
  if (isUnavailable(facts)) return skip(id, `winbind could not be asked: ${facts.unavailable}`, restart);
  if (!facts.running) {
    return fail(
      id,
      'winbindd does not answer `wbinfo -p`',
      `${restart}; if another winbindd (the winbind service) holds /run/samba/winbindd, stop and disable it first`,
    );
  }
  if (facts.trust !== true) {
    return fail(
      id,
      `winbindd runs, but the trust to ${context.realm} fails (wbinfo -t): ${facts.trust ?? 'not checked'}`,
      `${restart}; it re-joins when the computer account no longer works (deleted or reset in the domain)`,
    );
  }
  return pass(id, `winbindd answers and the trust to ${context.realm} works`);
}

// -------------------------------------------------------------------------------------------------------------
// Clients

/** Addresses named in the clients check at most; the rest are counted. */
export const MAX_NAMED_CLIENTS = 20;

/**
 * A Windows client set to the proxy's IP address asks for no ticket (there is no HTTP/<address> principal) and
 * falls back to NTLM. authd counts the addresses whose handshakes carried NTLM (ntlm_clients, written at most
 * once a minute); this names those of the last day, so the administrator can fix their proxy setting. A note,
 * never a failure: NTLM still signs them in. Without the table (not joined yet, a DB that cannot be read) it
 * is the advice alone.
 */
export function checkClientsUseFqdn(
  context: DoctorContext,
  seen: Fact<NtlmClientsSeen>,
  port?: number,
): CheckResult {
  const id = 'clients-fqdn';
  const address = port === undefined ? context.fqdn : `${context.fqdn}:${port}`;
  const fix = `set the proxy as ${address} in the clients' settings (group policy, PAC file), never as its IP address`;
  const why = `Windows clients ask for a Kerberos ticket for HTTP/<the name they use for the proxy>; set to its IP address they cannot, and fall back to NTLM`;
  if (isUnavailable(seen)) {
    return {
      id,
      ok: true,
      status: 'note',
      title: TITLES[id],
      detail: `${why} (which clients did is not known: ${seen.unavailable})`,
      fix,
    };
  }
  if (seen.addresses === 0) return pass(id, 'no handshake carried NTLM in the last day');
  const named = seen.clients.filter((c) => c.address !== UNKNOWN_ADDRESS);
  const unknown = seen.clients.find((c) => c.address === UNKNOWN_ADDRESS);
  const parts: string[] = [];
  if (named.length > 0) {
    const list = named.map(
      (c) =>
        `${c.address} (${c.handshakes} handshake${c.handshakes === 1 ? '' : 's'}, last ${new Date(c.lastSeen).toISOString()})`,
    );
    const more = seen.addresses - named.length - (unknown === undefined ? 0 : 1);
    parts.push(
      `${seen.addresses - (unknown === undefined ? 0 : 1)} client address${named.length === 1 && more <= 0 ? '' : 'es'} used NTLM in the last day: ${list.join(', ')}${more > 0 ? `, and ${more} more` : ''}`,
    );
  }
  if (unknown !== undefined) {
    parts.push(
      `${unknown.handshakes} NTLM handshake${unknown.handshakes === 1 ? '' : 's'} from addresses not recorded (Squid's include predates key_extras: run \`doorman squid-conf\` again; or more addresses than authd counts at once)`,
    );
  }
  return { id, ok: true, status: 'note', title: TITLES[id], detail: `${parts.join('; ')}. ${why}`, fix };
}

// -------------------------------------------------------------------------------------------------------------
// All of them

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

/** The value shown for a fact that failed to parse: the FactError's message, cut. */
export function unavailable(reason: string): Unavailable {
  return { unavailable: reason.length > 512 ? `${reason.slice(0, 512)}…` : reason };
}
