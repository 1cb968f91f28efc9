/**
 * Windows security identifiers. AD gives objectSid in binary (MS-DTYP §2.4.2.2):
 *   Revision (1 byte, = 1) | SubAuthorityCount (1 byte) | IdentifierAuthority (6 bytes, big-endian)
 *   | SubAuthority[SubAuthorityCount] (4 bytes each, little-endian)
 * and accepts the string form S-1-5-21-…-513 in search filters. A user's primary group (primaryGroupID, a
 * RID) is the group whose SID is the user's domain SID (the user's SID without its last part) + that RID.
 */
export function sidToString(bytes: Uint8Array): string | undefined {
  if (bytes.length < 8 || bytes[0] !== 1) return undefined;
  const count = bytes[1] as number;
  if (count > 15 || bytes.length !== 8 + 4 * count) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const authority = view.getUint16(2) * 2 ** 32 + view.getUint32(4);
  const parts = ['S', '1', String(authority)];
  for (let i = 0; i < count; i++) parts.push(String(view.getUint32(8 + 4 * i, true)));
  return parts.join('-');
}

/** The domain part of an account SID: S-1-5-21-a-b-c-1104 → S-1-5-21-a-b-c. */
export function domainSidOf(accountSid: string): string | undefined {
  const m = /^(S-1-\d+(?:-\d+)+)-\d+$/.exec(accountSid);
  return m?.[1];
}

/** domainSid + RID: the SID of, for instance, the primary group. */
export function sidWithRid(domainSid: string, rid: number): string {
  return `${domainSid}-${rid}`;
}
