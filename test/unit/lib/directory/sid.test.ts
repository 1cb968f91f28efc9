import { describe, expect, it } from 'vitest';
import { domainSidOf, sidToString, sidWithRid } from '../../../../lib/directory/sid.ts';

/** Binary SID per MS-DTYP 2.4.2.2, built the slow way. */
function sidBytes(authority: number, subs: number[]): Buffer {
  const b = Buffer.alloc(8 + 4 * subs.length);
  b[0] = 1;
  b[1] = subs.length;
  b.writeUIntBE(authority, 2, 6);
  subs.forEach((s, i) => b.writeUInt32LE(s, 8 + 4 * i));
  return b;
}

describe('sidToString', () => {
  it('reads a domain account SID', () => {
    expect(sidToString(sidBytes(5, [21, 3623811015, 3361044348, 30300820, 1104]))).toBe(
      'S-1-5-21-3623811015-3361044348-30300820-1104',
    );
  });

  it('reads well-known SIDs', () => {
    expect(sidToString(sidBytes(5, [32, 544]))).toBe('S-1-5-32-544');
    expect(sidToString(sidBytes(1, [0]))).toBe('S-1-1-0');
  });

  it('reads a slice of a larger buffer', () => {
    const inner = sidBytes(5, [21, 1, 2, 3, 513]);
    const outer = Buffer.concat([Buffer.from([9, 9, 9]), inner]);
    expect(sidToString(outer.subarray(3))).toBe('S-1-5-21-1-2-3-513');
  });

  it.each([
    ['too short', Buffer.from([1, 0, 0])],
    ['wrong revision', Buffer.from([2, 0, 0, 0, 0, 0, 0, 5])],
    ['count does not fit the length', Buffer.concat([sidBytes(5, [21, 1]), Buffer.from([0])])],
  ])('undefined when %s', (_why, bytes) => {
    expect(sidToString(bytes)).toBeUndefined();
  });
});

describe('domainSidOf and sidWithRid', () => {
  it('the primary group SID is the domain SID plus primaryGroupID', () => {
    const domain = domainSidOf('S-1-5-21-3623811015-3361044348-30300820-1104');
    expect(domain).toBe('S-1-5-21-3623811015-3361044348-30300820');
    expect(sidWithRid(domain as string, 513)).toBe('S-1-5-21-3623811015-3361044348-30300820-513');
  });

  it('undefined for something that is not a SID', () => {
    expect(domainSidOf('S-1-5')).toBeUndefined();
    expect(domainSidOf('not a sid')).toBeUndefined();
  });
});
