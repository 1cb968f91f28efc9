import { describe, expect, it } from 'vitest';
import { readCookie, serializeCookie } from '../../../../portal/admin/cookies.ts';
import { SignInCsrf, tokensMatch } from '../../../../portal/admin/csrf.ts';

describe('serializeCookie', () => {
  it('always HttpOnly and SameSite=Strict; Secure on request; Max-Age 0 deletes', () => {
    expect(serializeCookie('a', 'v', { path: '/admin/', secure: false, maxAgeSeconds: 60.7 })).toBe(
      'a=v; Path=/admin/; Max-Age=60; HttpOnly; SameSite=Strict',
    );
    expect(serializeCookie('a', '', { path: '/x/admin/', secure: true, maxAgeSeconds: -5 })).toBe(
      'a=; Path=/x/admin/; Max-Age=0; HttpOnly; SameSite=Strict; Secure',
    );
  });

  it('refuses a value or path that could add attributes or split the header', () => {
    const ok = { path: '/admin/', secure: false, maxAgeSeconds: 1 };
    expect(() => serializeCookie('a', 'v; Domain=evil', ok)).toThrow();
    expect(() => serializeCookie('a', 'v\r\nX: y', ok)).toThrow();
    expect(() => serializeCookie('a b', 'v', ok)).toThrow();
    expect(() => serializeCookie('a', 'v', { ...ok, path: '/a;Domain=evil/admin/' })).toThrow();
    expect(() => serializeCookie('a', 'v', { ...ok, path: 'admin/' })).toThrow();
  });
});

describe('readCookie', () => {
  it('finds a cookie by exact name among others, the first if sent twice', () => {
    const header = 'x_doorman_admin=1; doorman_admin=abc; doorman_admin_sign_in=n; doorman_admin=def';
    expect(readCookie(header, 'doorman_admin')).toBe('abc');
    expect(readCookie(header, 'doorman_admin_sign_in')).toBe('n');
    expect(readCookie(header, 'missing')).toBeUndefined();
    expect(readCookie(undefined, 'doorman_admin')).toBeUndefined();
    expect(readCookie('garbage', 'doorman_admin')).toBeUndefined();
  });
});

describe('CSRF tokens', () => {
  it('tokensMatch: equal non-empty strings only', () => {
    expect(tokensMatch('abc', 'abc')).toBe(true);
    expect(tokensMatch('abd', 'abc')).toBe(false);
    expect(tokensMatch('abcd', 'abc')).toBe(false);
    expect(tokensMatch('', '')).toBe(false);
  });

  it('the sign-in token is an HMAC of the nonce under a key of this process', () => {
    const csrf = new SignInCsrf();
    const nonce = csrf.newNonce();
    expect(csrf.isNonce(nonce)).toBe(true);
    expect(csrf.isNonce('short')).toBe(false);
    expect(csrf.isNonce(undefined)).toBe(false);
    const token = csrf.tokenFor(nonce);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(token).not.toBe(nonce);
    expect(csrf.tokenFor(nonce)).toBe(token);
    expect(csrf.tokenFor(csrf.newNonce())).not.toBe(token);
    // Another process (after a restart) has another key: an old form no longer matches.
    expect(new SignInCsrf().tokenFor(nonce)).not.toBe(token);
  });
});
