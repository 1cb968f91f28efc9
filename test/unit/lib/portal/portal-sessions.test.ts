import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import {
  agreementSession,
  authenticationSession,
  isLive,
  liveSessionFor,
  registrationSession,
  secondsRemaining,
} from '../../../../lib/portal/portal-sessions.ts';
import { localMidnight } from '../../../../lib/portal/session-limits.ts';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../lib/portal/settings.ts';
import { openDatabase } from '../../../../lib/store/database.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import type { Session } from '../../../../lib/store/session.ts';

const NOW = Date.UTC(2026, 5, 1, 9);
const settings = (over: Partial<PortalSettings> = {}): PortalSettings => ({
  ...structuredClone(DEFAULT_PORTAL_SETTINGS),
  ...over,
});

describe('the sessions the splash page starts (the state table)', () => {
  it('authentication: the user on the IP, source portal, hard and idle timeouts', () => {
    expect(authenticationSession('10.0.0.5', 'alice', settings(), NOW)).toEqual({
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'alice',
      source: 'portal',
      expiresAt: NOW + 480 * 60_000,
      idleTimeoutMs: 60 * 60_000,
    });
    expect(
      authenticationSession(
        '10.0.0.5',
        'alice',
        settings({ idleTimeoutMinutes: null, hardTimeoutMinutes: null }),
        NOW,
      ),
    ).toEqual({ key: { kind: 'ip', value: '10.0.0.5' }, username: 'alice', source: 'portal' });
  });

  it('agreement: agreement:<group> on the IP, source agreement, the same timeouts', () => {
    expect(agreementSession('10.0.0.5', 'Library PCs', settings({ hardTimeoutMinutes: 30 }), NOW)).toEqual({
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'agreement:Library PCs',
      source: 'agreement',
      expiresAt: NOW + 30 * 60_000,
      idleTimeoutMs: 60 * 60_000,
    });
  });

  it('registration: the user on the MAC until the clear date begins, no idle limit', () => {
    expect(
      registrationSession(
        '3c:22:fb:12:34:56',
        'alice',
        settings({ registrationClearDate: '2026-09-01' }),
        NOW,
      ),
    ).toEqual({
      key: { kind: 'mac', value: '3c:22:fb:12:34:56' },
      username: 'alice',
      source: 'registration',
      expiresAt: localMidnight('2026-09-01'),
    });
    expect(registrationSession('3c:22:fb:12:34:56', 'alice', settings(), NOW)).not.toHaveProperty(
      'expiresAt',
    );
  });
});

describe('isLive and secondsRemaining', () => {
  const session = (over: Partial<Session>): Session => ({
    id: 1,
    key: { kind: 'ip', value: '10.0.0.5' },
    username: 'alice',
    source: 'portal',
    createdAt: NOW,
    lastSeen: NOW,
    expiresAt: undefined,
    idleTimeoutMs: undefined,
    ...over,
  });

  it('calls a session idle once its stored last seen is past the limit, with no grace (as the ICAP decision does)', () => {
    const s = session({ idleTimeoutMs: 60_000 });
    expect(isLive(s, NOW + 60_000)).toBe(true);
    expect(isLive(s, NOW + 60_001)).toBe(false);
    expect(isLive(session({}), NOW + 1e12)).toBe(true);
    expect(isLive(session({ expiresAt: NOW + 10 }), NOW + 10)).toBe(false);
  });

  it('counts an address binding with a MAC only for a client known to have that MAC', () => {
    const binding = session({ source: 'registration', mac: '3c:22:fb:12:34:56', expiresAt: NOW + 60_000 });
    expect(isLive(binding, NOW, '3c:22:fb:12:34:56')).toBe(true);
    expect(isLive(binding, NOW, '3c:22:fb:00:00:01')).toBe(false);
    expect(isLive(binding, NOW)).toBe(false);
    // A binding from before schema 6 has no MAC: the address alone.
    expect(isLive(session({ source: 'registration', expiresAt: NOW + 60_000 }), NOW)).toBe(true);
  });

  it('liveSessionFor takes the MAC among the keys as the client’s', () => {
    const db = openDatabase(':memory:');
    const sessions = new SessionStore(db, new ManualClock(NOW));
    const binding = { username: 'alice', source: 'registration', mac: '3c:22:fb:12:34:56' } as const;
    sessions.start({ ...binding, key: { kind: 'ip', value: '2001:db8::5' }, lifetimeMs: 60_000 });
    const ipKey = { kind: 'ip', value: '2001:db8::5' } as const;
    expect(liveSessionFor(sessions, [ipKey, { kind: 'mac', value: '3c:22:fb:12:34:56' }], NOW)).toMatchObject(
      {
        key: ipKey,
      },
    );
    expect(
      liveSessionFor(sessions, [ipKey, { kind: 'mac', value: '3c:22:fb:00:00:01' }], NOW),
    ).toBeUndefined();
    expect(liveSessionFor(sessions, [ipKey], NOW)).toBeUndefined();
    db.close();
  });

  it('counts whole seconds to the hard expiry', () => {
    expect(secondsRemaining(session({ expiresAt: NOW + 61_999 }), NOW)).toBe(61);
    expect(secondsRemaining(session({ expiresAt: NOW - 5 }), NOW)).toBe(0);
    expect(secondsRemaining(session({}), NOW)).toBeUndefined();
  });
});
