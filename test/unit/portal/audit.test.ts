import { afterEach, describe, expect, it } from 'vitest';
import { type Portal, startPortal } from './harness.ts';
import { replacementDetail } from '../../../portal/audit.ts';

let portal: Portal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

const eventsOf = async (p: Portal) => (await p.store.audit.list({ limit: 50 })).events.reverse();

/** The login API's audit trail: one event a call, by the API key's name, from the client, never the key. */
describe('the login API records its audit events', () => {
  it('a login, a replacement by another user and a logout: who, by which key, from where, on which box', async () => {
    const p = (portal = await startPortal());
    const other = await p.store.apiKeys.create('helpdesk');
    expect((await p.post('/api/login/', { api_key: p.key, username: 'alice' }, '127.0.0.7')).status).toBe(
      200,
    );
    // Alice again: a login, not a replacement.
    expect((await p.post('/api/login/', { api_key: p.key, username: 'alice' }, '127.0.0.7')).status).toBe(
      200,
    );
    expect((await p.post('/api/login/', { api_key: other.key, username: 'bob' }, '127.0.0.7')).status).toBe(
      200,
    );
    expect((await p.post('/api/logout/', { api_key: p.key }, '127.0.0.7')).status).toBe(200);
    expect((await p.post('/api/logout/', { api_key: p.key }, '127.0.0.7')).status).toBe(200);
    const events = (await eventsOf(p)).map(({ kind, actor, user, address, box, detail }) => ({
      kind,
      actor,
      user,
      address,
      box,
      detail,
    }));
    const at = { address: '127.0.0.7', box: 'test-box' };
    expect(events).toEqual([
      { kind: 'api.login', actor: 'api-key:tests', user: 'alice', ...at, detail: {} },
      { kind: 'api.login', actor: 'api-key:tests', user: 'alice', ...at, detail: {} },
      // One event a login: bob's replaced alice's session.
      {
        kind: 'api.replaced',
        actor: 'api-key:helpdesk',
        user: 'bob',
        ...at,
        detail: { replaced: 'alice', source: 'api' },
      },
      { kind: 'api.logout', actor: 'api-key:tests', user: 'bob', ...at, detail: {} },
      { kind: 'api.logout', actor: 'api-key:tests', user: undefined, ...at, detail: { ended: false } },
    ]);
    // Shipped to the sink once committed, the same events; the key itself nowhere.
    expect(p.shipped).toHaveLength(5);
    const secret = p.key.split('.').at(-1) ?? p.key;
    expect(JSON.stringify(await eventsOf(p))).not.toContain(secret);
    expect(JSON.stringify(p.shipped)).not.toContain(other.key.split('.').at(-1));
  });

  it('a refused call records nothing (wrong key, bad username)', async () => {
    const p = (portal = await startPortal());
    expect((await p.post('/api/login/', { api_key: 'dm.wrong.key', username: 'alice' })).status).toBe(401);
    expect((await p.post('/api/login/', { api_key: p.key, username: '\n' })).status).toBe(400);
    expect(await eventsOf(p)).toEqual([]);
    expect(p.shipped).toEqual([]);
  });
});

describe('replacementDetail: whom a splash session replaced, for its event', () => {
  it("names another user's session on the key and on the bound address; the same user is a renewal", () => {
    const bob = { username: 'bob', source: 'api' } as const;
    const carol = { username: 'carol', source: 'registration' } as const;
    expect(replacementDetail('alice', undefined, undefined)).toBeUndefined();
    expect(replacementDetail('alice', { username: 'alice', source: 'portal' }, undefined)).toBeUndefined();
    expect(replacementDetail('alice', carol, undefined)).toEqual({
      replaced: 'carol',
      source: 'registration',
    });
    expect(replacementDetail('alice', undefined, bob)).toEqual({
      addressReplaced: 'bob',
      addressSource: 'api',
    });
    expect(replacementDetail('alice', carol, bob)).toEqual({
      replaced: 'carol',
      source: 'registration',
      addressReplaced: 'bob',
      addressSource: 'api',
    });
  });
});
