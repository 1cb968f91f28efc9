import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../../lib/errors.ts';
import { DEFAULT_SESSION_TTL_MS } from '../../../../../lib/store/admin-rules.ts';
import type { ContractStore, OpenSite } from './site.ts';

/**
 * The administrators' contract (AdminRepository), whichever engine: what AdminStore's own tests prove on
 * SQLite, through the interface, on a site of boxes sharing one store.
 */

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3600_000;
const sha256hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

export function describeAdmins(openSite: OpenSite<Pick<ContractStore, 'admins'>>): void {
  const one = async (options: { sessionTtlMs?: number } = {}) => {
    const site = await openSite({ now: T0 });
    const box = await site.box(options);
    return { site, clock: site.clock, box, admins: box.store.admins };
  };

  describe('admin users', () => {
    it('creates an admin, then changes their password; list shows names and times only', async () => {
      const { clock, admins } = await one();
      expect(await admins.setPassword('root', 'first secret')).toEqual({ created: true });
      clock.advance(HOUR);
      expect(await admins.setPassword('root', 'second secret')).toEqual({ created: false });
      expect(admins.list()).toEqual([{ name: 'root', createdAt: T0, updatedAt: T0 + HOUR }]);
      expect(await admins.verify('root', 'second secret')).toBe(true);
      expect(await admins.verify('root', 'first secret')).toBe(false);
    });

    it('lists admins by name', async () => {
      const { admins } = await one();
      for (const name of ['root', 'alice@example', 'Bob']) await admins.setPassword(name, 'pw');
      expect(admins.list().map((a) => a.name)).toEqual(['Bob', 'alice@example', 'root']);
    });

    it('refuses a bad name or an unusable password and creates nothing', async () => {
      const { admins } = await one();
      for (const name of ['', ' root', 'a b', 'x'.repeat(65), 'ro\not', '<script>']) {
        const error = await admins.setPassword(name, 'pw').catch((e: unknown) => e);
        expect(error, name).toBeInstanceOf(InvalidInputError);
        expect(error).toMatchObject({ field: 'user' });
      }
      for (const password of ['', 'x'.repeat(1025)]) {
        const error = await admins.setPassword('root', password).catch((e: unknown) => e);
        expect(error).toMatchObject({ code: 'INVALID_INPUT', field: 'password' });
      }
      expect(admins.list()).toEqual([]);
    });

    it('verify: false for a wrong password, an unknown name, an empty or oversized password', async () => {
      const { admins } = await one();
      await admins.setPassword('root', 'pw');
      expect(await admins.verify('root', 'pw')).toBe(true);
      expect(await admins.verify('root', 'PW')).toBe(false);
      expect(await admins.verify('nobody', 'pw')).toBe(false);
      expect(await admins.verify('Root', 'pw')).toBe(false);
      expect(await admins.verify('root', '')).toBe(false);
      expect(await admins.verify('root', 'x'.repeat(5000))).toBe(false);
    });

    it('verify costs a scrypt run for an unknown name as for a known one', async () => {
      const { admins } = await one();
      await admins.setPassword('root', 'pw');
      await admins.verify('nobody', 'warm-up'); // the dummy hash is made once, on first use
      const time = async (name: string) => {
        const started = performance.now();
        for (let i = 0; i < 3; i++) await admins.verify(name, 'wrong');
        return performance.now() - started;
      };
      const known = await time('root');
      const unknown = await time('nobody');
      // Not a timing-attack test (too noisy for that): only that the unknown name is not a shortcut.
      expect(unknown).toBeGreaterThan(known / 4);
    });

    it('has: an existing admin name, exactly', async () => {
      const { admins } = await one();
      await admins.setPassword('root', 'pw');
      expect(admins.has('root')).toBe(true);
      expect(admins.has('Root')).toBe(false);
      expect(admins.has('nobody')).toBe(false);
    });

    it('remove deletes the admin and their sessions; an unknown name is NOT_FOUND', async () => {
      const { admins } = await one();
      await admins.setPassword('root', 'pw');
      await admins.setPassword('other', 'pw');
      const { token } = await admins.createSession('root');
      const kept = await admins.createSession('other');
      await admins.remove('root');
      expect(admins.list().map((a) => a.name)).toEqual(['other']);
      expect(admins.has('root')).toBe(false);
      expect(admins.findSession(token)).toBeUndefined();
      expect(admins.findSession(kept.token)).toMatchObject({ userName: 'other' });
      await expect(admins.remove('root')).rejects.toMatchObject({
        code: 'NOT_FOUND',
        message: 'user: no admin named "root"',
      });
    });

    it('the last admin may go too, with their sign-ins (doorman admin passwd makes one again)', async () => {
      const { admins } = await one();
      await admins.setPassword('root', 'pw');
      const { token } = await admins.createSession('root');
      await admins.remove('root');
      expect(admins.has('root')).toBe(false);
      expect(admins.findSession(token)).toBeUndefined();
    });

    it('keepOne: the last admin stays (CONFLICT), decided in the write, even when two boxes remove at once', async () => {
      const { site, admins } = await one();
      await admins.setPassword('root', 'pw');
      await expect(admins.remove('root', { keepOne: true })).rejects.toMatchObject({
        code: 'CONFLICT',
        message: 'user: "root" is the only administrator: add another first',
      });
      expect(admins.has('root')).toBe(true);
      await admins.setPassword('other', 'pw');
      const there = (await site.box()).store.admins;
      const both = await Promise.allSettled([
        admins.remove('root', { keepOne: true }),
        there.remove('other', { keepOne: true }),
      ]);
      expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect(both.filter((r) => r.status === 'rejected')[0]).toMatchObject({ reason: { code: 'CONFLICT' } });
      expect(admins.list()).toHaveLength(1);
    });
  });

  describe('admin sessions', () => {
    const signedUp = async (options: { sessionTtlMs?: number } = {}) => {
      const context = await one(options);
      await context.admins.setPassword('root', 'pw');
      return context;
    };

    it('returns a 256-bit token once, and a CSRF token of its own', async () => {
      const { admins } = await signedUp();
      const session = await admins.createSession('root');
      expect(session.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(session.token, 'base64url')).toHaveLength(32);
      expect(session.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(session.csrfToken).not.toBe(session.token);
      expect(session).toMatchObject({
        userName: 'root',
        createdAt: T0,
        expiresAt: T0 + DEFAULT_SESSION_TTL_MS,
      });
    });

    it('finds a live session by its token, with its CSRF token, and nothing for any other string', async () => {
      const { admins } = await signedUp();
      const session = await admins.createSession('root');
      expect(admins.findSession(session.token)).toEqual({
        userName: 'root',
        csrfToken: session.csrfToken,
        createdAt: T0,
        expiresAt: T0 + DEFAULT_SESSION_TTL_MS,
      });
      const other = (await admins.createSession('root')).token;
      expect(admins.findSession(other)?.csrfToken).not.toBe(session.csrfToken);
      for (const wrong of ['', 'x', `${session.token}x`, session.token.slice(1), sha256hex(session.token)])
        expect(admins.findSession(wrong), wrong).toBeUndefined();
    });

    it('expires after 8 hours; no idle timeout', async () => {
      const { clock, admins } = await signedUp();
      const { token } = await admins.createSession('root');
      clock.advance(DEFAULT_SESSION_TTL_MS - 1);
      expect(admins.findSession(token)).toBeDefined();
      clock.advance(1);
      expect(admins.findSession(token)).toBeUndefined();
    });

    it('or after the lifetime given', async () => {
      const { clock, admins } = await signedUp({ sessionTtlMs: 60_000 });
      expect((await admins.createSession('root')).expiresAt).toBe(clock.now() + 60_000);
    });

    it('endSession signs one session out', async () => {
      const { admins } = await signedUp();
      const a = await admins.createSession('root');
      const b = await admins.createSession('root');
      expect(await admins.endSession(a.token)).toBe(true);
      expect(await admins.endSession(a.token)).toBe(false);
      expect(await admins.endSession('garbage')).toBe(false);
      expect(admins.findSession(a.token)).toBeUndefined();
      expect(admins.findSession(b.token)).toBeDefined();
    });

    it('a password change ends every session of that admin, and only theirs', async () => {
      const { admins } = await signedUp();
      await admins.setPassword('other', 'pw');
      const a = await admins.createSession('root');
      const b = await admins.createSession('root');
      const c = await admins.createSession('other');
      await admins.setPassword('root', 'new password');
      expect(admins.findSession(a.token)).toBeUndefined();
      expect(admins.findSession(b.token)).toBeUndefined();
      expect(admins.findSession(c.token)).toBeDefined();
      expect(await admins.endSessionsOf('other')).toBe(1);
      expect(admins.findSession(c.token)).toBeUndefined();
    });

    it('signIn makes a session for the right password only', async () => {
      const { admins } = await signedUp();
      expect(await admins.signIn('root', 'wrong')).toBeUndefined();
      expect(await admins.signIn('nobody', 'pw')).toBeUndefined();
      const session = await admins.signIn('root', 'pw');
      expect(session && admins.findSession(session.token)?.userName).toBe('root');
    });

    it('signIn makes no session when the password changes while it checks the old one', async () => {
      const { admins } = await signedUp();
      const signingIn = admins.signIn('root', 'pw'); // scrypt runs off the event loop
      await admins.setPassword('root', 'new password');
      // Whichever scrypt finished first, no session of the old password is alive afterwards.
      const session = await signingIn;
      expect(session === undefined || admins.findSession(session.token) === undefined).toBe(true);
      expect(await admins.signIn('root', 'new password')).toBeDefined();
    });

    it('cannot start a session for an admin that does not exist', async () => {
      const { admins } = await signedUp();
      await expect(admins.createSession('nobody')).rejects.toThrow();
    });

    it('another box sees the sign-ins; a password change there ends them here', async () => {
      const { site, box, admins } = await signedUp();
      const { token } = await admins.createSession('root');
      const other = await site.box();
      expect(other.store.admins.findSession(token)?.userName).toBe('root');
      await other.store.admins.setPassword('root', 'changed');
      await box.sync();
      expect(admins.findSession(token)).toBeUndefined();
      expect(await admins.verify('root', 'changed')).toBe(true);
    });
  });
}
