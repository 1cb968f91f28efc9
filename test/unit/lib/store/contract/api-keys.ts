import { describe, expect, it, vi } from 'vitest';
import { InvalidInputError } from '../../../../../lib/errors.ts';
import type { ContractStore, OpenSite } from './site.ts';

/**
 * The API keys' contract (ApiKeyRepository), whichever engine: what ApiKeyStore's own tests prove on SQLite,
 * through the interface, on a site of boxes sharing one store.
 */

const T0 = Date.UTC(2026, 0, 1);
const KEY_FORMAT = /^dm\.([A-Za-z0-9_-]{12})\.([A-Za-z0-9_-]{43})$/;

/** The parts of a key create() returned; fails the test if it does not have the documented shape. */
export function partsOf(key: string): { keyId: string; secret: string } {
  const m = KEY_FORMAT.exec(key);
  if (m === null) throw new Error(`not an API key: ${key}`);
  return { keyId: m[1] as string, secret: m[2] as string };
}

/** Until the pending "last used" write has landed (a PostgreSQL box writes it after answering). */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 5000, interval: 10 });

export function describeApiKeys(openSite: OpenSite<Pick<ContractStore, 'apiKeys'>>): void {
  const one = async () => {
    const site = await openSite({ now: T0 });
    const box = await site.box();
    return { site, clock: site.clock, box, keys: box.store.apiKeys };
  };

  describe('API keys: create', () => {
    it('returns the key once, with its public info', async () => {
      const { keys } = await one();
      const { key, info } = await keys.create('squid-proxy');
      expect(info).toEqual({
        name: 'squid-proxy',
        keyId: partsOf(key).keyId,
        createdAt: T0,
        lastUsedAt: undefined,
        revokedAt: undefined,
      });
      expect(keys.list()).toEqual([info]);
    });

    it('nothing returned afterwards carries the key or its secret', async () => {
      const { keys } = await one();
      const { key } = await keys.create('squid-proxy');
      const later = JSON.stringify([keys.list(), await keys.revoke('squid-proxy')]);
      expect(later).not.toContain(partsOf(key).secret);
      expect(later).toContain(partsOf(key).keyId);
    });

    it('gives every key a different id and secret', async () => {
      const { keys } = await one();
      const made = [];
      for (const name of ['a', 'b', 'c', 'd']) made.push(partsOf((await keys.create(name)).key));
      expect(new Set(made.map((k) => k.keyId)).size).toBe(4);
      expect(new Set(made.map((k) => k.secret)).size).toBe(4);
    });

    it('accepts the names allowed', async () => {
      const { keys } = await one();
      for (const name of ['a', '7', 'Squid proxy 1', 'svc.portal_2@example-org', 'x'.repeat(64)])
        expect((await keys.create(name)).info.name).toBe(name);
    });

    it.each([
      ['empty', ''],
      ['65 characters', 'x'.repeat(65)],
      ['leading space', ' proxy'],
      ['leading dot', '.proxy'],
      ['leading dash (looks like an option)', '-proxy'],
      ['slash', 'proxy/1'],
      ['colon', 'proxy:1'],
      ['quote', 'proxy"1'],
      ['newline', 'proxy\n'],
      ['tab', 'proxy\t1'],
      ['non-ASCII letter', 'prøxy'],
    ])('rejects the name: %s (INVALID_INPUT naming the field)', async (_what, name) => {
      const { keys } = await one();
      const error = await keys.create(name).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error).toMatchObject({
        code: 'INVALID_INPUT',
        field: 'name',
        message: `name: ${JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)} is not allowed: 1-64 characters, letters, digits, space, ". _ @ -", starting with a letter or digit`,
      });
      expect(keys.list()).toEqual([]);
    });

    it('a duplicate name is CONFLICT, and the first key still works', async () => {
      const { keys } = await one();
      const { key } = await keys.create('portal');
      await expect(keys.create('portal')).rejects.toMatchObject({
        code: 'CONFLICT',
        message: 'name: an API key named "portal" exists already',
      });
      expect(keys.list()).toHaveLength(1);
      expect(keys.verify(key)).toBe(true);
    });

    it('a revoked name stays taken (CONFLICT), on every box', async () => {
      const { site, keys } = await one();
      await keys.create('portal');
      await keys.revoke('portal');
      const other = await site.box();
      await expect(other.store.apiKeys.create('portal')).rejects.toMatchObject({ code: 'CONFLICT' });
    });

    it('names are case-sensitive', async () => {
      const { keys } = await one();
      await keys.create('portal');
      expect((await keys.create('Portal')).info.name).toBe('Portal');
    });
  });

  describe('API keys: verify', () => {
    it('accepts the key create() returned and records when it was used, to the minute', async () => {
      const { box, clock, keys } = await one();
      const { key } = await keys.create('portal');
      clock.advance(5000);
      expect(keys.verify(key)).toBe(true);
      await eventually(() =>
        expect(keys.list()[0]).toMatchObject({ name: 'portal', createdAt: T0, lastUsedAt: T0 + 5000 }),
      );
      clock.advance(59_999);
      expect(keys.verify(key)).toBe(true);
      await box.sync();
      expect(keys.list()[0]?.lastUsedAt).toBe(T0 + 5000);
      clock.advance(1);
      expect(keys.verify(key)).toBe(true);
      await eventually(() => expect(keys.list()[0]?.lastUsedAt).toBe(T0 + 65_000));
    });

    it('refuses a wrong secret for a known key id, and one key’s secret under another’s id', async () => {
      const { box, clock, keys } = await one();
      const a = partsOf((await keys.create('a')).key);
      const b = partsOf((await keys.create('b')).key);
      const wrong = `${a.secret.slice(0, -1)}${a.secret.endsWith('A') ? 'B' : 'A'}`;
      clock.advance(1000);
      expect(keys.verify(`dm.${a.keyId}.${wrong}`)).toBe(false);
      expect(keys.verify(`dm.${a.keyId}.${b.secret}`)).toBe(false);
      expect(keys.verify(`dm.${b.keyId}.${a.secret}`)).toBe(false);
      await box.sync();
      expect(keys.list().map((k) => k.lastUsedAt)).toEqual([undefined, undefined]);
    });

    it('refuses an unknown key id, and any key when there are none', async () => {
      const { keys } = await one();
      expect(keys.verify(`dm.${'A'.repeat(12)}.${'b'.repeat(43)}`)).toBe(false);
      const { keyId, secret } = partsOf((await keys.create('portal')).key);
      const otherId = `${keyId.slice(0, -1)}${keyId.endsWith('A') ? 'B' : 'A'}`;
      expect(keys.verify(`dm.${otherId}.${secret}`)).toBe(false);
      expect(keys.list()[0]?.lastUsedAt).toBeUndefined();
    });

    it.each([
      ['empty', () => ''],
      ['the secret alone', (key: string) => partsOf(key).secret],
      ['with a trailing newline', (key: string) => `${key}\n`],
      ['with "Bearer "', (key: string) => `Bearer ${key}`],
      ['upper-cased prefix', (key: string) => `DM${key.slice(2)}`],
      ['truncated', (key: string) => key.slice(0, -1)],
      ['extended', (key: string) => `${key}A`],
    ])('refuses a malformed key: %s', async (_what, mangle) => {
      const { box, keys } = await one();
      const { key } = await keys.create('portal');
      expect(keys.verify(mangle(key))).toBe(false);
      await box.sync();
      expect(keys.list()[0]?.lastUsedAt).toBeUndefined();
    });

    it('accepts a key created on another box', async () => {
      const { site, keys } = await one();
      const other = await site.box();
      const { key } = await keys.create('portal');
      await other.sync();
      expect(other.store.apiKeys.verify(key)).toBe(true);
    });
  });

  describe('API keys: revoke', () => {
    it('takes effect at once on this box, and on another once it has caught up', async () => {
      const { site, clock, keys } = await one();
      const api = await site.box();
      const { key } = await keys.create('portal');
      await api.sync();
      expect(api.store.apiKeys.verify(key)).toBe(true);
      clock.advance(1000);
      expect(await keys.revoke('portal')).toMatchObject({ name: 'portal', revokedAt: T0 + 1000 });
      expect(keys.verify(key)).toBe(false);
      await api.sync();
      expect(api.store.apiKeys.verify(key)).toBe(false);
    });

    it('a refused revoked key does not update lastUsedAt', async () => {
      const { box, clock, keys } = await one();
      const { key } = await keys.create('portal');
      await keys.revoke('portal');
      clock.advance(1000);
      expect(keys.verify(key)).toBe(false);
      await box.sync();
      expect(keys.list()[0]).toMatchObject({ lastUsedAt: undefined, revokedAt: T0 });
    });

    it('revokes only the named key; twice keeps the first time', async () => {
      const { clock, keys } = await one();
      const a = (await keys.create('a')).key;
      const b = (await keys.create('b')).key;
      await keys.revoke('a');
      expect(keys.verify(a)).toBe(false);
      expect(keys.verify(b)).toBe(true);
      clock.advance(60_000);
      expect((await keys.revoke('a')).revokedAt).toBe(T0);
    });

    it('an unknown name is NOT_FOUND', async () => {
      const { keys } = await one();
      await keys.create('portal');
      await expect(keys.revoke('Portal')).rejects.toMatchObject({
        code: 'NOT_FOUND',
        message: 'name: no API key named "Portal"',
      });
      expect(keys.list()[0]?.revokedAt).toBeUndefined();
    });
  });

  describe('API keys: list', () => {
    it('lists keys by creation time, then name, revoked ones included', async () => {
      const { clock, keys } = await one();
      await keys.create('zeta');
      await keys.create('alpha');
      clock.advance(1);
      await keys.create('beta');
      await keys.revoke('alpha');
      expect(keys.list().map((k) => [k.name, k.createdAt, k.revokedAt])).toEqual([
        ['alpha', T0, T0 + 1],
        ['zeta', T0, undefined],
        ['beta', T0 + 1, undefined],
      ]);
    });
  });
}
