import { describe, expect, it } from 'vitest';
import {
  idleGraceMs,
  replacedUnlessRenewal,
  type SessionColumns,
  toSession,
} from '../../../../lib/store/session.ts';

describe('replacedUnlessRenewal', () => {
  const login = { username: 'alice', source: 'api' } as const;

  it('is nothing when nothing was on the key', () => {
    expect(replacedUnlessRenewal(login, undefined)).toBeUndefined();
  });

  it('is nothing for a renewal: the same user by the same way in', () => {
    expect(replacedUnlessRenewal(login, { username: 'alice', source: 'api' })).toBeUndefined();
  });

  it('is the session found for another user, or the same user by another way in', () => {
    expect(replacedUnlessRenewal(login, { username: 'bob', source: 'api' })).toEqual({
      username: 'bob',
      source: 'api',
    });
    expect(replacedUnlessRenewal(login, { username: 'alice', source: 'portal' })).toEqual({
      username: 'alice',
      source: 'portal',
    });
  });

  it('compares user names exactly, as they are stored', () => {
    expect(replacedUnlessRenewal(login, { username: 'Alice', source: 'api' })).toEqual({
      username: 'Alice',
      source: 'api',
    });
  });
});

describe('toSession', () => {
  const row: SessionColumns = {
    id: 7,
    key_kind: 'ip',
    key: '10.0.0.1',
    username: 'alice',
    source: 'api',
    created_at: 1000,
    last_seen: 2000,
    expires_at: null,
    idle_timeout: null,
    mac: null,
  };

  it('gives NULL columns as undefined, and no mac property without one', () => {
    const session = toSession(row);
    expect(session).toEqual({
      id: 7,
      key: { kind: 'ip', value: '10.0.0.1' },
      username: 'alice',
      source: 'api',
      createdAt: 1000,
      lastSeen: 2000,
      expiresAt: undefined,
      idleTimeoutMs: undefined,
    });
    expect('mac' in session).toBe(false);
  });

  it("keeps the limits and an address binding's MAC", () => {
    const session = toSession({
      ...row,
      source: 'registration',
      expires_at: 9000,
      idle_timeout: 600_000,
      mac: '00:11:22:33:44:55',
    });
    expect(session).toMatchObject({ expiresAt: 9000, idleTimeoutMs: 600_000, mac: '00:11:22:33:44:55' });
  });
});

describe('idleGraceMs', () => {
  it('is the shortest idle limit plus a minute', () => {
    expect(idleGraceMs(0)).toBe(60_000);
    expect(idleGraceMs(300)).toBe(360_000);
  });
});
