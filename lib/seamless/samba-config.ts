import { isIP } from 'node:net';
import { isAbsolute, join } from 'node:path';
import { isHostName } from '../directory/settings.ts';
import { InvalidInputError, showValue } from '../errors.ts';
import { MAX_NETBIOS_LENGTH, netbiosNameProblem, type ServerVersion } from './settings.ts';

/**
 * The two files of Doorman's own Windows networking configuration, in the root-owned `sambaDir` (paths.ts): the member smb.conf
 * that `net ads join` and winbindd read (`-s`), and the krb5.conf that the join, `net ads keytab` and the
 * Kerberos acceptor read (KRB5_CONFIG). Pure generators: text in, text out; writing them is the caller's.
 * docs/seamless-design.md §3 explains each line; the lab's `write_member_conf` / `write_krb5_conf` are the
 * proven originals.
 *
 * Values are never escaped: neither format has a general escape (Samba substitutes `%m` and the like in values,
 * joins a line ending in `\` to the next, and reads `;` and `#` as comments; MIT's profile library reads `{` `}`
 * as sections and `#` `;` as comments). A value holding a character that would change the file's meaning is
 * refused with InvalidInputError naming the field, the value and what is allowed.
 */

export interface MemberConfInput {
  serverVersion: ServerVersion;
  /** The NetBIOS domain name (smb.conf `workgroup`), as settings.ts accepted it. */
  netbiosDomain: string;
  /** The Kerberos realm, e.g. EXAMPLE.TEST (written upper-case). */
  realm: string;
  /** The proxy's host name, short or fully qualified: its first label upper-cased is the machine's NetBIOS name. */
  proxyHostName: string;
  /** The root-owned directory (absolute, paths.ts sambaDirOf) where everything Samba keeps goes. */
  sambaDir: string;
}

export interface Krb5ConfInput {
  serverVersion: ServerVersion;
  /** The directory domain's DNS name, e.g. example.test. */
  domain: string;
  /** The Kerberos realm, e.g. EXAMPLE.TEST (written upper-case). */
  realm: string;
  /** The domain controller (host name or IP address) that is the realm's KDC. */
  kdc: string;
}

/** The keytab holding only the HTTP/ service keys (readable by Squid's helper user), never /etc/krb5.keytab. */
export function httpKeytabPath(sambaDir: string): string {
  return join(sambaDir, 'http.keytab');
}

/**
 * MIT enctype lists per server version. 2003 DCs have no AES keys. 2008+ puts AES first; RC4 stays last so an
 * administrator whose password predates the domain's AES keys can still get a ticket for the join.
 */
export function krb5Enctypes(version: ServerVersion): string {
  return version === '2003' ? 'rc4-hmac' : 'aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96 rc4-hmac';
}

/** smb.conf `kerberos encryption types`: what the machine account's keys (and the keytab's) are made with. */
export function sambaEncryptionTypes(version: ServerVersion): 'legacy' | 'strong' {
  return version === '2003' ? 'legacy' : 'strong';
}

/** The machine's NetBIOS name: the host name's first label, upper-cased; refused when it cannot be one. */
export function machineNetbiosName(proxyHostName: string): string {
  const host = proxyHostName.endsWith('.') ? proxyHostName.slice(0, -1) : proxyHostName;
  if (host === '' || isIP(host) !== 0 || !isHostName(host)) {
    throw new InvalidInputError(
      'proxyHostName',
      `${showValue(proxyHostName)} is not a host name: give the proxy's own host name, e.g. proxy.example.test`,
    );
  }
  const name = (host.split('.')[0] ?? '').toUpperCase();
  if (name.length > MAX_NETBIOS_LENGTH) {
    throw new InvalidInputError(
      'proxyHostName',
      `${showValue(proxyHostName)}: the short host name ${showValue(name)} is ${name.length} characters long, but a Windows computer name (NetBIOS) has at most ${MAX_NETBIOS_LENGTH}; give the proxy a shorter host name`,
    );
  }
  const problem = netbiosNameProblem(name);
  if (problem !== undefined) {
    throw new InvalidInputError(
      'proxyHostName',
      `${showValue(proxyHostName)}: the short host name ${showValue(name)} cannot be a Windows computer name: it ${problem}`,
    );
  }
  return name;
}

/**
 * A value for one line of smb.conf. Refused: line breaks and other control characters (a new line, a new
 * parameter), `%` (Samba's substitutions), `\` (a line ending in it continues), `;` `#` (comments), `[` `]`
 * (section headers), `=` (a parameter's end), leading or trailing white space (Samba trims it).
 */
const SMB_REFUSED = new Set(['%', '\\', ';', '#', '[', ']', '=']);
/** The same for krb5.conf (MIT profile): `{` `}` open and close sections, `;` `#` comments, `[` `]` headers. */
const KRB5_REFUSED = new Set(['{', '}', ';', '#', '[', ']', '=', '"', '\\']);

function checkValue(field: string, value: string, refused: Set<string>, file: string, spaces = true): string {
  if (value === '') throw new InvalidInputError(field, `is empty; ${file} needs a value`);
  for (const char of value) {
    const code = char.charCodeAt(0);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) {
      throw new InvalidInputError(
        field,
        `${showValue(value)} contains a control character (a line break would start a new line of ${file}); it is not allowed`,
      );
    }
    if (refused.has(char) || (!spaces && char === ' ')) {
      throw new InvalidInputError(
        field,
        `${showValue(value)} contains ${JSON.stringify(char)}, which would break ${file}; not allowed: ${[...refused].join(' ')}${spaces ? '' : ' and spaces'}`,
      );
    }
  }
  if (value.trim() !== value) {
    throw new InvalidInputError(
      field,
      `${showValue(value)} starts or ends with white space, which ${file} drops; not allowed`,
    );
  }
  return value;
}

function checkSambaDir(sambaDir: string, file: string): string {
  checkValue('sambaDir', sambaDir, SMB_REFUSED, file);
  if (!isAbsolute(sambaDir)) {
    throw new InvalidInputError('sambaDir', `${showValue(sambaDir)} is not an absolute path`);
  }
  return sambaDir.length > 1 && sambaDir.endsWith('/') ? sambaDir.slice(0, -1) : sambaDir;
}

function checkRealm(realm: string, file: string): string {
  const upper = realm.toUpperCase();
  if (!upper.includes('.') || isIP(upper) !== 0 || !isHostName(upper)) {
    throw new InvalidInputError(
      'realm',
      `${showValue(realm)} is not a Kerberos realm of an Active Directory domain: the domain's DNS name upper-cased, e.g. EXAMPLE.TEST (${file})`,
    );
  }
  return upper;
}

/** The member smb.conf (docs/seamless-design.md §3; the lab's `write_member_conf`). */
export function memberSmbConf(input: MemberConfInput): string {
  const file = 'smb.conf';
  const workgroup = checkValue('netbiosDomain', input.netbiosDomain, SMB_REFUSED, file, false).toUpperCase();
  const netbiosProblem = netbiosNameProblem(workgroup);
  if (netbiosProblem !== undefined) {
    throw new InvalidInputError('netbiosDomain', `${showValue(input.netbiosDomain)} ${netbiosProblem}`);
  }
  const realm = checkRealm(input.realm, file);
  const netbiosName = machineNetbiosName(input.proxyHostName);
  if (netbiosName === workgroup) {
    throw new InvalidInputError(
      'proxyHostName',
      `${showValue(input.proxyHostName)}: the computer name ${showValue(netbiosName)} equals the NetBIOS domain name; Windows refuses a member named like its domain: give the proxy another host name`,
    );
  }
  const samba = checkSambaDir(input.sambaDir, file);
  const lines = [
    '# Written by Doorman (seamless authentication). Changes are overwritten by the next Enable.',
    '[global]',
    `\tworkgroup = ${workgroup}`,
    `\trealm = ${realm}`,
    '\tsecurity = ADS',
    '\tserver role = member server',
    `\tnetbios name = ${netbiosName}`,
    `\tprivate dir = ${samba}/private`,
    `\tlock directory = ${samba}/lock`,
    `\tstate directory = ${samba}/state`,
    `\tcache directory = ${samba}/cache`,
    `\tpid directory = ${samba}/run`,
    `\tncalrpc dir = ${samba}/run/ncalrpc`,
    `\tlog file = ${samba}/log/%m.log`,
    '\tlogging = file',
    '\tidmap config * : backend = tdb',
    '\tidmap config * : range = 3000-7999',
    `\tidmap config ${workgroup} : backend = rid`,
    `\tidmap config ${workgroup} : range = 10000-999999`,
    // Names without DOMAIN\ (ntlm_auth answers `alice`, not `EXAMPLE\alice`): lab trap 9.
    '\twinbind use default domain = yes',
    '\twinbind refresh tickets = no',
    // The service keys go to this file only; the system keytab (/etc/krb5.keytab) is left alone.
    '\tkerberos method = dedicated keytab',
    `\tdedicated keytab file = FILE:${samba}/http.keytab`,
    `\tkerberos encryption types = ${sambaEncryptionTypes(input.serverVersion)}`,
  ];
  return `${lines.join('\n')}\n`;
}

/** The krb5.conf the join and the acceptor read: the DC named, nothing looked up in DNS (docs §3). */
export function memberKrb5Conf(input: Krb5ConfInput): string {
  const file = 'krb5.conf';
  const realm = checkRealm(input.realm, file);
  const domain = input.domain.toLowerCase();
  if (!domain.includes('.') || isIP(domain) !== 0 || !isHostName(domain)) {
    throw new InvalidInputError(
      'domain',
      `${showValue(input.domain)} is not a DNS domain name of at least two labels, e.g. example.test`,
    );
  }
  if (realm !== domain.toUpperCase()) {
    throw new InvalidInputError(
      'realm',
      `${showValue(input.realm)} is not the domain ${showValue(domain)} upper-cased, as an Active Directory realm always is`,
    );
  }
  checkValue('kdc', input.kdc, KRB5_REFUSED, file, false);
  const family = isIP(input.kdc);
  if (family === 0 && !isHostName(input.kdc)) {
    throw new InvalidInputError(
      'kdc',
      `${showValue(input.kdc)} is neither a host name nor an IP address: give the domain controller's`,
    );
  }
  // An IPv6 address is written in brackets, as the profile's host:port syntax needs.
  const kdc = family === 6 ? `[${input.kdc}]` : input.kdc;
  const enctypes = krb5Enctypes(input.serverVersion);
  const lines = [
    '# Written by Doorman (seamless authentication). Changes are overwritten by the next Enable.',
    '[libdefaults]',
    `    default_realm = ${realm}`,
    '    dns_lookup_realm = false',
    '    dns_lookup_kdc = false',
    // The SPN is HTTP/<the name the client used>; canonicalising it through DNS would change it.
    '    dns_canonicalize_hostname = false',
    '    rdns = false',
    `    default_tgs_enctypes = ${enctypes}`,
    `    default_tkt_enctypes = ${enctypes}`,
    `    permitted_enctypes = ${enctypes}`,
    '',
    '[realms]',
    `    ${realm} = {`,
    `        kdc = ${kdc}`,
    '    }',
    '',
    '[domain_realm]',
    `    .${domain} = ${realm}`,
    `    ${domain} = ${realm}`,
  ];
  return `${lines.join('\n')}\n`;
}
