import { isIP } from 'node:net';
import { z } from 'zod';
import type { SettingsTest } from '../directory/directory.ts';
import { isHostName } from '../directory/settings.ts';
import { showValue } from '../errors.ts';
import type { AppliedDirectory } from '../store/directory-settings-store.ts';
import { type FieldProblem, problemsOf } from '../validation/problems.ts';

/**
 * The "Enable seamless" dialogue's five fields (the seed's): the domain controller's Windows Server version, the
 * directory domain's FQDN, its NetBIOS name, and the Domain Admin who joins the proxy, with that admin's password.
 * Pure: what the admin screen and `doorman seamless enable` share.
 *
 * The password is used for the join and then forgotten, so it never enters the settings object (which is stored,
 * shown and may be logged): parseSeamlessSettings hands it back apart, as a Buffer the caller writes to the one
 * child that needs it and then zeroes. No problem message ever quotes it.
 *
 * Every value comes from an administrator, so every check runs in time linear in its length: character scans,
 * node:net, and anchored patterns without overlapping quantifiers.
 */

/** The versions the join distinguishes: 2003 allows RC4 only; 2008 adds AES; 2012 is 2008's rules, named. */
export const SERVER_VERSIONS = ['2003', '2008', '2012'] as const;
export type ServerVersion = (typeof SERVER_VERSIONS)[number];

/** Windows Server releases after 2012 that the dialogue accepts and treats as 2012 (same Kerberos rules). */
export const LATER_SERVER_VERSIONS = ['2016', '2019', '2022', '2025'] as const;

export const MAX_DOMAIN_LENGTH = 253;
/** NetBIOS names are 16 bytes, the last one the service type: 15 are the name. */
export const MAX_NETBIOS_LENGTH = 15;
export const MAX_ADMIN_USER_LENGTH = 256;
export const MAX_ADMIN_PASSWORD_LENGTH = 1024;

export interface AdminUser {
  /** The account name alone (sAMAccountName, or the part of a UPN before `@`): what `net ads join -U` gets. */
  account: string;
  /** `DOMAIN` of `DOMAIN\user`, or the realm of `user@realm`, as typed; absent for a bare name. */
  domain?: string;
  form: 'short' | 'down-level' | 'upn';
}

export interface SeamlessSettings {
  /** The version the join and the configuration follow (a later version given is stored as 2012). */
  serverVersion: ServerVersion;
  /** The directory domain's DNS name, lower-case, without a trailing dot: `example.test`. */
  domain: string;
  /** The Kerberos realm: the domain upper-cased, as Active Directory names it. */
  realm: string;
  /** The NetBIOS (pre-Windows 2000) domain name, upper-case: smb.conf's `workgroup`. */
  netbiosDomain: string;
  adminUser: AdminUser;
}

export type SeamlessProblem = FieldProblem;

export type SeamlessValidation =
  { ok: true; settings: SeamlessSettings; password: Buffer } | { ok: false; problems: SeamlessProblem[] };

export interface SeamlessContext {
  /** The directory server's host name from the directory settings: a domain equal to it is a host, not a domain. */
  directoryHost?: string;
}

const VERSION_ALLOWED = `must be 2003, 2008 or 2012 (a later version such as ${LATER_SERVER_VERSIONS.join(', ')} is treated as 2012)`;
const YEAR = /^\d{4}$/;

/** `2012`, `'2012'`, `'2012 R2'`, `'Windows Server 2019'` → the version the join follows; undefined if none. */
export function serverVersionOf(input: unknown): ServerVersion | undefined {
  let text: string;
  if (typeof input === 'number' && Number.isInteger(input)) text = String(input);
  else if (typeof input === 'string' && input.length <= 32) text = input.trim();
  else return undefined;
  const words = text.toLowerCase().split(/\s+/);
  // "Windows Server 2008 R2": the optional words around the year a person may copy from winver.
  if (words[0] === 'windows') words.shift();
  if (words[0] === 'server') words.shift();
  if (words.length === 2 && words[1] === 'r2' && (words[0] === '2008' || words[0] === '2012')) words.pop();
  if (words.length !== 1 || !YEAR.test(words[0] ?? '')) return undefined;
  const year = words[0] as string;
  if ((SERVER_VERSIONS as readonly string[]).includes(year)) return year as ServerVersion;
  if ((LATER_SERVER_VERSIONS as readonly string[]).includes(year)) return '2012';
  return undefined;
}

/** A DNS domain of at least two labels (each an RFC 1123 label), ≤ 253 characters; one trailing dot allowed. */
export function normaliseDomain(text: string): string | undefined {
  if (text.length === 0 || text.length > MAX_DOMAIN_LENGTH + 1) return undefined;
  const name = (text.endsWith('.') ? text.slice(0, -1) : text).toLowerCase();
  if (name.length > MAX_DOMAIN_LENGTH || !name.includes('.') || isIP(name) !== 0 || !isHostName(name)) {
    return undefined;
  }
  return name;
}

/**
 * Characters Microsoft allows in a NetBIOS domain name besides letters and digits (KB 909264 lists
 * `\ / : * ? " < > |` as refused, and names the others allowed). Space and `,` `;` `=` `+` `[` `]` are left
 * out too: Windows refuses them in domain names in practice. Two that Windows allows, `%` and `#`, cannot go
 * into smb.conf: samba-config.ts refuses them there, under the same field name, before anything is written.
 */
const NETBIOS_PUNCTUATION = new Set("!@#$%^&')(.-_{}~");

/** Why `name` cannot be a NetBIOS domain name (the words after the value), or undefined when it can. */
export function netbiosNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (name.length > MAX_NETBIOS_LENGTH) {
    return `is ${name.length} characters long; a NetBIOS name has at most ${MAX_NETBIOS_LENGTH}`;
  }
  if (name.startsWith('.')) return 'must not start with a period';
  for (const char of name) {
    const code = char.charCodeAt(0);
    const alnum =
      (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
    if (!alnum && !NETBIOS_PUNCTUATION.has(char)) {
      return `contains ${JSON.stringify(char)}; allowed are letters A-Z, digits and ${[...NETBIOS_PUNCTUATION].join(' ')}`;
    }
  }
  if (/^\d+$/.test(name)) return 'must not be all digits';
  return undefined;
}

// C0 controls, DEL and C1 controls.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Characters Samba's `--user=` parser (cli_credentials_parse_string) reads as separators beyond the `\` and `@`
 * handled below: `%` starts the password (which net then takes from argv and never asks for on stdin), `/` is a
 * second domain separator. Active Directory refuses `/` in account names and `%` is all but unseen in an admin's,
 * so refusing both costs nothing real and keeps the password off every command line, log line and screen.
 */
const NET_SEPARATORS = /[%/]/;

/** `alice`, `EXAMPLE\alice` or `alice@EXAMPLE.TEST`, split; a string (the problem) when it is none of these. */
export function parseAdminUser(text: string): AdminUser | string {
  if (text.length === 0) return 'is empty';
  if (!text.isWellFormed()) return 'is not valid Unicode';
  if ([...text].length > MAX_ADMIN_USER_LENGTH) return `is longer than ${MAX_ADMIN_USER_LENGTH} characters`;
  if (CONTROL.test(text)) return 'contains a control character';
  const separator = NET_SEPARATORS.exec(text);
  if (separator !== null) {
    return `must not contain ${JSON.stringify(separator[0])}: net reads % as the start of a password and / as a domain separator; give the password in its own field`;
  }
  if (text.trim() !== text) return 'must not start or end with white space';
  const shape = 'must be a user name: user, DOMAIN\\user or user@realm';
  const backslash = text.indexOf('\\');
  if (backslash !== -1) {
    const domain = text.slice(0, backslash);
    const account = text.slice(backslash + 1);
    if (domain === '' || account === '' || account.includes('\\') || text.includes('@')) return shape;
    return { account, domain, form: 'down-level' };
  }
  const at = text.indexOf('@');
  if (at !== -1) {
    const account = text.slice(0, at);
    const domain = text.slice(at + 1);
    if (account === '' || domain === '' || domain.includes('@')) return shape;
    return { account, domain, form: 'upn' };
  }
  return { account: text, form: 'short' };
}

const stringField = (what: string) => z.string({ error: `must be ${what}` });

const seamlessSchema = z
  .object({
    serverVersion: z.unknown().transform((value, ctx) => {
      const version = serverVersionOf(value);
      if (version === undefined) {
        ctx.addIssue({ code: 'custom', message: VERSION_ALLOWED });
        return z.NEVER;
      }
      return version;
    }),
    domain: stringField("the domain's DNS name, e.g. example.test").transform((text, ctx) => {
      const domain = normaliseDomain(text);
      if (domain === undefined) {
        ctx.addIssue({ code: 'custom', message: domainProblem(text) });
        return z.NEVER;
      }
      return domain;
    }),
    netbiosDomain: stringField('the NetBIOS domain name, e.g. EXAMPLE').optional(),
    adminUser: stringField('a user name: user, DOMAIN\\user or user@realm').transform((text, ctx) => {
      const user = parseAdminUser(text);
      if (typeof user === 'string') {
        ctx.addIssue({ code: 'custom', message: `${showValue(text)} ${user}` });
        return z.NEVER;
      }
      return user;
    }),
  })
  .strict();

function domainProblem(text: string): string {
  const given = showValue(text);
  const name = text.endsWith('.') ? text.slice(0, -1) : text;
  if (isIP(name) !== 0) return `${given} is an IP address; give the domain's DNS name, e.g. example.test`;
  if (text.length > MAX_DOMAIN_LENGTH + 1 || name.length > MAX_DOMAIN_LENGTH) {
    return `is ${name.length} characters long; a domain name has at most ${MAX_DOMAIN_LENGTH}`;
  }
  if (name !== '' && !name.includes('.') && isHostName(name)) {
    return `${given} is a single label; give the domain's full DNS name (at least two labels, e.g. example.test)`;
  }
  return `${given} is not a DNS domain name: labels of letters, digits and hyphens (1-63 each, not starting or ending with a hyphen) separated by dots, e.g. example.test`;
}

/**
 * Check the dialogue's fields as given (form, CLI, JSON): every problem listed with its field and the value given
 * (never the password's), an unknown field a problem too. `adminPassword` is taken out before anything else looks
 * at the input, and comes back only as the Buffer beside the settings.
 */
export function parseSeamlessSettings(input: unknown, context: SeamlessContext = {}): SeamlessValidation {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return {
      ok: false,
      problems: [{ field: '(settings)', message: "must be an object of the dialogue's fields" }],
    };
  }
  const { adminPassword, ...rest } = input as Record<string, unknown>;
  const problems: SeamlessProblem[] = [];
  const result = seamlessSchema.safeParse(rest);
  if (!result.success) {
    problems.push(...problemsOf(result.error, rest, 'is not a seamless setting', { markMissing: true }));
  }
  let domain: string | undefined;
  if (result.success) domain = result.data.domain;
  else if (typeof rest.domain === 'string') domain = normaliseDomain(rest.domain);

  // The domain controller's own name is the likeliest mistake: the directory settings ask for exactly that.
  if (domain !== undefined && context.directoryHost !== undefined) {
    const host = context.directoryHost.toLowerCase().replace(/\.$/, '');
    if (domain === host) {
      const parent = host.slice(host.indexOf('.') + 1);
      problems.push({
        field: 'domain',
        message: `${showValue(domain)} is the directory server's host name, not the domain: give the domain it belongs to${parent.includes('.') ? `, e.g. ${parent}` : ''}`,
      });
    }
  }

  let netbiosDomain: string | undefined;
  const givenNetbios = rest.netbiosDomain;
  if (typeof givenNetbios === 'string' && givenNetbios !== '') {
    const problem = netbiosNameProblem(givenNetbios);
    if (problem === undefined) netbiosDomain = givenNetbios.toUpperCase();
    else problems.push({ field: 'netbiosDomain', message: `${showValue(givenNetbios)} ${problem}` });
  } else if (givenNetbios === undefined || givenNetbios === '') {
    if (domain !== undefined) {
      const first = (domain.split('.')[0] ?? '').toUpperCase();
      const problem = netbiosNameProblem(first);
      if (problem === undefined) netbiosDomain = first;
      else {
        problems.push({
          field: 'netbiosDomain',
          message: `is required: the default, the domain's first label ${showValue(first)}, ${problem}; give the domain's NetBIOS name as Windows shows it (e.g. in "net config workstation")`,
        });
      }
    }
  }

  const passwordProblem = checkPassword(adminPassword);
  if (passwordProblem !== undefined) problems.push({ field: 'adminPassword', message: passwordProblem });

  if (!result.success || problems.length > 0 || netbiosDomain === undefined) {
    return { ok: false, problems };
  }
  const settings: SeamlessSettings = {
    serverVersion: result.data.serverVersion,
    domain: result.data.domain,
    realm: result.data.domain.toUpperCase(),
    netbiosDomain,
    adminUser: result.data.adminUser,
  };
  return { ok: true, settings, password: Buffer.from(adminPassword as string, 'utf8') };
}

/** Why the password cannot be used, in words that never quote it; undefined when it can. */
function checkPassword(password: unknown): string | undefined {
  if (password === undefined)
    return "is required (missing): the Domain Admin's password, used for the join only";
  if (typeof password !== 'string') return 'must be text';
  if (password.length === 0) return 'must not be empty';
  if (password.length > MAX_ADMIN_PASSWORD_LENGTH) {
    return `is longer than ${MAX_ADMIN_PASSWORD_LENGTH} characters`;
  }
  // It reaches `net ads join` as one line on stdin: a line break or NUL would cut it short.
  if (/[\r\n\0]/.test(password)) return 'must not contain line breaks or NUL characters';
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Availability

export type SeamlessAvailability =
  | { ok: true }
  | { ok: false; code: 'NO_DIRECTORY' | 'NOT_WINDOWS_DOMAIN' | 'DIRECTORY_FAILING'; reason: string };

/**
 * Whether "Enable seamless" may be offered: only once a directory has been applied (Save & apply stores settings
 * only after they worked), only for the Windows-domain kind, and, when the caller has just tested the directory
 * (`lastTest`), only if that test worked. The reason says how to fix it.
 */
export function seamlessAvailability(
  applied: Pick<AppliedDirectory, 'settings'> | undefined,
  lastTest?: SettingsTest,
): SeamlessAvailability {
  if (applied === undefined) {
    return {
      ok: false,
      code: 'NO_DIRECTORY',
      reason:
        'no directory service is configured: set up the Windows domain on the Directory service settings screen (or `doorman directory set`) first',
    };
  }
  if (applied.settings.kind !== 'active-directory') {
    return {
      ok: false,
      code: 'NOT_WINDOWS_DOMAIN',
      reason: `the directory service is of the ${applied.settings.kind} kind; seamless authentication needs a Windows domain (Active Directory): change the kind to active-directory on the Directory service settings screen`,
    };
  }
  if (lastTest !== undefined && !lastTest.ok) {
    return {
      ok: false,
      code: 'DIRECTORY_FAILING',
      reason: `the directory service does not work now (${lastTest.error.message}): fix it on the Directory service settings screen (or check with \`doorman directory test\`) first`,
    };
  }
  return { ok: true };
}
