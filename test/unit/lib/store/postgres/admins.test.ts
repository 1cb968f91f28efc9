import { describe, expect, it, vi } from 'vitest';
import { verifyPassword } from '../../../../../lib/security/password-hash.ts';
import { DEFAULT_SESSION_TTL_MS, tokenHash } from '../../../../../lib/store/admin-rules.ts';
import { usePgSite } from '../../../../harness/pg-site.ts';
import { rejection } from '../../../../support/thrown.ts';
import { describeAdmins } from '../contract/admins.ts';

const T0 = Date.UTC(2026, 0, 1);

describe('PgAdmins (a real PostgreSQL 15)', { timeout: 30_000 }, () => {
  const { pg, open } = usePgSite();
  describeAdmins(open);

  it('stores a salted scrypt hash and the token’s SHA-256, never the password or the token; rows stamped', async () => {
    const site = await open({ now: T0 });
    const { admins } = (await site.box()).store;
    await admins.setPassword('root', 'correct horse');
    const session = await admins.createSession('root');
    const [user] = await site.sql<Record<string, unknown>[]>`SELECT * FROM admin_users`;
    expect(String(user?.password_hash)).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(JSON.stringify(user)).not.toContain('correct horse');
    expect(await verifyPassword('correct horse', String(user?.password_hash))).toBe(true);
    const [row] = await site.sql<Record<string, unknown>[]>`SELECT * FROM admin_sessions`;
    expect(row).toMatchObject({ token_hash: tokenHash(session.token), user_name: 'root', change: 2 });
    expect(JSON.stringify(row)).not.toContain(session.token);
    expect(user?.change).toBe(1);
  });

  it('drops expired sign-ins when a new one starts', async () => {
    const site = await open({ now: T0 });
    const { admins } = (await site.box()).store;
    await admins.setPassword('root', 'pw');
    await admins.createSession('root');
    site.clock.advance(DEFAULT_SESSION_TTL_MS);
    await admins.createSession('root');
    expect(await site.sql`SELECT 1 FROM admin_sessions`).toHaveLength(1);
  });

  it('an unknown admin’s session is NOT_FOUND, and writes nothing', async () => {
    const site = await open({ now: T0 });
    const { admins } = (await site.box()).store;
    await expect(admins.createSession('nobody')).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'user: no admin named "nobody"',
    });
    expect((await site.sql`SELECT last FROM changes WHERE tab = 'admins'`)[0]?.last).toBe(0);
  });

  it('a sign-in on box A holds on A at once and reaches B by notification; a sign-out on B ends it on A', async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box(), await site.box()];
    await a.store.admins.setPassword('root', 'pw');
    const session = await a.store.admins.signIn('root', 'pw');
    const token = session?.token ?? '';
    expect(a.store.admins.findSession(token)?.userName).toBe('root');
    await vi.waitFor(() => expect(b.store.admins.findSession(token)?.userName).toBe('root'), {
      timeout: 1000,
      interval: 5,
    });
    expect(await b.store.admins.endSession(token)).toBe(true);
    expect(b.store.admins.findSession(token)).toBeUndefined();
    await vi.waitFor(() => expect(a.store.admins.findSession(token)).toBeUndefined(), {
      timeout: 1000,
      interval: 5,
    });
  });

  it('two boxes removing the same admin at once: one removes it, the other is told NOT_FOUND (decided in the write)', async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box(), await site.box()];
    await a.store.admins.setPassword('root', 'pw');
    await a.store.admins.setPassword('alice', 'pw');
    await b.sync();
    const outcomes = await Promise.all([
      rejection(a.store.admins.remove('alice')),
      rejection(b.store.admins.remove('alice')),
    ]);
    expect(outcomes.filter((o) => o === undefined)).toHaveLength(1);
    expect(outcomes.find((o) => o !== undefined)).toMatchObject({ code: 'NOT_FOUND' });
    expect(await site.sql`SELECT name FROM admin_users`).toHaveLength(1);
  });

  it('sign-in checks against the stored hash, not this box’s copy: a password changed on B is in force on A at once', async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box(), await site.box()];
    await a.store.admins.setPassword('root', 'old');
    await b.sync();
    // B's change, and A's copy held back: A checks 'old' against its copy, the write finds another hash.
    await a.replica.close();
    await b.store.admins.setPassword('root', 'new');
    expect(await a.store.admins.verify('root', 'old')).toBe(true); // from A's copy, as it stands
    expect(await a.store.admins.signIn('root', 'old')).toBeUndefined();
  });

  it('PostgreSQL away: sign-ins are still found from memory; every write is STORE_UNAVAILABLE', async () => {
    const site = await open({ now: T0 });
    const { admins } = (await site.box()).store;
    await admins.setPassword('root', 'pw');
    const { token } = await admins.createSession('root');
    await pg.server.stop();
    try {
      expect(admins.findSession(token)?.userName).toBe('root');
      expect(await admins.verify('root', 'pw')).toBe(true);
      const writes = [
        () => admins.signIn('root', 'pw'),
        () => admins.setPassword('root', 'other'),
        () => admins.endSession(token),
        () => admins.endSessionsOf('root'),
        () => admins.createSession('root'),
      ];
      for (const write of writes)
        expect(await rejection(write())).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(admins.findSession(token)?.userName).toBe('root');
    } finally {
      await pg.server.start();
    }
  });
});
