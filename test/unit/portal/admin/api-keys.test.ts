import { describe, expect, it, vi } from 'vitest';
import { useAdminPortal, type AdminPortal, textOf } from './harness.ts';
import { unlabelled } from './page-text.ts';

const { start, signedIn: signedInAt } = useAdminPortal();
const signedIn = () => signedInAt('/admin/api-keys');

const names = (p: AdminPortal) =>
  p.apiKeys.list().map((k) => [k.name, k.revokedAt === undefined ? 'in use' : 'revoked']);

describe('the API keys screen', () => {
  it('sends a visitor who is not signed in to the sign-in page', async () => {
    const p = await start();
    const b = p.browser();
    for (const reply of [
      await b.get('/admin/api-keys'),
      await b.post('/admin/api-keys', {}),
      await b.post('/admin/api-keys/revoke', {}),
    ]) {
      expect(reply.status).toBe(303);
      expect(reply.headers.location).toBe('/admin/sign-in');
    }
  });

  it('makes a key and shows it once, on that answer only (no-store); the key works; it is never logged', async () => {
    const { p, b, csrf } = await signedIn();
    const made = await b.post('/admin/api-keys', { csrf, name: 'badge reader' });
    expect(made.status).toBe(200);
    expect(made.headers['cache-control']).toBe('no-store');
    const key = /id="new-key-value"\s+value="([^"]+)"/.exec(made.text)?.[1] ?? '';
    expect(textOf(made.text)).toContain('Made the API key badge reader. Copy it now: it is not shown again.');
    expect(unlabelled(made.text)).toEqual([]);
    const later = await b.get('/admin/api-keys');
    expect(later.text).not.toContain(key);
    expect(textOf(later.text)).toContain('badge reader 2026-01-01 00:00:00 UTC never In use');
    expect(p.apiKeys.verify(key)).toBe(true);
    expect(p.logs.join('\n')).not.toContain(key);
    expect(p.logs).toContainEqual('admin: "root" made the API key "badge reader"');
  });

  it('shows when a key was last used', async () => {
    const { p, b, csrf } = await signedIn();
    const made = await b.post('/admin/api-keys', { csrf, name: 'vpn' });
    const key = /id="new-key-value"\s+value="([^"]+)"/.exec(made.text)?.[1] ?? '';
    p.clock.advance(90_000);
    expect(p.apiKeys.verify(key)).toBe(true);
    // The "last used" write is bookkeeping the store makes after the answer, not before.
    await vi.waitFor(() => expect(p.apiKeys.list()[0]?.lastUsedAt).toBeDefined());
    expect(textOf((await b.get('/admin/api-keys')).text)).toContain(
      'vpn 2026-01-01 00:00:00 UTC 2026-01-01 00:01:30 UTC In use',
    );
  });

  it.each([
    ['', 400, 'Name: "" is not allowed: 1-64 characters'],
    ['<script>', 400, 'Name: "<script>" is not allowed'],
  ])(
    'refuses the name %j with %i naming the field and value, keeps what was typed, makes nothing',
    async (name, status, message) => {
      const { p, b, csrf } = await signedIn();
      const reply = await b.post('/admin/api-keys', { csrf, name });
      expect(reply.status).toBe(status);
      expect(textOf(reply.text)).toContain(message);
      expect(reply.text).not.toContain('<script>');
      expect(reply.text).not.toContain('new-key-value');
      expect(names(p)).toEqual([]);
    },
  );

  it('refuses a name in use (409) and an unknown one to revoke (404), changing nothing', async () => {
    const { p, b, csrf } = await signedIn();
    await b.post('/admin/api-keys', { csrf, name: 'vpn' });
    const taken = await b.post('/admin/api-keys', { csrf, name: 'vpn' });
    expect(taken.status).toBe(409);
    expect(textOf(taken.text)).toContain('Name: an API key named "vpn" exists already; nothing was changed');
    const unknown = await b.post('/admin/api-keys/revoke', { csrf, name: 'wifi' });
    expect(unknown.status).toBe(404);
    expect(textOf(unknown.text)).toContain('no API key named "wifi"');
    expect(names(p)).toEqual([['vpn', 'in use']]);
  });

  it('Revoke: the key is refused from then on; the list says when', async () => {
    const { p, b, csrf } = await signedIn();
    const made = await b.post('/admin/api-keys', { csrf, name: 'vpn' });
    const key = /id="new-key-value"\s+value="([^"]+)"/.exec(made.text)?.[1] ?? '';
    const revoked = await b.post('/admin/api-keys/revoke', { csrf, name: 'vpn' });
    expect(revoked.status).toBe(200);
    expect(textOf(revoked.text)).toContain('Revoked the API key vpn: it is refused from its next request.');
    expect(textOf(revoked.text)).toContain(
      'vpn 2026-01-01 00:00:00 UTC never Revoked 2026-01-01 00:00:00 UTC',
    );
    expect(p.apiKeys.verify(key)).toBe(false);
    expect(p.logs).toContainEqual('admin: "root" revoked the API key "vpn"');
  });

  it.each([
    ['/admin/api-keys', { name: 'vpn' }],
    ['/admin/api-keys/revoke', { name: 'old' }],
  ])('%s refuses a missing or wrong CSRF token and changes nothing', async (path, fields) => {
    const { p, b, csrf } = await signedIn();
    await b.post('/admin/api-keys', { csrf, name: 'old' });
    expect((await b.post(path, fields)).status).toBe(403);
    expect((await b.post(path, { ...fields, csrf: 'forged' })).status).toBe(403);
    expect(names(p)).toEqual([['old', 'in use']]);
  });
});
