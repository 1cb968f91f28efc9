import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { SplashCsrf } from '../../../../portal/splash/csrf.ts';

describe('SplashCsrf', () => {
  const setup = (secret?: string) => {
    const clock = new ManualClock();
    const csrf = new SplashCsrf(clock, secret === undefined ? {} : { secret });
    const nonce = csrf.newNonce();
    return { clock, csrf, nonce, token: csrf.tokenFor(nonce, '10.0.0.5') };
  };

  it('accepts its own token for the same nonce and address, for an hour', () => {
    const { clock, csrf, nonce, token } = setup();
    expect(token).toMatch(/^\d+\.[A-Za-z0-9_-]{43}$/);
    expect(csrf.verify(nonce, '10.0.0.5', token)).toBe(true);
    clock.advance(3599_000);
    expect(csrf.verify(nonce, '10.0.0.5', token)).toBe(true);
    clock.advance(1000);
    expect(csrf.verify(nonce, '10.0.0.5', token)).toBe(false);
  });

  it('refuses another nonce, another address, a changed time, a missing or malformed token', () => {
    const { csrf, nonce, token } = setup();
    expect(csrf.verify(csrf.newNonce(), '10.0.0.5', token)).toBe(false);
    expect(csrf.verify(nonce, '10.0.0.6', token)).toBe(false);
    const [issued, mac] = token.split('.') as [string, string];
    expect(csrf.verify(nonce, '10.0.0.5', `${Number(issued) + 1}.${mac}`)).toBe(false);
    expect(csrf.verify(nonce, '10.0.0.5', `${issued}.${mac.slice(1)}x`)).toBe(false);
    expect(csrf.verify(undefined, '10.0.0.5', token)).toBe(false);
    expect(csrf.verify('short', '10.0.0.5', token)).toBe(false);
    for (const bad of ['', mac, `x.${mac}`, `${issued}.${mac}.`, `-1.${mac}`, `1e3.${mac}`]) {
      expect(csrf.verify(nonce, '10.0.0.5', bad), bad).toBe(false);
    }
  });

  it('refuses a token from the future (beyond a minute of clock slack)', () => {
    const { clock, csrf, nonce } = setup();
    clock.advance(120_000);
    const later = csrf.tokenFor(nonce, '10.0.0.5');
    clock.advance(-120_000);
    expect(csrf.verify(nonce, '10.0.0.5', later)).toBe(false);
  });

  it('with a secret, another instance (a restarted Doorman) accepts the token; without, it does not', () => {
    const a = setup('proxy-key-bytes');
    const b = new SplashCsrf(a.clock, { secret: 'proxy-key-bytes' });
    expect(b.verify(a.nonce, '10.0.0.5', a.token)).toBe(true);
    expect(new SplashCsrf(a.clock, { secret: 'another' }).verify(a.nonce, '10.0.0.5', a.token)).toBe(false);
    const c = setup();
    expect(new SplashCsrf(c.clock).verify(c.nonce, '10.0.0.5', c.token)).toBe(false);
  });
});
