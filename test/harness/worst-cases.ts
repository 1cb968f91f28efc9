import { InvalidCredentialsError } from 'ldapts';
import { configSchema } from '../../lib/config/schema.ts';
import { parseDn } from '../../lib/directory/dn.ts';
import { adSubCodeOf, toDirectoryError } from '../../lib/directory/errors.ts';
import { parseLoginName } from '../../lib/directory/login-name.ts';
import { MAX_DN_LENGTH, validateDirectorySettings } from '../../lib/directory/settings.ts';
import { domainSidOf } from '../../lib/directory/sid.ts';
import { DEFAULT_MAX_LINE_BYTES } from '../../lib/helper-protocol/run.ts';
import { parseRequest } from '../../lib/helper-protocol/message.ts';
import { normaliseIp, normaliseMac } from '../../lib/net/address.ts';
import {
  MAX_CURRENT_TIME_CHARS,
  MAX_NET_ADS_INFO_CHARS,
  parseGeneralizedTime,
  parseNetAdsInfoOffset,
} from '../../lib/seamless/doctor/clock.ts';
import { FactError } from '../../lib/seamless/doctor/errors.ts';
import { MAX_ID_OUTPUT_CHARS, parseIdOutput } from '../../lib/seamless/doctor/file-facts.ts';
import { parseKeyVersionNumber } from '../../lib/seamless/doctor/key-version.ts';
import { MAX_KLIST_CHARS, parseKlistKeytab } from '../../lib/seamless/doctor/klist.ts';
import { parseApiKey } from '../../lib/security/api-key.ts';
import { ADMIN_NAME_PATTERN } from '../../lib/store/admin-store.ts';
import { API_KEY_NAME_PATTERN } from '../../lib/store/api-key-store.ts';
import { readDirectoryForm } from '../../portal/admin/directory-form.ts';
import { parseTimeout } from '../../portal/api/timeout.ts';
import { parseUsername } from '../../portal/api/username.ts';

/**
 * Each validator that reads outside input (a form field, a CLI argument, the config, a helper line, a header,
 * an LDAP answer), fed the input that costs a backtracking or restarting pattern the most, at the longest the
 * field allows, with the verdict it must give. The unit test (test/unit/lib/validators-worst-case.test.ts)
 * checks the verdicts, each in a worker it can stop, so a pattern gone super-linear fails instead of hanging;
 * bench/regex-worst-case.ts times them. Nothing here is timed or asserted: it is data.
 */
export interface WorstCase {
  /** `validator: shape of the input`. */
  name: string;
  /** Built once, at the field's maximum length (or the transport's cap where the field has none). */
  input: () => string;
  /** The validator's answer in words: accepted, or the problem it reports. */
  run: (input: string) => Verdict;
  /** Rejected cases: a part of the problem the validator must report (field and reason). */
  expected: { accepted: true } | { accepted: false; problem: string };
}

export type Verdict = { accepted: true } | { accepted: false; problem: string };

const accepted = { accepted: true } as const;
const rejected = (problem: string) => ({ accepted: false, problem }) as const;
const verdictOf = (ok: boolean, problem: () => string): Verdict =>
  ok ? accepted : { accepted: false, problem: problem() };

/** `unit` repeated and cut to exactly `length` characters, then `tail`: `length + tail.length` in all. */
const fill = (unit: string, length: number, tail = ''): string =>
  unit.repeat(Math.ceil(length / unit.length)).slice(0, length) + tail;
/** As many whole `unit`s as fit in `length` characters. */
const whole = (unit: string, length: number): string => unit.repeat(Math.floor(length / unit.length));

/** The directory form (256 KiB body cap) and the login API (at most 64 KiB) never give a field more. */
const FORM_FIELD_MAX = 256 * 1024;
/** No cap of ours on a value in an LDAP answer; 64 KiB is longer than any DN or message a server sends. */
const LDAP_VALUE_MAX = 64 * 1024;
/** Node's default maximum size of a request's headers. */
const HEADER_MAX = 16 * 1024;

const AD = {
  kind: 'active-directory',
  host: 'dc1.example.test',
  baseDn: 'DC=example,DC=test',
  bindDn: 'CN=Squid Proxy,CN=Users,DC=example,DC=test',
};
/** validateDirectorySettings with one field replaced, as the CLI and the settings store call it. */
const settings =
  (field: string) =>
  (value: string): Verdict => {
    const result = validateDirectorySettings({ ...AD, [field]: value });
    return verdictOf(result.ok, () =>
      result.ok ? '' : result.problems.map((p) => `${p.field}: ${p.message}`).join('\n'),
    );
  };

const HOST_LABEL = 'a'.repeat(63);

export const WORST_CASES: readonly WorstCase[] = [
  // The bind DN: the pattern that held the event loop for hours (issue 6), then the DN parser's own worst.
  {
    name: 'directory bindDn: " ,x=y" repeated, a trailing comma (the old pattern: hours)',
    input: () => `cn=${fill(' ,x=y', MAX_DN_LENGTH - 4)},`,
    run: settings('bindDn'),
    expected: rejected('bindDn: must be a full distinguished name'),
  },
  {
    name: 'directory bindDn: one value of spaces and escapes, then "=" with no type',
    input: () => `cn=${fill(' \\,', MAX_DN_LENGTH - 6)},=x`,
    run: settings('bindDn'),
    expected: rejected('bindDn: must be a full distinguished name'),
  },
  {
    name: 'directory bindDn: escaped commas only, accepted',
    input: () => `cn=${fill('\\,', MAX_DN_LENGTH - 4)}x`,
    run: settings('bindDn'),
    expected: accepted,
  },
  {
    name: 'directory bindDn: the most RDNs a DN can have, accepted',
    input: () => `${fill('dc=a,', MAX_DN_LENGTH - 4)}dc=a`,
    run: settings('bindDn'),
    expected: accepted,
  },
  {
    name: 'directory bindDn: one character over the cap',
    input: () => `cn=${fill(' ,x=y', MAX_DN_LENGTH - 3)},`,
    run: settings('bindDn'),
    expected: rejected('bindDn: Too big'),
  },
  {
    name: 'directory baseDn: " , dc=a" repeated, a trailing comma',
    input: () => `dc=a${fill(' , dc=a', MAX_DN_LENGTH - 5)},`,
    run: settings('baseDn'),
    expected: rejected('baseDn: must be a DN of domain components'),
  },
  {
    name: 'directory baseDn: one label of letters and hyphens, too long for a label',
    input: () => `dc=${fill('a-', MAX_DN_LENGTH - 4)}a`,
    run: settings('baseDn'),
    expected: rejected('baseDn: must be a DN of domain components'),
  },
  {
    name: 'directory baseDn: the most domain components, accepted',
    input: () => `${fill('dc=a,', MAX_DN_LENGTH - 4)}dc=a`,
    run: settings('baseDn'),
    expected: accepted,
  },
  {
    name: 'directory host: letters and hyphens, one label of 253',
    input: () => fill('a-', 252, 'a'),
    run: settings('host'),
    expected: rejected('host: "a-a-a-'),
  },
  {
    name: 'directory host: four labels, 253 characters, accepted',
    input: () => `${HOST_LABEL}.${HOST_LABEL}.${HOST_LABEL}.${'a'.repeat(61)}`,
    run: settings('host'),
    expected: accepted,
  },
  {
    name: 'directory host: an IPv6-looking run of groups',
    input: () => fill('1:', 252, 'x'),
    run: settings('host'),
    expected: rejected('host: "1:1:1:'),
  },
  {
    name: 'directory address: too many IPv6 groups',
    input: () => fill('1:', 63, 'x'),
    run: settings('address'),
    expected: rejected('address: must be an IPv4 or IPv6 address'),
  },
  {
    name: 'directory caCertificate: the PEM header with its last character wrong, repeated',
    input: () => fill('-----BEGIN CERTIFICATE---- ', 64 * 1024),
    run: settings('caCertificate'),
    expected: rejected('caCertificate: must be a PEM certificate'),
  },
  {
    name: 'directory caCertificate: the PEM header at the very end, accepted',
    input: () => fill('-', 64 * 1024 - 27, '-----BEGIN CERTIFICATE-----'),
    run: settings('caCertificate'),
    expected: accepted,
  },
  {
    name: 'directory form: a port of digits as long as the form allows',
    input: () => fill('9', FORM_FIELD_MAX),
    run: (port) => {
      const read = readDirectoryForm(new Map(Object.entries({ ...AD, port })), true);
      return verdictOf(read.problems.length === 0, () =>
        read.problems.map((p) => `${p.field}: ${p.message}`).join('\n'),
      );
    },
    expected: rejected('port: "9999'),
  },

  // DNs in LDAP answers (member, memberOf, a user's DN), read by the same parser.
  {
    name: 'parseDn: " ,x=y" repeated, a trailing comma',
    input: () => `cn=${fill(' ,x=y', LDAP_VALUE_MAX - 4)},`,
    run: (dn) => verdictOf(parseDn(dn) !== undefined, () => 'not a DN'),
    expected: rejected('not a DN'),
  },
  {
    name: 'parseDn: hex-string values, the most a DN can hold, accepted',
    input: () => `${whole('cn=#00,', LDAP_VALUE_MAX - 6)}cn=#00`,
    run: (dn) => verdictOf(parseDn(dn)?.every((rdn) => rdn[0]?.value === '#00') === true, () => 'not a DN'),
    expected: accepted,
  },
  {
    name: 'parseDn: one hex-string value with a stray character at the end',
    input: () => `cn=#${fill('00', LDAP_VALUE_MAX - 5)}x`,
    run: (dn) => verdictOf(parseDn(dn) !== undefined, () => 'not a DN'),
    expected: rejected('not a DN'),
  },
  {
    name: 'parseDn: hex escapes, accepted',
    input: () => `cn=${whole('\\41', LDAP_VALUE_MAX - 3)}`,
    run: (dn) => verdictOf(parseDn(dn)?.[0]?.[0]?.value.startsWith('AAA') === true, () => 'not a DN'),
    expected: accepted,
  },

  // What else the directory answers: diagnostic messages, SIDs.
  {
    name: 'toDirectoryError: a diagnostic of spaces not followed by " Code: 0x…"',
    input: () => fill(' ', LDAP_VALUE_MAX - 1, 'x'),
    run: (message) => {
      const error = toDirectoryError(new InvalidCredentialsError(message), {
        server: 'dc1.example.test:636',
        phase: 'bind',
        bindDn: AD.bindDn,
      });
      return rejected(error.code);
    },
    expected: rejected('INVALID_CREDENTIALS'),
  },
  {
    name: 'adSubCodeOf: "data " and one hex digit too many, repeated',
    input: () => fill('data 000000000', LDAP_VALUE_MAX),
    run: (message) => verdictOf(adSubCodeOf(message) !== undefined, () => 'no sub-code'),
    expected: rejected('no sub-code'),
  },
  {
    name: 'domainSidOf: "1-" repeated, a stray character at the end',
    input: () => `S-1-${fill('1-', LDAP_VALUE_MAX - 5)}x`,
    run: (sid) => verdictOf(domainSidOf(sid) !== undefined, () => 'not an account SID'),
    expected: rejected('not an account SID'),
  },

  // Login names typed by users (Basic credentials, the login API), API-key and admin names, the config.
  {
    name: 'parseLoginName: "a@" repeated (Active Directory)',
    input: () => fill('a@', 256),
    run: (name) => {
      try {
        parseLoginName(name, 'active-directory', 'example.test');
        return accepted;
      } catch (error) {
        return rejected((error as Error).message);
      }
    },
    expected: rejected('is not of the form user@domain'),
  },
  {
    name: 'login API username: 255 letters and a control character',
    input: () => fill('a', 255, '\u0007'),
    run: (name) => {
      const parsed = parseUsername(name);
      return parsed.ok ? accepted : rejected(parsed.message);
    },
    expected: rejected('no control characters'),
  },
  {
    name: 'login API timeout: digits as long as a body allows',
    input: () => fill('1', 64 * 1024),
    run: (timeout) => {
      const parsed = parseTimeout(timeout);
      return parsed.ok ? accepted : rejected(parsed.message);
    },
    expected: rejected('is not allowed'),
  },
  {
    name: 'API key: the key shape with a body-long secret',
    input: () => `dm.${'a'.repeat(12)}.${fill('a', 64 * 1024 - 16)}`,
    run: (key) => verdictOf(parseApiKey(key) !== undefined, () => 'not an API key'),
    expected: rejected('not an API key'),
  },
  {
    name: 'API key name: 63 allowed characters and a stray one',
    input: () => fill('a', 63, '!'),
    run: (name) => verdictOf(API_KEY_NAME_PATTERN.test(name), () => 'not a key name'),
    expected: rejected('not a key name'),
  },
  {
    name: 'admin name: 63 allowed characters and a stray one',
    input: () => fill('a', 63, '!'),
    run: (name) => verdictOf(ADMIN_NAME_PATTERN.test(name), () => 'not an admin name'),
    expected: rejected('not an admin name'),
  },
  {
    name: 'config dbFile: 128 allowed characters and a slash',
    input: () => fill('a.', 128, '/'),
    run: (dbFile) => {
      const result = configSchema.safeParse({ dbFile });
      return verdictOf(result.success, () =>
        (result.error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`).join('\n'),
      );
    },
    expected: rejected('dbFile: must be a plain file name'),
  },

  // Helper lines from Squid, client addresses from sockets and X-Forwarded-For.
  {
    name: 'helper line: a channel-ID of digits as long as a line',
    input: () => fill('1', DEFAULT_MAX_LINE_BYTES),
    run: (line) => {
      const parsed = parseRequest(line, true);
      return parsed.ok ? accepted : rejected(parsed.message);
    },
    expected: rejected('channel-ID'),
  },
  {
    name: 'client address: IPv6 groups ending in a dotted tail, as long as a header',
    input: () => fill('1:', HEADER_MAX - 8, '1.1.1.1x'),
    run: (ip) => verdictOf(normaliseIp(ip) !== undefined, () => 'not an address'),
    expected: rejected('not an address'),
  },
  {
    name: 'client address: an IPv4-mapped address, accepted',
    input: () => '::ffff:255.255.255.255',
    run: (ip) => verdictOf(normaliseIp(ip) === '255.255.255.255', () => String(normaliseIp(ip))),
    expected: accepted,
  },
  {
    name: 'MAC address: "00:" repeated, as long as a header',
    input: () => fill('00:', HEADER_MAX),
    run: (mac) => verdictOf(normaliseMac(mac) !== undefined, () => 'not a MAC address'),
    expected: rejected('not a MAC address'),
  },

  // What the seamless doctor reads: command outputs (klist, id, net ads info) and LDAP values, each at its cap.
  {
    name: 'doctor klist: " -" repeated (a header rule that never ends), then a stray character',
    input: () => fill('- ', MAX_KLIST_CHARS - 1, 'x'),
    run: doctorFact(parseKlistKeytab),
    expected: rejected('is not a keytab entry'),
  },
  {
    name: 'doctor klist: entry lines up to the cap, accepted',
    input: () =>
      whole(
        '   1 11/22/26 21:28:36 HTTP/proxy.example.test@EXAMPLE.TEST (aes256-cts-hmac-sha1-96)\n',
        MAX_KLIST_CHARS,
      ),
    run: doctorFact(parseKlistKeytab),
    expected: accepted,
  },
  {
    name: 'doctor id: groups "1(a)," repeated, a stray character at the end',
    input: () => `uid=13(proxy) gid=13(proxy) groups=${fill('1(a),', MAX_ID_OUTPUT_CHARS - 36, 'x')}`,
    run: doctorFact(parseIdOutput),
    expected: rejected('the groups are not a list'),
  },
  {
    name: 'doctor id: a group name of "(" without its ")"',
    input: () => `uid=13(proxy) gid=13(proxy) groups=1${fill('(', MAX_ID_OUTPUT_CHARS - 37)}`,
    run: doctorFact(parseIdOutput),
    expected: rejected('the groups are not a list'),
  },
  {
    name: 'doctor currentTime: digits as long as the cap',
    input: () => fill('1', MAX_CURRENT_TIME_CHARS),
    run: doctorFact(parseGeneralizedTime),
    expected: rejected('is not an LDAP GeneralizedTime'),
  },
  {
    name: 'doctor net ads info: almost-offset lines up to the cap',
    input: () => fill('Server time offse\n', MAX_NET_ADS_INFO_CHARS),
    run: doctorFact(parseNetAdsInfoOffset),
    expected: rejected('has no "Server time offset:" line'),
  },
  {
    name: 'doctor msDS-KeyVersionNumber: digits as long as an LDAP value',
    input: () => fill('1', LDAP_VALUE_MAX),
    run: doctorFact(parseKeyVersionNumber),
    expected: rejected('is not a key version'),
  },
];

/** A doctor parser's verdict: accepted, or the FactError's message. */
function doctorFact(parse: (text: string) => unknown): (input: string) => Verdict {
  return (input) => {
    try {
      parse(input);
      return accepted;
    } catch (error) {
      if (error instanceof FactError) return rejected(error.message);
      throw error;
    }
  };
}
