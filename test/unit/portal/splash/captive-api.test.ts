import { describe, expect, it } from 'vitest';
import { captiveState } from '../../../../portal/splash/captive-api.ts';
import type { Session } from '../../../../lib/store/session.ts';

const URL_ = 'https://doorman.example/portal/';
const session: Session = {
  id: 1,
  key: { kind: 'ip', value: '10.0.0.5' },
  username: 'alice',
  source: 'portal',
  createdAt: 0,
  lastSeen: 0,
  expiresAt: 90_500,
  idleTimeoutMs: undefined,
};

describe('captiveState (RFC 8908)', () => {
  it('is captive without a session, not when the portal is off', () => {
    expect(captiveState(URL_, undefined, false, 0)).toEqual({ captive: true, 'user-portal-url': URL_ });
    expect(captiveState(URL_, undefined, true, 0)).toEqual({ captive: false, 'user-portal-url': URL_ });
  });

  it('gives the seconds to the hard expiry and says the session cannot be extended', () => {
    expect(captiveState(URL_, session, false, 500)).toEqual({
      captive: false,
      'user-portal-url': URL_,
      'seconds-remaining': 90,
      'can-extend-session': false,
    });
    expect(captiveState(URL_, { ...session, expiresAt: undefined }, false, 500)).toEqual({
      captive: false,
      'user-portal-url': URL_,
      'can-extend-session': false,
    });
  });
});
