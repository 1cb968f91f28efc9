import { describe, expect, it } from 'vitest';
import { parseUsername } from '../../../portal/api/username.ts';

describe('parseUsername', () => {
  it('trims surrounding white space', () => {
    expect(parseUsername('  alice\t')).toEqual({ ok: true, username: 'alice' });
  });

  it('keeps inner spaces and any script', () => {
    expect(parseUsername('Ana María')).toEqual({ ok: true, username: 'Ana María' });
    expect(parseUsername('DOMAIN\\jörg')).toEqual({ ok: true, username: 'DOMAIN\\jörg' });
  });

  it('allows 256 code points and refuses 257, counting astral characters once', () => {
    expect(parseUsername('a'.repeat(256))).toEqual({ ok: true, username: 'a'.repeat(256) });
    expect(parseUsername('😀'.repeat(256))).toEqual({ ok: true, username: '😀'.repeat(256) });
    expect(parseUsername('a'.repeat(257)).ok).toBe(false);
    expect(parseUsername('😀'.repeat(257)).ok).toBe(false);
  });

  it('refuses empty and all-blank names', () => {
    expect(parseUsername('')).toEqual({
      ok: false,
      message: '"" is not allowed: 1-256 characters after trimming white space, no control characters',
    });
    expect(parseUsername(' \u00a0 ').ok).toBe(false);
  });

  it('refuses control characters and line separators anywhere inside', () => {
    for (const bad of [
      'a\nb',
      'a\rb',
      'a\u0000b',
      'a\u007fb',
      'a\u0085b',
      'a\u2028b',
      'a\u2029b',
      'a\u001bb',
    ]) {
      expect(parseUsername(bad).ok, JSON.stringify(bad)).toBe(false);
    }
  });

  it('shows the refused value escaped and bounded', () => {
    const result = parseUsername(`${'x'.repeat(300)}\n`);
    expect(result).toEqual({
      ok: false,
      message: `"${'x'.repeat(64)}…" is not allowed: 1-256 characters after trimming white space, no control characters`,
    });
    expect(parseUsername('a\nb')).toMatchObject({ message: expect.stringContaining('"a\\nb"') });
  });
});
