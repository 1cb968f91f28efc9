/** Keytab bytes as MIT kt_file.c writes them (format 0x0502), for tests: built by function, keys filled with 0xaa. */
export interface EntrySpec {
  names: string[];
  realm: string;
  kvno8: number;
  enctype: number;
  kvno32?: number;
}

const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const data = (text: string) => {
  const bytes = Buffer.from(text, 'utf8');
  return Buffer.concat([u16(bytes.length), bytes]);
};

/** One record: its int32 length, then the entry. */
export function keytabEntry(spec: EntrySpec): Buffer {
  const body = Buffer.concat([
    u16(spec.names.length),
    data(spec.realm),
    ...spec.names.map(data),
    u32(1),
    u32(0x6b03afe7),
    Buffer.from([spec.kvno8]),
    u16(spec.enctype),
    u16(16),
    Buffer.alloc(16, 0xaa),
    ...(spec.kvno32 === undefined ? [] : [u32(spec.kvno32)]),
  ]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

export function keytabFile(specs: readonly EntrySpec[]): Buffer {
  return Buffer.concat([Buffer.from([5, 2]), ...specs.map(keytabEntry)]);
}

/** What `net ads keytab add_update_ads HTTP` writes for PROXY in EXAMPLE.TEST: two principals × three enctypes. */
export function httpKeytab(kvno: number): Buffer {
  const specs: EntrySpec[] = [];
  for (const host of ['proxy.example.test', 'PROXY']) {
    for (const enctype of [18, 17, 23]) {
      specs.push({ names: ['HTTP', host], realm: 'EXAMPLE.TEST', kvno8: kvno, enctype, kvno32: kvno });
    }
  }
  return keytabFile(specs);
}
