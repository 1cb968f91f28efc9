import { describe, expect, it } from 'vitest';
import {
  MAX_LOGIN_NAME_LENGTH,
  normaliseUserName,
  parseLoginName,
} from '../../../../lib/directory/login-name.ts';
import { InvalidInputError } from '../../../../lib/errors.ts';
import { thrown } from '../../../support/thrown.ts';

const AD = 'active-directory' as const;
const OPEN = 'open-directory' as const;
const DOMAIN = 'example.test';

describe('parseLoginName, Active Directory', () => {
  it('reads a short name as the sAMAccountName', () => {
    expect(parseLoginName('alice', AD, DOMAIN)).toEqual({
      form: 'short',
      account: 'alice',
      inBaseDomain: false,
      key: 'short:alice',
    });
  });

  it("reads user@domain as a user principal name; the implicit UPN when the domain is the base's", () => {
    expect(parseLoginName('alice@example.test', AD, DOMAIN)).toEqual({
      form: 'upn',
      account: 'alice',
      upn: 'alice@example.test',
      domain: 'example.test',
      inBaseDomain: true,
      key: 'upn:alice@example.test',
    });
    expect(parseLoginName('Alice@EXAMPLE.TEST', AD, DOMAIN).inBaseDomain).toBe(true);
    expect(parseLoginName('alice@other.test', AD, DOMAIN)).toMatchObject({
      form: 'upn',
      inBaseDomain: false,
    });
  });

  it('reads DOMAIN\\user as the short name after the backslash', () => {
    expect(parseLoginName('EXAMPLE\\alice', AD, DOMAIN)).toEqual({
      form: 'down-level',
      account: 'alice',
      domain: 'EXAMPLE',
      inBaseDomain: false,
      key: 'short:alice',
    });
  });

  it('gives one cache key for the forms that are looked up alike', () => {
    const keys = ['alice', 'ALICE', ' Alice ', 'EXAMPLE\\alice', 'example\\ALICE'].map(
      (n) => parseLoginName(n, AD, DOMAIN).key,
    );
    expect(new Set(keys)).toEqual(new Set(['short:alice']));
  });

  it.each([
    ['\\alice', 'DOMAIN\\user'],
    ['EXAMPLE\\', 'DOMAIN\\user'],
    ['A\\B\\c', 'DOMAIN\\user'],
    ['EXAMPLE\\a@b', 'DOMAIN\\user'],
    ['@example.test', 'user@domain'],
    ['alice@', 'user@domain'],
  ])('refuses %j (not of the form %s)', (input, form) => {
    const error = thrown(() => parseLoginName(input, AD, DOMAIN));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain(form);
  });

  it('refuses a UPN whose local part has an @', () => {
    expect(thrown(() => parseLoginName('a@b@example.test', AD, DOMAIN)).message).toContain('user@domain');
  });
});

describe('parseLoginName, open directory', () => {
  it('reads a short name as the uid', () => {
    expect(parseLoginName('alice', OPEN, DOMAIN)).toMatchObject({ form: 'short', account: 'alice' });
  });

  it('drops @ the base domain, keeps any other @domain as part of the uid', () => {
    expect(parseLoginName('alice@example.test', OPEN, DOMAIN)).toMatchObject({
      form: 'short',
      account: 'alice',
      key: 'short:alice',
    });
    expect(parseLoginName('alice@mail.other.test', OPEN, DOMAIN)).toMatchObject({
      form: 'short',
      account: 'alice@mail.other.test',
    });
    expect(parseLoginName('@example.test', OPEN, DOMAIN).account).toBe('@example.test');
  });

  it('refuses DOMAIN\\user', () => {
    const error = thrown(() => parseLoginName('EXAMPLE\\alice', OPEN, DOMAIN));
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toMatch(/^login: "EXAMPLE\\\\alice" is a Windows DOMAIN\\user name/);
  });

  it('passes LDAP metacharacters through (escaping makes them literal later); a backslash is refused', () => {
    for (const name of ['*', ')(uid=*', 'a*', '(cn=x)']) {
      expect(parseLoginName(name, OPEN, DOMAIN).account).toBe(name);
    }
    expect(thrown(() => parseLoginName('\\00', OPEN, DOMAIN)).code).toBe('INVALID_INPUT');
    expect(thrown(() => parseLoginName('\\00', AD, DOMAIN)).code).toBe('INVALID_INPUT');
  });
});

describe('parseLoginName, for every kind', () => {
  it.each([AD, OPEN])('%s: trims white space around the name', (kind) => {
    expect(parseLoginName('  alice\t', kind, DOMAIN).account).toBe('alice');
  });

  it.each([AD, OPEN])('%s: refuses an empty name', (kind) => {
    expect(thrown(() => parseLoginName('', kind)).message).toBe('login: "" is empty');
    expect(thrown(() => parseLoginName('   ', kind)).message).toBe('login: "   " is empty');
  });

  it.each([AD, OPEN])('%s: accepts 256 characters and refuses 257 (and 10 kB)', (kind) => {
    expect(parseLoginName('a'.repeat(MAX_LOGIN_NAME_LENGTH), kind).account).toHaveLength(256);
    // Characters, not UTF-16 units: 256 emoji are fine.
    expect(parseLoginName('😀'.repeat(256), kind).account).toHaveLength(512);
    const error = thrown(() => parseLoginName('a'.repeat(257), kind));
    expect(error.message).toMatch(/is longer than 256 characters$/);
    expect(error.message.length).toBeLessThan(120);
    expect(thrown(() => parseLoginName('x'.repeat(10_000), kind)).code).toBe('INVALID_INPUT');
  });

  it.each([AD, OPEN])('%s: refuses control characters, NUL included', (kind) => {
    for (const name of ['al\x00ice', 'alice\x00', 'al\nice', 'a\x1bb', 'a\x7fb', 'a\u0085b']) {
      expect(thrown(() => parseLoginName(name, kind)).message).toMatch(/contains a control character$/);
    }
  });

  it.each([AD, OPEN])('%s: refuses a lone surrogate (not valid Unicode)', (kind) => {
    expect(thrown(() => parseLoginName('a\ud800b', kind)).message).toMatch(/is not valid Unicode$/);
  });

  it.each([AD, OPEN])('%s: accepts non-ASCII names', (kind) => {
    expect(parseLoginName('jürgen', kind).account).toBe('jürgen');
  });
});

describe('normaliseUserName', () => {
  it('lower-cases the directory short name, and nothing else', () => {
    expect(normaliseUserName('Alice')).toBe('alice');
    expect(normaliseUserName('JÜRGEN')).toBe('jürgen');
    expect(normaliseUserName('first.last-2')).toBe('first.last-2');
  });
});
