import { isIP } from 'node:net';
import { z } from 'zod';
import { type FieldProblem, problemsOf } from '../validation/problems.ts';
import { isHostName } from '../directory/settings.ts';
import { showValue } from '../errors.ts';
import { expandIPv6, normaliseIp } from '../net/address.ts';

/**
 * The captive portal's settings (one row, see lib/store/portal-settings-store.ts) and Device Groups (see
 * lib/store/device-group-store.ts): what the admin screen, the CLI, the ICAP decision and the splash pages
 * share. Pure: no DB, no clock (a "today" is passed in where the date matters).
 *
 * Every value comes from an administrator (a form field, a CLI argument, a file), so every check here runs in
 * time linear in its length: character scans, node:net, and anchored patterns without overlapping quantifiers.
 */

export const PORTAL_MODES = ['off', 'agreement', 'authentication', 'registration'] as const;
export type PortalMode = (typeof PORTAL_MODES)[number];

export interface PortalSettings {
  mode: PortalMode;
  /** Authentication and Usage Agreement: minutes without traffic before the session ends; null = none. */
  idleTimeoutMinutes: number | null;
  /** Authentication and Usage Agreement: maximum minutes from sign-in; null = none. */
  hardTimeoutMinutes: number | null;
  /** Device Registration: the date (YYYY-MM-DD, server local time) on which every registration is cleared; null = never. */
  registrationClearDate: string | null;
  /** The usage policy shown on the splash page (plain text, ≤ 20,000 chars); '' = none. */
  policyText: string;
  /** Reachable without being identified: host names (exact or *.suffix) and CIDRs. */
  walledGarden: { hosts: string[]; cidrs: string[] };
}

/** Frozen, lists included: copy it before changing anything. */
export const DEFAULT_PORTAL_SETTINGS: PortalSettings = Object.freeze({
  mode: 'off',
  idleTimeoutMinutes: 60,
  hardTimeoutMinutes: 480,
  registrationClearDate: null,
  policyText: '',
  walledGarden: Object.freeze({
    hosts: Object.freeze([]) as unknown as string[],
    cidrs: Object.freeze([]) as unknown as string[],
  }),
});

export interface DeviceGroup {
  id: number;
  name: string;
  cidrs: string[];
  active: boolean;
}

/** One wrong field: its dotted name, and what is wrong with the value given (the value included). */
export type PortalProblem = FieldProblem;

/** Longest timeout: one year of minutes. */
export const MAX_TIMEOUT_MINUTES = 525_600;
export const MAX_POLICY_LENGTH = 20_000;
export const MAX_WALLED_HOSTS = 200;
export const MAX_WALLED_CIDRS = 500;
export const MAX_HOST_LENGTH = 253;
export const MAX_GROUP_NAME_LENGTH = 64;
export const MAX_GROUP_CIDRS = 1000;
/** The longest CIDR text: an IPv6 address with an IPv4 tail (45) and "/128". */
const MAX_CIDR_LENGTH = 49;

// ---------------------------------------------------------------------------------------------------------
// CIDRs

/** A parsed network: the address family, the prefix length, and the network bits shifted down to `prefix` bits. */
export interface Cidr {
  family: 4 | 6;
  prefix: number;
  /** The network's leading `prefix` bits (the address shifted right by width - prefix). */
  bits: bigint;
}

const WIDTH = { 4: 32, 6: 128 } as const;
const PREFIX = /^(?:0|[1-9]\d{0,2})$/;
const MAPPED = 0xffffn << 32n;

/** An address node:net accepts, as its family and 32 or 128 bits; IPv4-mapped IPv6 is its IPv4 address. */
function addressBits(input: string): { family: 4 | 6; value: bigint } | undefined {
  const ip = normaliseIp(input);
  if (ip === undefined) return undefined;
  if (!ip.includes(':')) {
    const value = ip.split('.').reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
    return { family: 4, value };
  }
  const groups = expandIPv6(ip);
  if (groups === undefined) return undefined;
  return { family: 6, value: groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n) };
}

/**
 * `10.0.0.0/8`, `2001:db8::/32`, or a single address (a /32 or /128). Host bits below the prefix are
 * dropped (`10.1.2.3/8` is `10.0.0.0/8`). An IPv4-mapped IPv6 network of /96 or longer is the IPv4 network
 * it maps (`::ffff:10.0.0.0/104` is `10.0.0.0/8`), as clients seen through a dual-stack socket are matched
 * as IPv4. Zone IDs are refused. Undefined for anything else.
 */
export function parseCidr(text: string): Cidr | undefined {
  if (text.length === 0 || text.length > MAX_CIDR_LENGTH) return undefined;
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const prefixText = slash < 0 ? undefined : text.slice(slash + 1);
  const written = isIP(address) as 0 | 4 | 6;
  if (written === 0) return undefined;
  const parsed = addressBits(address);
  if (parsed === undefined) return undefined;
  let prefix: number = WIDTH[written];
  if (prefixText !== undefined) {
    if (!PREFIX.test(prefixText)) return undefined;
    prefix = Number(prefixText);
    if (prefix > WIDTH[written]) return undefined;
  }
  let { family, value } = parsed;
  if (written === 6 && family === 4) {
    // Written as ::ffff:a.b.c.d: the IPv4 network if the prefix covers the whole mapped part.
    if (prefix >= 96) prefix -= 96;
    else {
      family = 6;
      value = MAPPED | value;
    }
  }
  return { family, prefix, bits: value >> BigInt(WIDTH[family] - prefix) };
}

/** A CIDR's one written form: the network address (normalised as in net/address.ts), "/", the prefix. */
export function formatCidr(cidr: Cidr): string {
  const width = WIDTH[cidr.family];
  const value = cidr.bits << BigInt(width - cidr.prefix);
  if (cidr.family === 4) {
    const octets = [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn));
    return `${octets.join('.')}/${cidr.prefix}`;
  }
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) =>
    ((value >> shift) & 0xffffn).toString(16),
  );
  // A network shorter than /96 never has the mapped form (its bit 95 is zero), so this stays IPv6.
  return `${normaliseIp(groups.join(':')) ?? groups.join(':')}/${cidr.prefix}`;
}

/** parseCidr then formatCidr: the stored spelling of a CIDR, or undefined if it is none. */
export function normaliseCidr(text: string): string | undefined {
  const cidr = parseCidr(text);
  return cidr === undefined ? undefined : formatCidr(cidr);
}

/**
 * A set of networks to test addresses against: per family and prefix length a set of network bits, so a
 * lookup costs one shift and one hash lookup per distinct prefix length (at most 33 + 129), however many
 * networks there are. Addresses are normalised first (IPv4-mapped IPv6 is IPv4).
 */
export class CidrSet {
  readonly #byFamily = { 4: new Map<number, Set<bigint>>(), 6: new Map<number, Set<bigint>>() };

  /** `cidrs`: texts parseCidr accepts; anything else is ignored (they were validated when saved). */
  constructor(cidrs: Iterable<string>) {
    for (const text of cidrs) {
      // Stored networks come from a database other boxes write too: anything but text is no network.
      if (typeof text !== 'string') continue;
      const cidr = parseCidr(text);
      if (cidr === undefined) continue;
      const byPrefix = this.#byFamily[cidr.family];
      let set = byPrefix.get(cidr.prefix);
      if (set === undefined) byPrefix.set(cidr.prefix, (set = new Set()));
      set.add(cidr.bits);
    }
  }

  /** Whether `ip` (any spelling node:net accepts) lies in one of the networks; false for a non-address. */
  has(ip: string): boolean {
    const address = addressBits(ip);
    if (address === undefined) return false;
    const width = WIDTH[address.family];
    for (const [prefix, set] of this.#byFamily[address.family]) {
      if (set.has(address.value >> BigInt(width - prefix))) return true;
    }
    return false;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Walled-garden host names

/** `example.com` or `*.example.com`, lower-cased; undefined if it is neither (an IP address belongs in cidrs). */
export function normaliseWalledHost(text: string): string | undefined {
  if (text.length === 0 || text.length > MAX_HOST_LENGTH) return undefined;
  const host = text.toLowerCase();
  const name = host.startsWith('*.') ? host.slice(2) : host;
  if (isIP(name) !== 0 || !isHostName(name)) return undefined;
  return host;
}

/**
 * Whether `host` (a request's host name, any case, an optional trailing dot) is in the walled garden: equal
 * to an entry, or below a `*.suffix` entry (`*.example.com` matches `a.example.com`, not `example.com`).
 */
export function walledHostMatches(host: string, entries: readonly string[]): boolean {
  if (host.length > MAX_HOST_LENGTH + 1) return false;
  const name = (host.endsWith('.') ? host.slice(0, -1) : host).toLowerCase();
  return entries.some((entry) =>
    entry.startsWith('*.') ? name.length > entry.length - 1 && name.endsWith(entry.slice(1)) : name === entry,
  );
}

// ---------------------------------------------------------------------------------------------------------
// Settings

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Whether `text` is a real calendar date written YYYY-MM-DD. */
export function isCalendarDate(text: string): boolean {
  const m = DATE.exec(text);
  if (m === null) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return (
    year >= 1970 &&
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day
  );
}

/** The server's local date at `ms` as YYYY-MM-DD: what registrationClearDate is compared with. */
export function localDate(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/**
 * The clear date must lie in the future when it is set or changed: registrations are cleared as the day
 * begins (server local time), so today is already too late. A date that has passed since it was saved is
 * kept (it did its work); `previous` is the stored one. Undefined when fine.
 */
export function clearDateProblem(
  date: string | null,
  previous: string | null,
  today: string,
): PortalProblem | undefined {
  if (date === null || date === previous || date > today) return undefined;
  return {
    field: 'registrationClearDate',
    message: `${JSON.stringify(date)} is not in the future (today is ${today}, server local time)`,
  };
}

const timeout = z
  .number({ error: `must be a whole number of minutes from 1 to ${MAX_TIMEOUT_MINUTES}, or null for none` })
  .int(`must be a whole number of minutes from 1 to ${MAX_TIMEOUT_MINUTES}, or null for none`)
  .min(1, `must be at least 1 minute (null for none)`)
  .max(MAX_TIMEOUT_MINUTES, `must be at most ${MAX_TIMEOUT_MINUTES} minutes (one year), or null for none`)
  .nullable();

/** A list whose entries are normalised by `normalise` (undefined: refused with `what`), duplicates dropped. */
const normalisedList = (normalise: (s: string) => string | undefined, maxEntries: number, what: string) =>
  z
    .array(
      z.string({ error: `must be ${what}` }).transform((text, ctx) => {
        // normalise() refuses an over-long text before looking at it, so a pasted novel costs nothing.
        const value = normalise(text);
        if (value === undefined) {
          ctx.addIssue({ code: 'custom', message: `${showValue(text)} is not ${what}` });
          return z.NEVER;
        }
        return value;
      }),
      { error: 'must be a list' },
    )
    .max(maxEntries, `must have at most ${maxEntries} entries`)
    .transform((list) => [...new Set(list)]);

const cidrList = (maxEntries: number) =>
  normalisedList(
    normaliseCidr,
    maxEntries,
    'an IPv4 or IPv6 address or network (e.g. 10.0.0.0/8, 2001:db8::/32)',
  );

export const portalSettingsSchema = z
  .object({
    mode: z.enum(PORTAL_MODES, { error: `must be one of ${PORTAL_MODES.join(', ')}` }),
    idleTimeoutMinutes: timeout,
    hardTimeoutMinutes: timeout,
    registrationClearDate: z
      .string({ error: 'must be a date YYYY-MM-DD, or null for never' })
      .refine(isCalendarDate, 'must be a date YYYY-MM-DD (a real one, 1970 or later), or null for never')
      .nullable(),
    policyText: z
      .string({ error: "must be text ('' for none)" })
      .max(MAX_POLICY_LENGTH, `must be at most ${MAX_POLICY_LENGTH} characters`)
      .refine(
        // Plain text: tabs and line breaks, nothing else invisible (a NUL or an escape sequence would reach a page).
        (text) => !/[^\P{Cc}\t\n\r]/u.test(text),
        'must be plain text: no control characters other than tab and line breaks',
      ),
    walledGarden: z
      .object(
        {
          hosts: normalisedList(normaliseWalledHost, MAX_WALLED_HOSTS, 'a host name or *.domain'),
          cidrs: cidrList(MAX_WALLED_CIDRS),
        },
        { error: 'must be an object with hosts and cidrs lists' },
      )
      .strict(),
  })
  .strict()
  .superRefine(
    (s, ctx) => {
      if (s.mode === 'agreement' && s.policyText.trim() === '') {
        ctx.addIssue({
          code: 'custom',
          path: ['policyText'],
          message: 'is required in the agreement mode (Usage Agreement Only): the policy the user accepts',
        });
      }
    },
    // Zod skips an object's own checks once any field has failed; this needs only mode and policyText, so it
    // runs whenever those two can be read, and its problem is listed with every other one.
    {
      when: ({ value }) => {
        const v = value as { mode?: unknown; policyText?: unknown } | null;
        return (
          typeof v === 'object' &&
          v !== null &&
          typeof v.mode === 'string' &&
          typeof v.policyText === 'string'
        );
      },
    },
  );

/**
 * Check settings as an administrator gave them (the settings screen's fields, the CLI's, stored JSON): every
 * problem is listed, each with its dotted field name and the value given; an unknown field is a problem too.
 * Every field must be present (the admin screen and the CLI start from the settings in force). Host names
 * are lower-cased, CIDRs written in one form, duplicates dropped.
 */
export function parsePortalSettings(
  input: unknown,
): { ok: true; settings: PortalSettings } | { ok: false; problems: PortalProblem[] } {
  const result = portalSettingsSchema.safeParse(input);
  if (result.success) return { ok: true, settings: result.data };
  return {
    ok: false,
    problems: problemsOf(result.error, input, 'is not a portal setting', { markMissing: true }),
  };
}

/** The fields whose values differ, in PortalSettings order: for "what changed" and "clear sessions?". */
export function changedFields(before: PortalSettings, after: PortalSettings): (keyof PortalSettings)[] {
  const keys = Object.keys(DEFAULT_PORTAL_SETTINGS) as (keyof PortalSettings)[];
  return keys.filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]));
}

// ---------------------------------------------------------------------------------------------------------
// Device Groups

/** What an administrator gives for a Device Group: everything but the id. */
export type DeviceGroupInput = Omit<DeviceGroup, 'id'>;

export const deviceGroupSchema = z
  .object({
    name: z
      .string({ error: `must be 1-${MAX_GROUP_NAME_LENGTH} characters` })
      .refine(
        (name) => [...name].length >= 1 && [...name].length <= MAX_GROUP_NAME_LENGTH,
        `must be 1-${MAX_GROUP_NAME_LENGTH} characters`,
      )
      .refine((name) => !/\p{Cc}/u.test(name), 'must not contain control characters')
      .refine((name) => name.trim() === name, 'must not start or end with white space'),
    cidrs: cidrList(MAX_GROUP_CIDRS).refine((list) => list.length > 0, 'must have at least one entry'),
    active: z.boolean({ error: 'must be true or false' }),
  })
  .strict();

/** Check a Device Group as given (every problem listed, as parsePortalSettings); CIDRs normalised. */
export function parseDeviceGroup(
  input: unknown,
): { ok: true; group: DeviceGroupInput } | { ok: false; problems: PortalProblem[] } {
  const result = deviceGroupSchema.safeParse(input);
  if (result.success) return { ok: true, group: result.data };
  return {
    ok: false,
    problems: problemsOf(result.error, input, 'is not a Device Group field', { markMissing: true }),
  };
}

// ---------------------------------------------------------------------------------------------------------
