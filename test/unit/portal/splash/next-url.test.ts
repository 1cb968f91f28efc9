import { describe, expect, it } from 'vitest';
import { MAX_ORIGINAL_URL } from '../../../../icap-server/portal-answer.ts';
import { checkNextUrl } from '../../../../portal/splash/next-url.ts';

describe('checkNextUrl', () => {
  it.each([
    ['http://example.com/', 'http://example.com/'],
    ['https://example.com/a?b=1#c', 'https://example.com/a?b=1#c'],
    ['HTTP://Example.COM', 'http://example.com/'],
    ['http://bücher.example/straße', 'http://xn--bcher-kva.example/stra%C3%9Fe'],
    ['http://[2001:db8::1]:8080/', 'http://[2001:db8::1]:8080/'],
  ])('accepts %s as %s', (raw, href) => {
    expect(checkNextUrl(raw)).toEqual({ ok: true, url: href });
  });

  it.each([
    ['javascript:alert(1)', 'is not an absolute http:// or https:// URL'],
    ['JaVaScRiPt:alert(1)', 'is not an absolute http:// or https:// URL'],
    ['data:text/html,x', 'is not an absolute http:// or https:// URL'],
    ['vbscript:x', 'is not an absolute http:// or https:// URL'],
    ['ftp://example.com/', 'is not an absolute http:// or https:// URL'],
    ['//evil.example/', 'is not an absolute http:// or https:// URL'],
    ['/local/path', 'is not an absolute http:// or https:// URL'],
    ['http:evil.example', 'is not an absolute http:// or https:// URL'],
    [' http://example.com/', 'is not an absolute http:// or https:// URL'],
    ['http://example.com/ x', 'contains white space or control characters'],
    ['http://exa\tmple.com/', 'contains white space or control characters'],
    ['http://example.com/\r\nSet-Cookie: x=1', 'contains white space or control characters'],
    ['http://example.com/\u202egnp.exe', 'contains white space or control characters'],
    ['http://user:pw@example.com/', 'contains a user name or password'],
    ['http://bank.example@evil.example/', 'contains a user name or password'],
    ['http://', 'is not an absolute http:// or https:// URL'],
    ['http://exa mple.com', 'contains white space or control characters'],
  ])('refuses %j', (raw, why) => {
    expect(checkNextUrl(raw)).toEqual({
      ok: false,
      message: `${JSON.stringify(raw.slice(0, 64) + (raw.length > 64 ? '…' : ''))} ${why}`,
    });
  });

  it('caps the length at the ICAP decision’s MAX_ORIGINAL_URL, before and after normalising', () => {
    const at = `http://example.com/${'a'.repeat(MAX_ORIGINAL_URL - 19)}`;
    expect(at).toHaveLength(MAX_ORIGINAL_URL);
    expect(checkNextUrl(at).ok).toBe(true);
    expect(checkNextUrl(`${at}a`)).toMatchObject({
      ok: false,
      message: expect.stringContaining('longer than 2000'),
    });
    // Under the cap as typed, over it once percent-encoded.
    const grows = `http://example.com/${'é'.repeat(400)}`;
    expect(checkNextUrl(grows)).toMatchObject({
      ok: false,
      message: expect.stringContaining('longer than 2000'),
    });
  });
});
