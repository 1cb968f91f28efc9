import { krb5Enctypes, machineNetbiosName } from '../samba-config.ts';
import {
  type CheckResult,
  type DoctorContext,
  type Fact,
  fail,
  isUnavailable,
  pass,
  skip,
} from './check-result.ts';
import type { KeytabEntry } from './klist.ts';

/**
 * The HTTP keytab judged as Kerberos reads it: the service principals it holds, their key version against the
 * domain controller's, and the encryption types the server version uses (lab REPORT §6.1, §6.5).
 */

export const ENABLE_AGAIN =
  'run Enable seamless again (`doorman seamless enable`): it flushes the keytab and writes the HTTP keys afresh (net ads keytab flush -P; net ads keytab add_update_ads HTTP -P)';

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
