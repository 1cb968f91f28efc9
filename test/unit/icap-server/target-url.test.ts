import { describe, expect, it } from 'vitest';
import { parseTarget } from '../../../icap-server/target-url.ts';

describe('parseTarget', () => {
  it('gives the host in one spelling and the port (explicit, or the scheme’s)', () => {
    expect(parseTarget('http://Example.COM./', undefined)).toEqual({
      host: 'example.com',
      port: 80,
      href: 'http://Example.COM./',
      path: '/',
    });
    expect(parseTarget('https://[2001:DB8::1]/', undefined)).toMatchObject({
      host: '2001:db8::1',
      port: 443,
    });
    expect(parseTarget('http://example.com:/', undefined)).toMatchObject({ port: 80 });
    expect(parseTarget('/x', 'example.com:8080')).toMatchObject({ host: 'example.com', port: 8080 });
  });
});
