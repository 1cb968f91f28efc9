import type { ServerVersion } from '../settings.ts';

/**
 * What a doctor check is: its id and title, the context and facts it judges, the result it gives
 * (docs/seamless-design.md §3, the doctor table). A fact the shell could not gather comes as
 * `{ unavailable: why }`: the check is then skipped with that reason, never guessed.
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

export const TITLES: Record<CheckId, string> = {
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

export const pass = (id: CheckId, detail: string): CheckResult => ({
  id,
  ok: true,
  status: 'ok',
  title: TITLES[id],
  detail,
});
export const fail = (id: CheckId, detail: string, fix: string): CheckResult => ({
  id,
  ok: false,
  status: 'fail',
  title: TITLES[id],
  detail,
  fix,
});
export const skip = (id: CheckId, detail: string, fix: string): CheckResult => ({
  id,
  ok: false,
  status: 'skipped',
  title: TITLES[id],
  detail,
  fix,
});

/** The value shown for a fact that failed to parse: the FactError's message, cut. */
export function unavailable(reason: string): Unavailable {
  return { unavailable: reason.length > 512 ? `${reason.slice(0, 512)}…` : reason };
}
