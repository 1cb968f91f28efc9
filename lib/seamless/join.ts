import type { SeamlessPaths } from './paths.ts';
import { type CommandRunner, describeFailure, passwordLine, type RunOutcome } from './run-command.ts';
import type { AdminUser, ServerVersion } from './settings.ts';

/**
 * The join and the HTTP service keys (docs/seamless-design.md §3, steps 2–5; lab REPORT §6.1), each one `net ads`
 * command through the injected runner, against Doorman's own smb.conf (`-s`) and krb5.conf (KRB5_CONFIG). The
 * administrator's password reaches `net ads join` on stdin only: net prompts and reads a stdin that is not a
 * terminal (lab: 0 sightings in 45,274 `ps` samples). Everything after the join uses the machine account's own
 * credentials (`-P`): no password at all.
 */

export interface DomainTools {
  paths: SeamlessPaths;
  run: CommandRunner;
}

/** The outcome of one step: what happened, and when it failed, what to do. */
export type StepOutcome =
  { ok: true; detail: string; skipped?: boolean } | { ok: false; detail: string; fix: string };

/** `net ads ARGS -s <smb.conf>` with our krb5.conf. */
export function netAds(tools: DomainTools, args: readonly string[], stdin?: Buffer): Promise<RunOutcome> {
  return tools.run({
    command: 'net',
    args: ['ads', ...args, '-s', tools.paths.smbConf],
    env: { KRB5_CONFIG: tools.paths.krb5Conf },
    ...(stdin === undefined ? {} : { stdin }),
  });
}

/**
 * `net ads ARGS -s <smb.conf>` with the administrator's password on stdin (join, leave). The Buffer handed to
 * the runner is a copy (with the line break) zeroed here too; `password` itself is the caller's to zero.
 */
export async function netAdsWithPassword(
  tools: DomainTools,
  args: readonly string[],
  password: Buffer,
): Promise<RunOutcome> {
  const line = passwordLine(password);
  try {
    return await netAds(tools, args, line);
  } finally {
    line.fill(0);
  }
}

/**
 * The user as the administrator typed it (`EXAMPLE\admin`, `admin@EXAMPLE.TEST`, `admin`): what `net -U` gets,
 * and what is shown and stored (no password).
 */
export function adminArgument(user: AdminUser): string {
  if (user.form === 'down-level') return `${user.domain ?? ''}\\${user.account}`;
  if (user.form === 'upn') return `${user.account}@${user.domain ?? ''}`;
  return user.account;
}

/** Whether the machine account already works (`net ads testjoin -P`): then the join is not repeated. */
export async function isJoined(tools: DomainTools): Promise<boolean> {
  const outcome = await netAds(tools, ['testjoin', '-P']);
  return outcome.code === 0 && /Join is OK/i.test(outcome.stdout + outcome.stderr);
}

/** `net ads join -U ADMIN --no-dns-updates`, the password on stdin (`password` is the caller's to zero). */
export async function joinDomain(
  tools: DomainTools,
  admin: AdminUser,
  password: Buffer,
): Promise<StepOutcome> {
  // --user=VALUE, one word: a name beginning with '-' can never be read as an option of net's.
  const args = ['join', `--user=${adminArgument(admin)}`, '--no-dns-updates'];
  const outcome = await netAdsWithPassword(tools, args, password);
  const said = `${outcome.stdout}\n${outcome.stderr}`;
  if (outcome.code === 0) {
    // net: "Joined 'PROXY' to dns domain 'example.test'" (older: "to realm 'EXAMPLE.TEST'").
    const joined = /Joined '([^']{1,64})' to (?:dns domain|realm) '([^']{1,253})'/i.exec(said);
    return {
      ok: true,
      detail: joined === null ? 'joined the domain' : `joined ${joined[1]} to ${joined[2]}`,
    };
  }
  return {
    ok: false,
    detail: describeFailure({ command: 'net', args: ['ads', ...args] }, outcome),
    fix: joinFix(said),
  };
}

/** The likeliest fix for a failed join, from what net said (lab REPORT §4 traps 6 and 7, §6.1). */
export function joinFix(said: string): string {
  if (/LOGON_FAILURE|Logon failure|Invalid credentials|password/i.test(said) && !/constraint/i.test(said)) {
    return "check the administrator's user name and password (a Domain Admin, or an account allowed to join computers)";
  }
  if (/Constraint violation/i.test(said)) {
    return "another account in the domain owns this proxy's HTTP/ or HOST/ service principal name (an old computer account, or a service account made for Squid): remove the SPN from it (setspn -D, or samba-tool spn delete), then Enable again";
  }
  if (/skew/i.test(said)) {
    return "set this host's clock to the domain controller's time (NTP) and Enable again";
  }
  if (/find DC|No logon servers|NO_LOGON_SERVERS|Cannot contact any KDC|resolve/i.test(said)) {
    return "this host cannot find or reach the domain controller: point /etc/resolv.conf's first nameserver at the domain's DNS (the DC), check the domain's name, and that TCP 53, 88, 389 and 445 reach the DC (run `doorman seamless doctor`)";
  }
  if (/ACCESS_DENIED|Access denied|Insufficient access/i.test(said)) {
    return 'the administrator may not join computers to the domain (or may not take over an existing computer account of the same name): use a Domain Admin';
  }
  return 'see the message above; `doorman seamless doctor` checks DNS, the clock and the ports';
}

/**
 * The HTTP/ keys: `net ads keytab add_update_ads HTTP -P` registers HTTP/<fqdn> and HTTP/<NAME> on the computer
 * account and writes their keys. It writes to a fresh file beside the keytab (smb.conf's `dedicated keytab
 * file` overridden with --option), so the live keytab is replaced whole by a rename and the acceptor never
 * sees it empty or half-written, and stale key versions (after a re-join, lab §6.1) are gone. The caller sets
 * owner and mode on `temp` before renaming it.
 */
export async function writeHttpKeys(tools: DomainTools, temp: string): Promise<StepOutcome> {
  const args = ['keytab', 'add_update_ads', 'HTTP', '-P', `--option=dedicated keytab file=FILE:${temp}`];
  const outcome = await netAds(tools, args);
  if (outcome.code === 0)
    return { ok: true, detail: 'HTTP service principals registered and their keys written' };
  return {
    ok: false,
    detail: describeFailure({ command: 'net', args: ['ads', ...args.slice(0, 3)] }, outcome),
    fix: 'the machine account cannot update itself: check `wbinfo -t` and the clock, then Enable again (it re-joins if the account is broken)',
  };
}

/** msDS-SupportedEncryptionTypes per server version: 4 = RC4 (2003), 24 = AES128 + AES256 (2008 and later). */
export function supportedEncryptionTypes(version: ServerVersion): number {
  return version === '2003' ? 4 : 24;
}

/**
 * `net ads enctypes set NAME$ N -P`: the join always sets 28 (RC4 + AES, libnet_join.c hard-codes it), so set the
 * version's own. A 2003 schema may lack the attribute: a failure here is reported and tolerated.
 */
export async function setEncryptionTypes(
  tools: DomainTools,
  machineName: string,
  version: ServerVersion,
): Promise<StepOutcome> {
  const value = supportedEncryptionTypes(version);
  const args = ['enctypes', 'set', `${machineName}$`, String(value), '-P'];
  const outcome = await netAds(tools, args);
  const names = value === 4 ? 'RC4' : 'AES128 and AES256';
  if (outcome.code === 0) return { ok: true, detail: `msDS-SupportedEncryptionTypes = ${value} (${names})` };
  return {
    ok: true,
    skipped: true,
    detail: `could not set msDS-SupportedEncryptionTypes to ${value} (${names}): ${describeFailure({ command: 'net', args: ['ads', ...args.slice(0, 2)] }, outcome)}; the account keeps the join's 28 (RC4 and AES), which works`,
  };
}
