import { describe, expect, it } from 'vitest';
import { clientAddress, MAX_CLIENT_HEADER_LENGTH } from '../../../../lib/net/client-address.ts';
import { ProxyKeyCheck } from '../../../../lib/security/proxy-key.ts';

const trusted = new Set(['127.0.0.1', '10.0.0.1', '::1']);
const KEY = 'K'.repeat(43);
const key = new ProxyKeyCheck(KEY);
const proven = (address: string) => `${KEY} ${address}`;

describe('clientAddress', () => {
  it('is the peer when the peer is not trusted, whatever header it sends (the key included)', () => {
    for (const header of [undefined, proven('198.51.100.1'), 'garbage', 'x'.repeat(5000)]) {
      expect(clientAddress('192.0.2.7', header, trusted, key)).toEqual({ ok: true, ip: '192.0.2.7' });
    }
  });

  it('normalises the peer: IPv4-mapped IPv6 is the IPv4 address, IPv6 in RFC 5952 form', () => {
    expect(clientAddress('::ffff:127.0.0.2', undefined, trusted, key)).toEqual({ ok: true, ip: '127.0.0.2' });
    expect(clientAddress('2001:DB8:0:0:0:0:0:1', undefined, trusted, key)).toEqual({
      ok: true,
      ip: '2001:db8::1',
    });
  });

  it('takes the address a trusted proxy wrote with the proxy key, normalised', () => {
    expect(clientAddress('10.0.0.1', proven('192.0.2.9'), trusted, key)).toEqual({
      ok: true,
      ip: '192.0.2.9',
    });
    expect(clientAddress('::ffff:10.0.0.1', proven('2001:0db8::0001'), trusted, key)).toEqual({
      ok: true,
      ip: '2001:db8::1',
    });
    // the proxy host's own clients are clients too
    expect(clientAddress('127.0.0.1', proven('127.0.0.1'), trusted, key)).toEqual({
      ok: true,
      ip: '127.0.0.1',
    });
  });

  it('refuses a trusted peer without the header: a tunnel through it, not the proxy itself', () => {
    const found = clientAddress('127.0.0.1', undefined, trusted, key);
    expect(found).toMatchObject({ ok: false, kind: 'unproven', peer: '127.0.0.1' });
    expect(found.ok || found.reason).toMatch(/trusted proxy 127\.0\.0\.1 without X-Doorman-Client/);
    expect(found.ok || found.reason).toMatch(/CONNECT tunnel/);
  });

  it('refuses a header without the right key, and never repeats the key it was given', () => {
    for (const header of [
      '192.0.2.9',
      `${'J'.repeat(43)} 192.0.2.9`,
      `${KEY}x 192.0.2.9`,
      ` ${KEY} 192.0.2.9`,
      `${KEY}`,
      '',
    ]) {
      const found = clientAddress('10.0.0.1', header, trusted, key);
      expect(found, header).toMatchObject({ ok: false, kind: 'unproven' });
      expect(found.ok || found.reason).not.toContain('JJJJ');
    }
    expect(clientAddress('10.0.0.1', proven('192.0.2.9'), trusted, undefined)).toMatchObject({
      ok: false,
      kind: 'unproven',
    });
  });

  it('refuses two headers (Node joins them with ", "), one of them the client’s, and overlong ones', () => {
    expect(
      clientAddress('10.0.0.1', `${proven('192.0.2.9')}, ${proven('6.6.6.6')}`, trusted, key),
    ).toMatchObject({
      ok: false,
      kind: 'unproven',
    });
    const long = proven(`192.0.2.9${' '.repeat(MAX_CLIENT_HEADER_LENGTH)}`);
    expect(clientAddress('10.0.0.1', long, trusted, key)).toMatchObject({ ok: false, kind: 'unproven' });
  });

  it('refuses a proven header whose address is no address, naming the header and the value', () => {
    expect(clientAddress('10.0.0.1', proven('unknown'), trusted, key)).toEqual({
      ok: false,
      kind: 'invalid',
      reason: 'X-Doorman-Client address "unknown" is not an IP address',
    });
  });

  it('refuses a peer that is no address', () => {
    expect(clientAddress('', undefined, trusted, key)).toMatchObject({ ok: false, kind: 'invalid' });
  });
});
