import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import {
  MAX_SIGNATURE_LENGTH,
  MAX_SIGNED_URL,
  PORTAL_URL_LIFETIME_SECONDS,
  PortalUrlSigner,
} from '../../../../lib/security/portal-url-signature.ts';

const URL = 'http://example.com/news?a=1&b=%3Cx%3E';
const IP = '10.91.0.2';

function setup(secret = 'the proxy key') {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 9));
  const signer = new PortalUrlSigner(secret, clock);
  return { clock, signer, sig: signer.sign(URL, IP) };
}

describe('PortalUrlSigner', () => {
  it('accepts its own signature for the same URL and address, for ten minutes', () => {
    const { clock, signer, sig } = setup();
    expect(PORTAL_URL_LIFETIME_SECONDS).toBe(600);
    expect(sig).toMatch(/^\d+\.[A-Za-z0-9_-]{43}$/);
    expect(signer.verify(URL, IP, sig)).toEqual({ ok: true });
    clock.advance(599_000);
    expect(signer.verify(URL, IP, sig)).toEqual({ ok: true });
    clock.advance(1000);
    expect(signer.verify(URL, IP, sig)).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuses a tampered URL, another address, a moved expiry, a changed MAC', () => {
    const { signer, sig } = setup();
    const [expires, mac] = sig.split('.') as [string, string];
    expect(signer.verify('http://evil.example/news?a=1&b=%3Cx%3E', IP, sig)).toEqual({
      ok: false,
      reason: 'forged',
    });
    expect(signer.verify(`${URL}#`, IP, sig)).toEqual({ ok: false, reason: 'forged' });
    expect(signer.verify(URL, '10.91.0.3', sig)).toEqual({ ok: false, reason: 'forged' });
    expect(signer.verify(URL, IP, `${Number(expires) + 3600}.${mac}`)).toEqual({
      ok: false,
      reason: 'forged',
    });
    const flipped = `${mac.startsWith('A') ? 'B' : 'A'}${mac.slice(1)}`;
    expect(signer.verify(URL, IP, `${expires}.${flipped}`)).toEqual({ ok: false, reason: 'forged' });
  });

  it('refuses a signature made with another key, and one made for longer than the lifetime', () => {
    const { sig } = setup('another key');
    const { signer, clock } = setup();
    expect(signer.verify(URL, IP, sig)).toEqual({ ok: false, reason: 'forged' });
    // A signer with a longer lifetime under the same key: its expiry is further out than this one makes.
    const long = new PortalUrlSigner('the proxy key', clock, { lifetimeSeconds: 86_400 });
    expect(signer.verify(URL, IP, long.sign(URL, IP))).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuses a missing, malformed or oversized signature, and an oversized URL, before any MAC is made', () => {
    const { signer, sig } = setup();
    expect(signer.verify(URL, IP, undefined)).toEqual({ ok: false, reason: 'missing' });
    expect(signer.verify(URL, IP, '')).toEqual({ ok: false, reason: 'missing' });
    for (const bad of ['x', `${sig}=`, ` ${sig}`, `-1.${sig.split('.')[1]}`, sig.replace('.', ':')])
      expect(signer.verify(URL, IP, bad), bad).toEqual({ ok: false, reason: 'malformed' });
    expect(signer.verify(URL, IP, '1'.repeat(MAX_SIGNATURE_LENGTH + 1))).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(signer.verify(URL, IP, `${'9'.repeat(1_000_000)}.${sig.split('.')[1]}`)).toEqual({
      ok: false,
      reason: 'malformed',
    });
    const long = `http://example.com/${'a'.repeat(MAX_SIGNED_URL)}`;
    expect(signer.verify(long, IP, sig)).toEqual({ ok: false, reason: 'too-long' });
    expect(() => signer.sign(long, IP)).toThrow(RangeError);
  });
});
