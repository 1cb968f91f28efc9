import type { Entry } from 'ldapts';

/**
 * Reading attributes off an ldapts search entry. ldapts keys attributes by the name the server sent
 * (`sAMAccountName`, `memberof`), gives one value as a string and several as an array, and gives binary
 * values as Buffers: these helpers take the name case-insensitively and always answer in one shape.
 */
export function values(entry: Entry, name: string): string[] {
  const raw = lookup(entry, name);
  if (raw === undefined) return [];
  const list = Array.isArray(raw) ? raw : [raw];
  return list.map((v) => (typeof v === 'string' ? v : v.toString('utf8')));
}

export function firstValue(entry: Entry, name: string): string | undefined {
  return values(entry, name)[0];
}

/** A binary attribute (objectSid): its first value as bytes. */
export function bufferValue(entry: Entry, name: string): Buffer | undefined {
  const raw = lookup(entry, name);
  const first = Array.isArray(raw) ? raw[0] : raw;
  if (first === undefined) return undefined;
  return typeof first === 'string' ? undefined : first;
}

function lookup(entry: Entry, name: string): Entry[string] | undefined {
  if (name in entry) return entry[name];
  const lower = name.toLowerCase();
  for (const key of Object.keys(entry)) if (key.toLowerCase() === lower && key !== 'dn') return entry[key];
  return undefined;
}
