import { FactError } from './doctor/errors.ts';
import { canonicalEnctype, type KeytabEntry } from './doctor/klist.ts';

/**
 * The entries of an MIT keytab file (format 0x0502, what `net ads keytab` and `ktutil` write), read from its
 * bytes without `klist`: the key version, the principal and the encryption type of each key, for the doctor's
 * kvno and enctype checks and for Enable's verification step. The keys themselves are skipped, never copied
 * out of the buffer.
 *
 * Layout (MIT src/lib/krb5/keytab/kt_file.c; all integers big-endian in version 0x0502):
 *
 *   file    = 0x05 0x02 *record
 *   record  = int32 size, then `size` bytes of entry (size < 0: a hole of -size bytes left by a deletion)
 *   entry   = uint16 ncomponents, data realm, ncomponents × data component, uint32 name_type,
 *             uint32 timestamp, uint8 vno8, uint16 enctype, data key, [uint32 vno]
 *   data    = uint16 length, length bytes
 *
 * The trailing 32-bit vno, when the entry has room for it and it is not 0, replaces the 8-bit one (key versions
 * above 255). Pure; linear in the input; every length is checked against what is left before it is used.
 */

/** A keytab of this proxy holds a few dozen keys; a file beyond this is not one we wrote. */
export const MAX_KEYTAB_BYTES = 1024 * 1024;
export const MAX_KEYTAB_ENTRIES = 4096;

/** IANA Kerberos encryption type numbers → MIT names (the ones krb5.conf is written with). */
const ENCTYPE_NAMES: Readonly<Record<number, string>> = {
  1: 'des-cbc-crc',
  3: 'des-cbc-md5',
  16: 'des3-cbc-sha1',
  17: 'aes128-cts-hmac-sha1-96',
  18: 'aes256-cts-hmac-sha1-96',
  19: 'aes128-cts-hmac-sha256-128',
  20: 'aes256-cts-hmac-sha384-192',
  23: 'rc4-hmac',
  24: 'rc4-hmac-exp',
};

export function enctypeName(number: number): string {
  return ENCTYPE_NAMES[number] ?? `enctype-${number}`;
}

class Reader {
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  #at: number;
  readonly #end: number;
  readonly #where: string;

  constructor(bytes: Uint8Array, start: number, end: number, where: string) {
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#at = start;
    this.#end = end;
    this.#where = where;
  }

  get left(): number {
    return this.#end - this.#at;
  }

  #need(n: number, what: string): void {
    if (n > this.left) {
      throw new FactError('MALFORMED', 'keytab', `${this.#where}: ${what} runs past the end of the entry`);
    }
  }

  u8(what: string): number {
    this.#need(1, what);
    return this.#view.getUint8(this.#at++);
  }

  u16(what: string): number {
    this.#need(2, what);
    const value = this.#view.getUint16(this.#at);
    this.#at += 2;
    return value;
  }

  u32(what: string): number {
    this.#need(4, what);
    const value = this.#view.getUint32(this.#at);
    this.#at += 4;
    return value;
  }

  /** A counted string, as text (principal names are UTF-8). */
  text(what: string): string {
    const length = this.u16(`the length of ${what}`);
    this.#need(length, what);
    const value = Buffer.from(this.#bytes.buffer, this.#bytes.byteOffset + this.#at, length).toString('utf8');
    this.#at += length;
    return value;
  }

  /** A counted string skipped (the key). */
  skip(what: string): void {
    const length = this.u16(`the length of ${what}`);
    this.#need(length, what);
    this.#at += length;
  }
}

/** `12/31/26 21:28:36`-free, locale-free: the entry's timestamp as ISO 8601. */
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/** Parse a keytab file's bytes. An empty keytab (only the version) gives []. Throws FactError naming the problem. */
export function parseKeytab(bytes: Uint8Array): KeytabEntry[] {
  const field = 'keytab';
  if (bytes.length > MAX_KEYTAB_BYTES) {
    throw new FactError(
      'TOO_LARGE',
      field,
      `is ${bytes.length} bytes long; at most ${MAX_KEYTAB_BYTES} are read`,
    );
  }
  if (bytes.length < 2 || bytes[0] !== 0x05) {
    throw new FactError('MALFORMED', field, 'is not an MIT keytab file (it does not start with byte 0x05)');
  }
  if (bytes[1] !== 0x02) {
    throw new FactError(
      'MALFORMED',
      field,
      `is keytab format 0x05${(bytes[1] ?? 0).toString(16).padStart(2, '0')}; only 0x0502 (every MIT since 1.0) is read`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const entries: KeytabEntry[] = [];
  let at = 2;
  let index = 0;
  while (at < bytes.length) {
    index += 1;
    const where = `record ${index} (byte ${at})`;
    if (bytes.length - at < 4) throw new FactError('MALFORMED', field, `${where}: a truncated record length`);
    const size = view.getInt32(at);
    at += 4;
    // A zero length ends the file (MIT stops reading there: space preallocated, never written).
    if (size === 0) break;
    const length = Math.abs(size);
    if (length > bytes.length - at) {
      throw new FactError('MALFORMED', field, `${where}: its length ${length} runs past the end of the file`);
    }
    if (size > 0) {
      if (entries.length >= MAX_KEYTAB_ENTRIES) {
        throw new FactError('TOO_LARGE', field, `holds more than ${MAX_KEYTAB_ENTRIES} keys`);
      }
      entries.push(parseEntry(new Reader(bytes, at, at + length, where)));
    }
    at += length;
  }
  return entries;
}

function parseEntry(reader: Reader): KeytabEntry {
  const count = reader.u16('the number of name components');
  const realm = reader.text('the realm');
  const components: string[] = [];
  for (let i = 0; i < count; i += 1) components.push(reader.text(`name component ${i + 1}`));
  reader.u32('the name type');
  const timestamp = reader.u32('the timestamp');
  let kvno = reader.u8('the key version');
  const enctype = reader.u16('the encryption type');
  reader.skip('the key');
  if (reader.left >= 4) {
    const long = reader.u32('the 32-bit key version');
    if (long !== 0) kvno = long;
  }
  const name = enctypeName(enctype);
  return {
    kvno,
    principal: `${components.join('/')}@${realm}`,
    enctype: canonicalEnctype(name),
    enctypeShown: name,
    timestamp: iso(timestamp),
  };
}
