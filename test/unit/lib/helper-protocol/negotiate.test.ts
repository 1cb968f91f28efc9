import { describe, expect, it } from 'vitest';
import {
  formatStatefulReply,
  MAX_NEGOTIATE_LINE_BYTES,
  parseStatefulRequest,
} from '../../../../lib/helper-protocol/negotiate.ts';

const TOKEN =
  'YEgGBisGAQUFAqA+MDygDjAMBgorBgEEAYI3AgIKoioEKE5UTE1TU1AAAQAAABeCCOIAAAAAAAAAAAAAAAAAAAAABgIAAAAAAA8=';

describe('parseStatefulRequest', () => {
  it('reads YR and KK with their token, no channel-ID', () => {
    expect(parseStatefulRequest(`YR ${TOKEN}`)).toEqual({
      ok: true,
      request: { command: 'YR', token: TOKEN, extras: [] },
    });
    expect(parseStatefulRequest('KK oRswGaADCgEAoxIEEAEAAABIiOUGicB4+QAAAAA=')).toEqual({
      ok: true,
      request: { command: 'KK', token: 'oRswGaADCgEAoxIEEAEAAABIiOUGicB4+QAAAAA=', extras: [] },
    });
  });

  it('keeps what key_extras appends apart from the token', () => {
    expect(parseStatefulRequest(`YR ${TOKEN} 10.0.0.7 proxy.example.test`)).toEqual({
      ok: true,
      request: { command: 'YR', token: TOKEN, extras: ['10.0.0.7', 'proxy.example.test'] },
    });
  });

  it('refuses a channel-ID, an unknown command, a missing token', () => {
    expect(parseStatefulRequest(`0 YR ${TOKEN}`)).toEqual({
      ok: false,
      message: 'unknown request "0": expected YR or KK',
    });
    expect(parseStatefulRequest('PW alice secret')).toEqual({
      ok: false,
      message: 'unknown request "PW": expected YR or KK',
    });
    expect(parseStatefulRequest('yr abc=')).toMatchObject({ ok: false });
    expect(parseStatefulRequest('')).toEqual({
      ok: false,
      message: 'unknown request an empty line: expected YR or KK',
    });
    expect(parseStatefulRequest('YR')).toEqual({ ok: false, message: 'YR without a token' });
    expect(parseStatefulRequest('KK ')).toEqual({ ok: false, message: 'KK without a token' });
  });

  it('takes a line of exactly 64 KiB and refuses one byte more', () => {
    const fits = `YR ${'A'.repeat(MAX_NEGOTIATE_LINE_BYTES - 3)}`;
    expect(fits.length).toBe(65536);
    expect(parseStatefulRequest(fits)).toMatchObject({ ok: true });
    expect(parseStatefulRequest(`${fits}A`)).toEqual({
      ok: false,
      message: 'request line of 65537 bytes is longer than 65536',
    });
  });
});

describe('formatStatefulReply', () => {
  it('writes the challenge positionally, never as token= (Squid 5.7 would send "token=" to the client)', () => {
    expect(formatStatefulReply('negotiate', { result: 'TT', token: 'oYGsMIGpoAMKAQGh' })).toBe(
      'TT oYGsMIGpoAMKAQGh\n',
    );
    expect(formatStatefulReply('ntlm', { result: 'TT', token: 'TlRMTVNTUAACAAAA' })).toBe(
      'TT TlRMTVNTUAACAAAA\n',
    );
  });

  it('gives every Negotiate OK a token, * when the acceptor has none', () => {
    expect(formatStatefulReply('negotiate', { result: 'OK', user: 'alice', token: 'oRswGaADCgEA+/==' })).toBe(
      'OK token=oRswGaADCgEA+/== user=alice\n',
    );
    expect(formatStatefulReply('negotiate', { result: 'OK', user: 'alice' })).toBe('OK token=* user=alice\n');
  });

  it('writes an NTLM OK with the user alone', () => {
    expect(formatStatefulReply('ntlm', { result: 'OK', user: 'alice' })).toBe('OK user=alice\n');
  });

  it('URL-escapes the user and messages, so a space or a newline cannot break the line', () => {
    expect(formatStatefulReply('negotiate', { result: 'OK', user: 'al ice' })).toBe(
      'OK token=* user=al%20ice\n',
    );
    expect(formatStatefulReply('ntlm', { result: 'OK', user: 'pc1$' })).toBe('OK user=pc1%24\n');
    expect(formatStatefulReply('negotiate', { result: 'BH', message: 'Clock skew too great\nOK' })).toBe(
      'BH message=Clock%20skew%20too%20great%0AOK\n',
    );
    expect(formatStatefulReply('ntlm', { result: 'ERR', message: 'NT_STATUS_LOGON_FAILURE' })).toBe(
      'ERR message=NT_STATUS_LOGON_FAILURE\n',
    );
    expect(formatStatefulReply('ntlm', { result: 'ERR' })).toBe('ERR\n');
  });

  it('refuses a reply built wrongly: a token outside base64, an empty token or user', () => {
    expect(() => formatStatefulReply('negotiate', { result: 'TT', token: 'abc def' })).toThrow(
      'a reply token has a character outside base64 at 4',
    );
    expect(() => formatStatefulReply('negotiate', { result: 'TT', token: 'abc\n' })).toThrow(TypeError);
    expect(() => formatStatefulReply('negotiate', { result: 'OK', user: 'a', token: 'x y' })).toThrow(
      TypeError,
    );
    expect(() => formatStatefulReply('negotiate', { result: 'TT', token: '' })).toThrow(
      'a reply token is empty',
    );
    expect(() => formatStatefulReply('ntlm', { result: 'OK', user: '' })).toThrow(
      'an OK reply needs a user name',
    );
  });
});
