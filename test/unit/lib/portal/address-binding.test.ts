import { describe, expect, it } from 'vitest';
import { addressBinding } from '../../../../lib/portal/address-binding.ts';
import { DEFAULT_BINDING_IDLE_MINUTES } from '../../../../lib/portal/session-limits.ts';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../lib/portal/settings.ts';
import type { Session } from '../../../../lib/store/session.ts';

const registration: Session = {
  id: 7,
  key: { kind: 'mac', value: '52:54:00:12:34:56' },
  username: 'alice',
  source: 'registration',
  createdAt: 1_000,
  lastSeen: 1_000,
  expiresAt: 1_800_000_000_000,
  idleTimeoutMs: undefined,
};

const settings = (idleTimeoutMinutes: number | null): PortalSettings => ({
  ...DEFAULT_PORTAL_SETTINGS,
  mode: 'registration',
  idleTimeoutMinutes,
});

describe('addressBinding', () => {
  it("binds the normalised IP to the registration's user, MAC and expiry, ending one idle timeout after it starts", () => {
    expect(addressBinding(registration, '2001:DB8:0:0::10', settings(15))).toEqual({
      key: { kind: 'ip', value: '2001:db8::10' },
      username: 'alice',
      source: 'registration',
      mac: '52:54:00:12:34:56',
      expiresAt: 1_800_000_000_000,
      idleTimeoutMs: 15 * 60_000,
      lifetimeMs: 15 * 60_000,
    });
  });

  it('uses 60 minutes when the settings have no idle timeout, and no expiry when the registration has none', () => {
    expect(DEFAULT_BINDING_IDLE_MINUTES).toBe(60);
    const binding = addressBinding({ ...registration, expiresAt: undefined }, '10.0.0.5', settings(null));
    expect(binding).toEqual({
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'alice',
      source: 'registration',
      mac: '52:54:00:12:34:56',
      idleTimeoutMs: 60 * 60_000,
      lifetimeMs: 60 * 60_000,
    });
    expect('expiresAt' in binding).toBe(false);
  });

  it('refuses a session that is not a MAC registration, naming it', () => {
    expect(() =>
      addressBinding({ ...registration, key: { kind: 'ip', value: '10.0.0.5' } }, '10.0.0.6', settings(5)),
    ).toThrow(
      "registration: session 7 is a ip session from registration; expected a 'mac' session from 'registration'",
    );
    expect(() => addressBinding({ ...registration, source: 'portal' }, '10.0.0.6', settings(5))).toThrow(
      /registration: .*from portal/,
    );
  });

  it('refuses something that is not an address, naming the value', () => {
    expect(() => addressBinding(registration, 'fe80::1%eth0x', settings(5))).toThrow(
      'ip: "fe80::1%eth0x" is not an IPv4 or IPv6 address',
    );
  });
});
