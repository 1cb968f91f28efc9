import { isIP } from 'node:net';
import { z } from 'zod';
import { type FieldProblem, problemsOf } from '../validation/problems.ts';
import { parseDn } from './dn.ts';

/**
 * Directory service settings: the five fields of the seed's "Directory service settings" screen, plus what
 * administrators expect beyond it (port, transport, CA, timeouts, caches). Validated field by field; the
 * password is not part of this object: it lives in its own file (see lib/store/directory-settings-store.ts).
 */
export const DirectoryKinds = ['active-directory', 'open-directory'] as const;
export type DirectoryKind = (typeof DirectoryKinds)[number];
export const Transports = ['ldaps', 'starttls', 'plain'] as const;
export type Transport = (typeof Transports)[number];

/** Longest bind DN and search base accepted: far beyond any real one, short enough to show in a message. */
export const MAX_DN_LENGTH = 1024;

/*
 * Every value here comes from an administrator (a form field, a CLI argument, a file), so every check runs in
 * time linear in its length: character scans, the DN parser, and anchored patterns without overlapping
 * quantifiers. The backtracking pattern the bind DN was once checked with took 3 s on 144 characters and would
 * have held the web app's event loop for hours on 200 (bench/regex-worst-case.ts); eslint-plugin-regexp now
 * rejects such patterns.
 */

/** One label of a host name (RFC 1123): letters, digits and hyphens, 1-63, not starting or ending with one. */
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** A host name per RFC 1123: dot-separated labels, at most 253 characters. */
export function isHostName(host: string): boolean {
  return host.length >= 1 && host.length <= 253 && host.split('.').every((label) => LABEL.test(label));
}

/**
 * A DN made only of domain components, DC=example,DC=test (the attribute type in any case), as the search
 * base: read by the DN parser, so spaces around `,` and `=` are allowed as anywhere else.
 */
export function isDomainComponentDn(dn: string): boolean {
  if (dn.length > MAX_DN_LENGTH) return false;
  const rdns = parseDn(dn);
  return (
    rdns !== undefined &&
    rdns.length > 0 &&
    rdns.every((rdn) => rdn.length === 1 && rdn[0]?.type.toLowerCase() === 'dc' && LABEL.test(rdn[0].value))
  );
}

/** A full distinguished name (RFC 4514): at least one RDN, and a value in each attribute (escapes allowed). */
export function isFullDn(dn: string): boolean {
  if (dn.length > MAX_DN_LENGTH) return false;
  const rdns = parseDn(dn);
  return rdns !== undefined && rdns.length > 0 && rdns.every((rdn) => rdn.every((ava) => ava.value !== ''));
}

export const directorySettingsSchema = z
  .object({
    /** Windows domain (Active Directory) or open directory (OpenLDAP / Open Directory). */
    kind: z.enum(DirectoryKinds),
    /** Fully-qualified domain name of the directory server; an IP address only for the open-directory kind. */
    host: z
      .string()
      .min(1)
      .max(253, { abort: true })
      // Checked here, not with the kind below, so a bad host is reported even when other fields are wrong.
      .superRefine((host, ctx) => {
        if (isIP(host) === 0 && !isHostName(host)) {
          ctx.addIssue({ code: 'custom', message: `${JSON.stringify(host)} is not a host name` });
        }
      }),
    /**
     * Connect to this IP address instead of resolving `host` (like curl --resolve), for a proxy that does not
     * use the directory's DNS. TLS still verifies the certificate against `host`.
     */
    address: z
      .string()
      // The longest IPv6 address (45) with a zone ID (fe80::1%eth0; interface names are at most 15).
      .max(64, { abort: true })
      .refine((a) => isIP(a) !== 0, 'must be an IPv4 or IPv6 address')
      .optional(),
    /** LDAP search base, in domain components: DC=example,DC=test. */
    baseDn: z
      .string()
      .max(MAX_DN_LENGTH, { abort: true })
      .refine(isDomainComponentDn, 'must be a DN of domain components, e.g. DC=example,DC=test'),
    /** The account Doorman binds as to search (need not be an administrator): a full DN. */
    bindDn: z
      .string()
      .max(MAX_DN_LENGTH, { abort: true })
      .refine(isFullDn, 'must be a full distinguished name, e.g. cn=Squid Proxy,cn=Users,dc=example,dc=test'),
    transport: z.enum(Transports).default('ldaps'),
    /** Default: 636 for ldaps, 389 otherwise. */
    port: z.number().int().min(1).max(65535).optional(),
    /** PEM certificate(s) of the CA that signed the server certificate; the system CAs when absent. */
    caCertificate: z
      .string()
      .max(64 * 1024, { abort: true })
      .refine((pem) => pem.includes('-----BEGIN CERTIFICATE-----'), 'must be a PEM certificate')
      .optional(),
    connectTimeoutMs: z.number().int().min(100).max(60_000).default(5000),
    timeoutMs: z.number().int().min(100).max(60_000).default(10_000),
    /** Seconds a successful password check is remembered (as a salted hash); 0 = never. */
    passwordCacheSeconds: z.number().int().min(0).max(3600).default(60),
    /** Seconds a user's group memberships are remembered. */
    groupCacheSeconds: z.number().int().min(0).max(3600).default(60),
  })
  .strict()
  .superRefine(
    (s, ctx) => {
      if (isIP(s.host) !== 0 && s.kind === 'active-directory') {
        ctx.addIssue({
          code: 'custom',
          path: ['host'],
          message: `${JSON.stringify(s.host)}: an IP address is accepted only for the open-directory kind; give the domain controller's fully-qualified name`,
        });
      }
    },
    // Zod skips an object's own checks once any field has failed. This one needs only kind and host, so it
    // runs whenever those two can be read, and its problem is listed with every other field's in one answer.
    {
      when: ({ value }) => {
        const v = value as { kind?: unknown; host?: unknown } | null;
        return (
          typeof v === 'object' && v !== null && typeof v.kind === 'string' && typeof v.host === 'string'
        );
      },
    },
  );

export type DirectorySettings = z.infer<typeof directorySettingsSchema>;
export type DirectorySettingsInput = z.input<typeof directorySettingsSchema>;

export const portOf = (s: DirectorySettings): number => s.port ?? (s.transport === 'ldaps' ? 636 : 389);

/** One wrong field: its dotted name, and what is wrong with the value given. */
export type SettingsProblem = FieldProblem;

export type SettingsValidation =
  { ok: true; settings: DirectorySettings } | { ok: false; problems: SettingsProblem[] };

/**
 * Validate settings as an administrator gave them (JSON from the CLI or the settings screen): every problem
 * is listed, each with its field name and the value given; an unknown field is a problem too.
 */
export function validateDirectorySettings(input: unknown): SettingsValidation {
  const result = directorySettingsSchema.safeParse(input);
  if (result.success) return { ok: true, settings: result.data };
  const problems = problemsOf(result.error, input, 'is not a directory setting');
  return { ok: false, problems };
}

/** What an administrator should know about valid settings before relying on them. */
export function settingsWarnings(settings: DirectorySettings): string[] {
  const warnings: string[] = [];
  if (settings.transport === 'plain') {
    warnings.push(
      'transport "plain": passwords (the bind account\'s and every user\'s) cross the network unencrypted; use LDAPS or StartTLS',
    );
  }
  if (settings.transport !== 'plain' && settings.caCertificate === undefined) {
    warnings.push("no CA certificate: the server's certificate must be signed by a CA the system trusts");
  }
  return warnings;
}
