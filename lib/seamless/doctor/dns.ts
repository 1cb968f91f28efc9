import { isIP } from 'node:net';
import { isHostName } from '../../directory/settings.ts';
import { showValue } from '../../errors.ts';
import { FactError } from './errors.ts';

/**
 * The DNS answers the doctor judges, as the I/O shell hands them over from node:dns (`resolve4(fqdn)`,
 * `reverse(address)`, asked of the first resolv.conf nameserver): a list of records, or the reason there is none.
 * The lab's answers (REPORT §6.5): `proxy.example.test has address 10.77.0.2`; the PTR
 * `proxy.example.test.`, deleted → NXDOMAIN, pointed elsewhere → `other.example.test.`.
 */

/** More records than any host's own name has; an answer longer is refused, not scanned. */
export const MAX_DNS_RECORDS = 64;

/** Why no records came back, in node:dns terms folded to what the doctor says. */
export type DnsFailure = 'no-such-name' | 'no-records' | 'timeout' | 'refused' | 'server-failure' | 'other';

export type DnsAnswer = { ok: true; records: string[] } | { ok: false; failure: DnsFailure; code: string };

/** node:dns error codes (ENOTFOUND = NXDOMAIN, ENODATA = the name exists without records of the type, …). */
export function dnsFailureOf(code: string): DnsFailure {
  switch (code) {
    case 'ENOTFOUND':
      return 'no-such-name';
    case 'ENODATA':
      return 'no-records';
    case 'ETIMEOUT':
    case 'ETIMEDOUT':
      return 'timeout';
    case 'ECONNREFUSED':
    case 'EREFUSED':
      return 'refused';
    case 'ESERVFAIL':
      return 'server-failure';
    default:
      return 'other';
  }
}

/** A failed lookup, from node:dns's error code. */
export function dnsFailure(code: string): DnsAnswer {
  return { ok: false, failure: dnsFailureOf(code), code: String(code).slice(0, 32) };
}

function checkList(field: string, records: readonly unknown[]): void {
  if (!Array.isArray(records)) throw new FactError('MALFORMED', field, 'is not a list of records');
  if (records.length > MAX_DNS_RECORDS) {
    throw new FactError(
      'TOO_LARGE',
      field,
      `has ${records.length} records; at most ${MAX_DNS_RECORDS} are read`,
    );
  }
}

/** The A records of a name: IPv4 addresses, in the order given, duplicates dropped. */
export function aRecordsAnswer(records: readonly unknown[]): DnsAnswer {
  const field = 'A records';
  checkList(field, records);
  const out: string[] = [];
  for (const record of records) {
    if (typeof record !== 'string' || record.length > 15 || isIP(record) !== 4) {
      throw new FactError(
        'MALFORMED',
        field,
        `${typeof record === 'string' ? showValue(record) : typeof record} is not an IPv4 address`,
      );
    }
    if (!out.includes(record)) out.push(record);
  }
  return out.length === 0
    ? { ok: false, failure: 'no-records', code: 'ENODATA' }
    : { ok: true, records: out };
}

/** A host name as DNS gives it, lower-case and without the root's dot: `Proxy.Example.Test.` → `proxy.example.test`. */
export function normaliseHostName(name: string): string | undefined {
  if (name.length === 0 || name.length > 254) return undefined;
  const bare = (name.endsWith('.') ? name.slice(0, -1) : name).toLowerCase();
  return bare !== '' && bare.length <= 253 && isIP(bare) === 0 && isHostName(bare) ? bare : undefined;
}

/** The PTR names of an address, normalised (normaliseHostName), duplicates dropped. */
export function ptrRecordsAnswer(records: readonly unknown[]): DnsAnswer {
  const field = 'PTR records';
  checkList(field, records);
  const out: string[] = [];
  for (const record of records) {
    const name = typeof record === 'string' ? normaliseHostName(record) : undefined;
    if (name === undefined) {
      throw new FactError(
        'MALFORMED',
        field,
        `${typeof record === 'string' ? showValue(record) : typeof record} is not a host name`,
      );
    }
    if (!out.includes(name)) out.push(name);
  }
  return out.length === 0
    ? { ok: false, failure: 'no-records', code: 'ENODATA' }
    : { ok: true, records: out };
}
