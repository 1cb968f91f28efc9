import { describe, expect, it } from 'vitest';
import { clientAddress, MAX_FORWARDED_FOR_LENGTH } from '../../../../lib/net/client-address.ts';

const trusted = new Set(['127.0.0.1', '10.0.0.1', '10.0.0.2', '::1']);

describe('clientAddress', () => {
  it('is the peer when the peer is not trusted, whatever X-Forwarded-For says', () => {
    expect(clientAddress('192.0.2.7', '198.51.100.1', trusted)).toEqual({ ok: true, ip: '192.0.2.7' });
    expect(clientAddress('192.0.2.7', 'garbage', trusted)).toEqual({ ok: true, ip: '192.0.2.7' });
    expect(clientAddress('192.0.2.7', 'x'.repeat(5000), trusted)).toEqual({ ok: true, ip: '192.0.2.7' });
  });

  it('normalises the peer: IPv4-mapped IPv6 is the IPv4 address, IPv6 in RFC 5952 form', () => {
    expect(clientAddress('::ffff:127.0.0.2', undefined, trusted)).toEqual({ ok: true, ip: '127.0.0.2' });
    expect(clientAddress('2001:DB8:0:0:0:0:0:1', undefined, trusted)).toEqual({
      ok: true,
      ip: '2001:db8::1',
    });
  });

  it('treats a mapped trusted peer as trusted', () => {
    expect(clientAddress('::ffff:10.0.0.1', '192.0.2.9', trusted)).toEqual({ ok: true, ip: '192.0.2.9' });
  });

  it('is the peer when a trusted peer sends no header or an empty one', () => {
    expect(clientAddress('10.0.0.1', undefined, trusted)).toEqual({ ok: true, ip: '10.0.0.1' });
    expect(clientAddress('10.0.0.1', '  ', trusted)).toEqual({ ok: true, ip: '10.0.0.1' });
  });

  it('takes the right-most untrusted entry, not the left-most (which the client can forge)', () => {
    expect(clientAddress('10.0.0.1', '6.6.6.6, 192.0.2.9', trusted)).toEqual({ ok: true, ip: '192.0.2.9' });
    expect(clientAddress('10.0.0.1', '6.6.6.6, 192.0.2.9, 10.0.0.2', trusted)).toEqual({
      ok: true,
      ip: '192.0.2.9',
    });
  });

  it('reads several headers joined by Node with ", " and trims white space', () => {
    expect(clientAddress('10.0.0.1', ' 192.0.2.9 ,\t10.0.0.2', trusted)).toEqual({
      ok: true,
      ip: '192.0.2.9',
    });
  });

  it('normalises entries before comparing and answering', () => {
    expect(clientAddress('::1', '2001:0db8::0001, ::ffff:10.0.0.2', trusted)).toEqual({
      ok: true,
      ip: '2001:db8::1',
    });
  });

  it('is the left-most entry when every entry is trusted', () => {
    expect(clientAddress('10.0.0.1', '10.0.0.2, 127.0.0.1', trusted)).toEqual({ ok: true, ip: '10.0.0.2' });
  });

  it('refuses a bad entry where the client should be, naming the header and the value', () => {
    expect(clientAddress('10.0.0.1', 'unknown', trusted)).toEqual({
      ok: false,
      reason: 'X-Forwarded-For entry "unknown" is not an IP address',
    });
    expect(clientAddress('10.0.0.1', '192.0.2.9:5555, 10.0.0.2', trusted)).toEqual({
      ok: false,
      reason: 'X-Forwarded-For entry "192.0.2.9:5555" is not an IP address',
    });
    expect(clientAddress('10.0.0.1', '192.0.2.9,', trusted)).toEqual({
      ok: false,
      reason: 'X-Forwarded-For entry "" is not an IP address',
    });
  });

  it('ignores bad entries left of the client: nobody trusted vouched for them', () => {
    expect(clientAddress('10.0.0.1', 'junk, 192.0.2.9', trusted)).toEqual({ ok: true, ip: '192.0.2.9' });
  });

  it('bounds the value it quotes', () => {
    const result = clientAddress('10.0.0.1', 'a'.repeat(1000), trusted);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason.length).toBeLessThan(150);
  });

  it('refuses a header longer than the cap, and accepts one at the cap', () => {
    const atCap = `${' '.repeat(MAX_FORWARDED_FOR_LENGTH - '192.0.2.9'.length)}192.0.2.9`;
    expect(clientAddress('10.0.0.1', atCap, trusted)).toEqual({ ok: true, ip: '192.0.2.9' });
    expect(clientAddress('10.0.0.1', ` ${atCap}`, trusted)).toEqual({
      ok: false,
      reason: `X-Forwarded-For is longer than ${MAX_FORWARDED_FOR_LENGTH} characters`,
    });
  });

  it('refuses a peer that is not an address (a zone id)', () => {
    expect(clientAddress('fe80::1%eth0', undefined, trusted)).toEqual({
      ok: false,
      reason: 'peer address "fe80::1%eth0" is not an IP address',
    });
  });
});
