import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { lastLookupOf, PROBE_ADDRESS } from '../../../helpers/authd/probe.ts';
import { SessionLookup } from '../../../helpers/session-lookup.ts';
import { ManualClock } from '../../../lib/clock.ts';
import { EXPLAIN_LOOKUP_WORD } from '../../../lib/helper-protocol/explain-lookup.ts';
import { formatReply, parseRequest } from '../../../lib/helper-protocol/message.ts';
import {
  bindingIdleMs,
  portalSessionLimits,
  registrationExpiry,
} from '../../../lib/portal/session-limits.ts';
import { addressBinding } from '../../../lib/portal/address-binding.ts';
import { DEFAULT_PORTAL_SETTINGS } from '../../../lib/portal/settings.ts';
import type { HelperReply, HelperRequest } from '../../../lib/helper-protocol/message.ts';
import { openDatabase } from '../../../lib/store/database.ts';
import type { Db } from '../../../lib/store/database.ts';
import { SessionStore } from '../../../lib/store/session-store.ts';
import type { SessionKey } from '../../../lib/store/session.ts';
import { squidEscapeField, squidReadsReply } from '../lib/helper-protocol/squid-model.ts';
import { ip, mac } from '../../support/session-keys.ts';

const T0 = Date.UTC(2026, 0, 1);

/**
 * The request Squid 5 sends for `%SRC %>eui` with concurrency: channel, escaped fields, then the acl's
 * arguments or a lone "-" when it has none; parsed the way the helper parses it.
 */
function request(src: string, eui = '-', aclArgs: readonly string[] = []): HelperRequest {
  const line = ['1', src, eui, ...(aclArgs.length === 0 ? ['-'] : aclArgs)].map(squidEscapeField).join(' ');
  const parsed = parseRequest(line, true);
  if (!parsed.ok) throw new Error(`test request did not parse: ${parsed.message}`);
  return parsed.request;
}

/** The reply line the helper would write, without channel and LF. */
const line = (reply: HelperReply): string => formatReply(undefined, reply).slice(0, -1);

let dir: string;
let clock: ManualClock;
let handles: Db[];
/** The helper's store: a handle of its own on the DB file. */
let store: SessionStore;
/** Another process (the web app): logins and logouts happen here. */
let portal: SessionStore;
let lookup: SessionLookup;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'doorman-lookup-'));
  const path = join(dir, 'doorman.db');
  clock = new ManualClock(T0);
  handles = [openDatabase(path), openDatabase(path)];
  portal = new SessionStore(handles[0] as Db, clock);
  store = new SessionStore(handles[1] as Db, clock);
  lookup = new SessionLookup(store, clock);
});
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of handles) if (db.open) db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A batch of one request, as the helper runs it: refresh, then answer. */
function ask(src: string, eui = '-', aclArgs: readonly string[] = []): string {
  lookup.refresh();
  return line(lookup.handle(request(src, eui, aclArgs)));
}

const lastSeen = (key: SessionKey): number | undefined =>
  store.list().find((s) => s.key.kind === key.kind && s.key.value === key.value)?.lastSeen;

describe('answers', () => {
  it('OK user=NAME for a live session on the client IP', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(ask('10.0.0.5')).toBe('OK user=alice');
  });

  it('escapes a user name with spaces, quotes and non-ASCII so Squid reads it back unchanged', () => {
    const name = 'Jürgen "JM" Müller 😀';
    portal.start({ key: ip('10.0.0.5'), username: name, source: 'portal' });
    const reply = ask('10.0.0.5');
    expect(reply).toBe('OK user=J%C3%BCrgen%20%22JM%22%20M%C3%BCller%20%F0%9F%98%80');
    expect(squidReadsReply(reply, false)).toEqual({
      channel: undefined,
      result: 'OK',
      notes: [['user', name]],
      rest: '',
    });
  });

  it('finds the IPv4 session for an IPv4-mapped IPv6 client address', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(ask('::ffff:10.0.0.5')).toBe('OK user=alice');
    expect(ask('::FFFF:10.0.0.5')).toBe('OK user=alice');
  });

  it('finds an IPv6 session whatever the spelling of the client address', () => {
    portal.start({ key: ip('2001:db8::1'), username: 'bob', source: 'api' });
    expect(ask('2001:DB8:0:0:0:0:0:1')).toBe('OK user=bob');
    expect(ask('2001:db8::1')).toBe('OK user=bob');
  });

  it('ERR for an address without a session', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(ask('10.0.0.6')).toBe('ERR');
    expect(ask('10.0.0.50')).toBe('ERR');
  });

  it("answers authd's probe with the last lookup Squid asked, never counting the probe as one", () => {
    expect(ask(PROBE_ADDRESS)).toBe('ERR');
    portal.start({ key: ip('2001:db8::5'), username: 'alice', source: 'api' });
    expect(ask('2001:db8::5')).toBe('OK user=alice');
    const okAt = clock.now();
    clock.advance(5000);
    const probed = ask(PROBE_ADDRESS);
    expect(lastLookupOf(`0 ${probed}`)).toEqual({ at: okAt, ip: '2001:db8::5', answer: 'OK' });
    clock.advance(1000);
    expect(ask('10.0.0.9')).toBe('ERR');
    expect(lastLookupOf(`0 ${ask(PROBE_ADDRESS)}`)).toEqual({
      at: okAt + 6000,
      ip: '10.0.0.9',
      answer: 'ERR',
    });
    expect(lastLookupOf(`0 ${ask(PROBE_ADDRESS)}`)?.ip).toBe('10.0.0.9');
  });

  it('BH for a client address that is not an IP, naming the value', () => {
    for (const src of ['garbage', '10.0.0.256', '010.0.0.5', 'fe80::1%eth0', '-', 'a'.repeat(500)]) {
      const reply = ask(src);
      expect(reply, src).toMatch(/^BH message=/);
      const message = squidReadsReply(reply, false).notes[0]?.[1] ?? '';
      expect(message).toContain(src.slice(0, 20));
      expect(message.length).toBeLessThan(200);
    }
  });

  it('BH for a request without fields', () => {
    const parsed = parseRequest('7', true);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(line(lookup.handle(parsed.request))).toMatch(/^BH message=/);
  });

  it('falls back to the MAC, in any case and with - or : separators', () => {
    portal.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'carol', source: 'registration' });
    expect(ask('10.0.0.9', 'aa:bb:cc:dd:ee:ff')).toBe('OK user=carol');
    expect(ask('10.0.0.9', 'aa-bb-cc-dd-ee-ff')).toBe('OK user=carol');
    expect(ask('10.0.0.9', 'AA:BB:CC:DD:EE:FF')).toBe('OK user=carol');
    expect(ask('10.0.0.9', 'AA-BB-CC-DD-EE-FF')).toBe('OK user=carol');
    expect(ask('10.0.0.9', 'aa:bb:cc:dd:ee:fe')).toBe('ERR');
  });

  it('takes "-" (Squid has no MAC) and non-MAC text as no MAC', () => {
    portal.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'carol', source: 'registration' });
    expect(ask('10.0.0.9', '-')).toBe('ERR');
    expect(ask('10.0.0.9', 'aa:bb:cc:dd:ee')).toBe('ERR');
    expect(ask('10.0.0.9', 'aa:bb-cc:dd:ee:ff')).toBe('ERR');
  });

  it('prefers the IP session over the MAC session', () => {
    portal.start({ key: ip('10.0.0.9'), username: 'dave', source: 'api' });
    portal.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'carol', source: 'registration' });
    expect(ask('10.0.0.9', 'aa:bb:cc:dd:ee:ff')).toBe('OK user=dave');
    expect(ask('10.0.0.10', 'aa:bb:cc:dd:ee:ff')).toBe('OK user=carol');
  });

  it('ignores the acl arguments Squid appends', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(ask('10.0.0.5', '-', ['staff', 'extra arg'])).toBe('OK user=alice');
    expect(ask('10.0.0.6', '-', ['staff'])).toBe('ERR');
    // Format `%SRC` alone: the "-" after the address is the empty acl argument list.
    expect(line(lookup.handle({ channel: '1', fields: ['10.0.0.5', '-'] }))).toBe('OK user=alice');
    expect(line(lookup.handle({ channel: '1', fields: ['10.0.0.5'] }))).toBe('OK user=alice');
  });
});

describe('expiry and the cache', () => {
  it('ends a cached session at its hard expiry without reading the DB again', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', expiresAt: T0 + 60_000 });
    const find = vi.spyOn(store, 'find');
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    expect(find).toHaveBeenCalledTimes(1);
    clock.set(T0 + 59_999);
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    clock.set(T0 + 60_000);
    expect(ask('10.0.0.5')).toBe('ERR');
    clock.advance(3_600_000);
    expect(ask('10.0.0.5')).toBe('ERR');
    expect(find).toHaveBeenCalledTimes(1);
  });

  it('answers from its cache until refresh() sees another handle commit', () => {
    const find = vi.spyOn(store, 'find');
    lookup.refresh();
    expect(line(lookup.handle(request('10.0.0.7')))).toBe('ERR');
    portal.start({ key: ip('10.0.0.7'), username: 'erin', source: 'portal' });
    // Same batch: the cached "no session" stands.
    expect(line(lookup.handle(request('10.0.0.7')))).toBe('ERR');
    expect(find).toHaveBeenCalledTimes(1);
    // Next batch: the login is seen.
    expect(ask('10.0.0.7')).toBe('OK user=erin');
    expect(find).toHaveBeenCalledTimes(2);
  });

  it('sees a logout and a user switch from another handle after refresh()', () => {
    portal.start({ key: ip('10.0.0.7'), username: 'erin', source: 'portal' });
    expect(ask('10.0.0.7')).toBe('OK user=erin');
    portal.start({ key: ip('10.0.0.7'), username: 'frank', source: 'portal' });
    expect(ask('10.0.0.7')).toBe('OK user=frank');
    portal.end(ip('10.0.0.7'));
    expect(ask('10.0.0.7')).toBe('ERR');
    portal.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'gina', source: 'registration' });
    expect(ask('10.0.0.7', 'aa:bb:cc:dd:ee:ff')).toBe('OK user=gina');
    portal.clear();
    expect(ask('10.0.0.7', 'aa:bb:cc:dd:ee:ff')).toBe('ERR');
  });

  it('keeps its cache across refresh() when nobody else wrote, its own last-seen writes included', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    const find = vi.spyOn(store, 'find');
    for (let i = 0; i < 5; i++) {
      expect(ask('10.0.0.5')).toBe('OK user=alice');
      expect(ask('10.0.0.6')).toBe('ERR');
      clock.advance(1000);
      lookup.flushSeen();
    }
    expect(find).toHaveBeenCalledTimes(2);
  });
});

describe("doorman explain's lookup", () => {
  const explained = (src: string, eui = '-'): string => {
    lookup.refresh();
    return line(lookup.handle(request(EXPLAIN_LOOKUP_WORD, src, [eui])));
  };

  it("answers what Squid would be told, and records nothing: no last seen, not Squid's last lookup", () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(ask('10.0.0.6')).toBe('ERR');
    const squidAt = clock.now();
    clock.advance(5000);
    expect(explained('10.0.0.5')).toBe('OK user=alice');
    expect(explained('10.0.0.7')).toBe('ERR');
    expect(lastLookupOf(`0 ${ask(PROBE_ADDRESS)}`)).toEqual({ at: squidAt, ip: '10.0.0.6', answer: 'ERR' });
    const touch = vi.spyOn(store, 'touch');
    lookup.flushSeen();
    expect(touch).not.toHaveBeenCalled();
    expect(lastSeen(ip('10.0.0.5'))).toBe(T0);
  });
});

describe('last seen', () => {
  it('is written once per flush, with the latest lookup time, not once per lookup', () => {
    const alice = portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    const bob = portal.start({ key: ip('10.0.0.6'), username: 'bob', source: 'api' });
    // The maps themselves, not copies: the store may keep one (LookupStore.touch), the lookup never changes
    // it after the call.
    const batches: Array<ReadonlyMap<number, number>> = [];
    const write = store.touch.bind(store);
    const touch = vi.spyOn(store, 'touch').mockImplementation((seen) => {
      batches.push(seen);
      write(seen);
    });
    for (let i = 1; i <= 10; i++) {
      clock.set(T0 + i * 1000);
      expect(ask('10.0.0.5')).toBe('OK user=alice');
    }
    expect(ask('10.0.0.99')).toBe('ERR');
    expect(lastSeen(ip('10.0.0.5'))).toBe(T0);
    expect(touch).not.toHaveBeenCalled();

    lookup.flushSeen();
    expect(touch).toHaveBeenCalledTimes(1);
    expect(batches).toEqual([new Map([[alice.id, T0 + 10_000]])]);
    expect(lastSeen(ip('10.0.0.5'))).toBe(T0 + 10_000);
    expect(lastSeen(ip('10.0.0.6'))).toBe(T0);
    clock.set(T0 + 20_000);
    ask('10.0.0.6');
    lookup.flushSeen();
    expect(batches).toEqual([new Map([[alice.id, T0 + 10_000]]), new Map([[bob.id, T0 + 20_000]])]);
  });

  it('keeps what a flush could not write (another process held the write lock) for the next flush', () => {
    const alice = portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    const waitless = openDatabase(join(dir, 'doorman.db'), { busyTimeoutMs: 0 });
    handles.push(waitless);
    const helper = new SessionLookup(new SessionStore(waitless, clock), clock);
    clock.set(T0 + 5000);
    helper.refresh();
    expect(line(helper.handle(request('10.0.0.5')))).toBe('OK user=alice');
    const web = handles[0] as Db;
    web.exec('BEGIN IMMEDIATE');
    expect(() => helper.flushSeen()).toThrow(/locked|busy/i);
    web.exec('ROLLBACK');
    helper.flushSeen();
    expect(lastSeen(ip('10.0.0.5'))).toBe(T0 + 5000);
    expect(alice.lastSeen).toBe(T0);
  });

  it('writes nothing when nothing was seen since the last flush', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    const touch = vi.spyOn(store, 'touch');
    lookup.flushSeen();
    clock.advance(1000);
    ask('10.0.0.5');
    lookup.flushSeen();
    lookup.flushSeen();
    expect(touch).toHaveBeenCalledTimes(1);
    expect(lastSeen(ip('10.0.0.5'))).toBe(T0 + 1000);
  });

  it('writes at most `limit` times per flush and says how many are left', () => {
    for (let i = 1; i <= 5; i++) portal.start({ key: ip(`10.0.1.${i}`), username: `u${i}`, source: 'api' });
    clock.advance(1000);
    for (let i = 1; i <= 5; i++) ask(`10.0.1.${i}`);
    const sizes: number[] = [];
    const write = store.touch.bind(store);
    vi.spyOn(store, 'touch').mockImplementation((seen) => {
      sizes.push(seen.size); // now: the map may be cleared once written
      write(seen);
    });
    expect(lookup.flushSeen(2)).toBe(3);
    expect(lookup.flushSeen(2)).toBe(1);
    expect(lookup.flushSeen(2)).toBe(0);
    expect(sizes).toEqual([2, 2, 1]);
    for (let i = 1; i <= 5; i++) expect(lastSeen(ip(`10.0.1.${i}`))).toBe(T0 + 1000);
  });

  it('records a MAC session found by fallback', () => {
    portal.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'carol', source: 'registration' });
    clock.advance(5000);
    ask('10.0.0.9', 'AA-BB-CC-DD-EE-FF');
    lookup.flushSeen();
    expect(lastSeen(mac('aa:bb:cc:dd:ee:ff'))).toBe(T0 + 5000);
  });

  it("never touches the session that replaced the one looked up (the old id's write is a no-op)", () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    clock.set(T0 + 5000);
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    clock.set(T0 + 10_000);
    const bob = portal.start({ key: ip('10.0.0.5'), username: 'bob', source: 'portal' });
    clock.set(T0 + 20_000);
    lookup.flushSeen();
    expect(store.find(ip('10.0.0.5'))).toMatchObject({ id: bob.id, username: 'bob', lastSeen: T0 + 10_000 });

    expect(ask('10.0.0.5')).toBe('OK user=bob');
    lookup.flushSeen();
    expect(lastSeen(ip('10.0.0.5'))).toBe(T0 + 20_000);
  });

  it('does not record an expired cached session', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', expiresAt: T0 + 1000 });
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    lookup.flushSeen();
    const touch = vi.spyOn(store, 'touch');
    clock.set(T0 + 2000);
    expect(ask('10.0.0.5')).toBe('ERR');
    lookup.flushSeen();
    expect(touch).not.toHaveBeenCalled();
  });
});

describe('idle limit and hard expiry', () => {
  const MINUTE = 60_000;
  /** Another helper process: its own DB handle, store and lookup, on the same clock. */
  function otherHelper(): { lookup: SessionLookup; ask: (src: string) => string } {
    const db = openDatabase(join(dir, 'doorman.db'));
    handles.push(db);
    const other = new SessionLookup(new SessionStore(db, clock), clock);
    return {
      lookup: other,
      ask: (src) => {
        other.refresh();
        return line(other.handle(request(src)));
      },
    };
  }

  it('neither: a session without limits is never refused by time', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    clock.advance(400 * 86_400_000);
    expect(ask('10.0.0.5')).toBe('OK user=alice');
  });

  it('idle: counted from the login when nothing was seen; OK at exactly the limit, ERR past it', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', idleTimeoutMs: MINUTE });
    clock.set(T0 + MINUTE);
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    portal.start({ key: ip('10.0.0.6'), username: 'bob', source: 'api', idleTimeoutMs: MINUTE });
    clock.set(T0 + 2 * MINUTE + 1);
    expect(ask('10.0.0.6')).toBe('ERR');
  });

  it("idle: each answer moves the limit on; the helper's own answers count after it flushed them too", () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', idleTimeoutMs: MINUTE });
    const find = vi.spyOn(store, 'find');
    for (let t = 50_000; t <= 500_000; t += 50_000) {
      clock.set(T0 + t);
      expect(ask('10.0.0.5'), `at ${t} ms`).toBe('OK user=alice');
      lookup.flushSeen();
    }
    // Its own flushes do not change data_version: the row was read once, with last_seen = login time.
    expect(find).toHaveBeenCalledTimes(1);
    clock.set(T0 + 500_000 + MINUTE);
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    clock.set(T0 + 500_000 + 2 * MINUTE + 1);
    expect(ask('10.0.0.5')).toBe('ERR');
  });

  it("idle: another helper process's answers count once it has flushed them (the flush interval is the granularity)", () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', idleTimeoutMs: MINUTE });
    const other = otherHelper();
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    clock.set(T0 + 50_000);
    expect(other.ask('10.0.0.5')).toBe('OK user=alice');
    clock.set(T0 + MINUTE + 1);
    // Not flushed yet: this process knows only the login time.
    expect(ask('10.0.0.5')).toBe('ERR');
    other.lookup.flushSeen();
    expect(ask('10.0.0.5')).toBe('OK user=alice');
  });

  it('idle: an expired session is not brought back by traffic that arrives afterwards', () => {
    const alice = portal.start({
      key: ip('10.0.0.5'),
      username: 'alice',
      source: 'api',
      idleTimeoutMs: MINUTE,
    });
    const other = otherHelper();
    clock.set(T0 + 30_000);
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    lookup.flushSeen();
    const touch = vi.spyOn(store, 'touch');
    for (let t = 30_000 + MINUTE + 1; t < 30_000 + 10 * MINUTE; t += 1000) {
      clock.set(T0 + t);
      expect(ask('10.0.0.5'), `at ${t} ms`).toBe('ERR');
      expect(other.ask('10.0.0.5'), `other helper at ${t} ms`).toBe('ERR');
      lookup.flushSeen();
      other.lookup.flushSeen();
    }
    expect(touch).not.toHaveBeenCalled();
    expect(store.find(ip('10.0.0.5'))).toMatchObject({ id: alice.id, lastSeen: T0 + 30_000 });
    // Whatever else is committed meanwhile (the helpers read the row again), it stays ended.
    portal.start({ key: ip('10.0.0.6'), username: 'bob', source: 'api' });
    expect(ask('10.0.0.5')).toBe('ERR');
    expect(other.ask('10.0.0.5')).toBe('ERR');
    // A new login on the address is a new session.
    portal.start({ key: ip('10.0.0.5'), username: 'carol', source: 'api', idleTimeoutMs: MINUTE });
    expect(ask('10.0.0.5')).toBe('OK user=carol');
  });

  it('both: traffic keeps the idle limit from ending the session, but not past its hard expiry', () => {
    portal.start({
      key: ip('10.0.0.5'),
      username: 'alice',
      source: 'api',
      idleTimeoutMs: MINUTE,
      expiresAt: T0 + 5 * MINUTE,
    });
    for (let t = 0; t < 5 * MINUTE; t += 10_000) {
      clock.set(T0 + t);
      expect(ask('10.0.0.5'), `at ${t} ms`).toBe('OK user=alice');
    }
    clock.set(T0 + 5 * MINUTE - 1);
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    clock.set(T0 + 5 * MINUTE);
    expect(ask('10.0.0.5')).toBe('ERR');
  });

  it('both: without traffic the idle limit ends the session before its hard expiry', () => {
    portal.start({
      key: ip('10.0.0.5'),
      username: 'alice',
      source: 'api',
      idleTimeoutMs: MINUTE,
      expiresAt: T0 + 60 * MINUTE,
    });
    clock.set(T0 + 30_000);
    expect(ask('10.0.0.5')).toBe('OK user=alice');
    clock.set(T0 + 30_000 + MINUTE + 1);
    expect(ask('10.0.0.5')).toBe('ERR');
  });

  it('an idle IP session gives way to a live MAC session of the same client', () => {
    portal.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', idleTimeoutMs: MINUTE });
    portal.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'carol', source: 'registration' });
    expect(ask('10.0.0.5', 'aa:bb:cc:dd:ee:ff')).toBe('OK user=alice');
    clock.set(T0 + 2 * MINUTE);
    expect(ask('10.0.0.5', 'aa:bb:cc:dd:ee:ff')).toBe('OK user=carol');
  });
});

describe("%>eui as Squid 5.7 sends it (the lab's lines)", () => {
  const macLookups = (find: { mock: { calls: unknown[][] } }) =>
    find.mock.calls
      .filter(([key]) => (key as SessionKey).kind === 'mac')
      .map(([key]) => (key as SessionKey).value);

  it('an on-link IPv4 client: its real MAC finds the registration; a routed one (all zeros) does not', () => {
    portal.start({ key: mac('3a:48:7a:63:96:26'), username: 'carol', source: 'registration' });
    expect(ask('10.0.0.2', '3a:48:7a:63:96:26')).toBe('OK user=carol');
    expect(ask('10.0.0.3', '00:00:00:00:00:00')).toBe('ERR');
  });

  it('all-zero values mean "no MAC": never looked up, even if such a key were stored', () => {
    portal.start({ key: mac('00:00:00:00:00:00'), username: 'nobody', source: 'registration' });
    const find = vi.spyOn(store, 'find');
    expect(ask('10.0.0.3', '00:00:00:00:00:00')).toBe('ERR');
    expect(ask('10.0.0.3', '00-00-00-00-00-00')).toBe('ERR');
    expect(ask('fd91::2', '00-00-00-00-00-00-00-00')).toBe('ERR');
    expect(macLookups(find)).toEqual([]);
  });

  it("an IPv6 client's EUI-64 is not a MAC: never looked up (its registration is found by the address binding)", () => {
    // SLAAC address of MAC ae:bf:73:0d:2f:93: Squid sends the interface id, U/L bit not flipped back.
    portal.start({ key: mac('ae:bf:73:0d:2f:93'), username: 'erin', source: 'registration' });
    portal.start({ key: mac('ac:bf:73:0d:2f:93'), username: 'wrong', source: 'registration' });
    const find = vi.spyOn(store, 'find');
    expect(ask('fd91::acbf:73ff:fe0d:2f93', 'ac-bf-73-ff-fe-0d-2f-93')).toBe('ERR');
    expect(ask('fd91::acbf:73ff:fe0d:2f93', 'AC:BF:73:FF:FE:0D:2F:93')).toBe('ERR');
    expect(macLookups(find)).toEqual([]);
    portal.start({ key: ip('fd91::acbf:73ff:fe0d:2f93'), username: 'erin', source: 'registration' });
    expect(ask('fd91::acbf:73ff:fe0d:2f93', 'ac-bf-73-ff-fe-0d-2f-93')).toBe('OK user=erin');
  });

  it('a real MAC in dash form is normalised; group addresses are never looked up', () => {
    portal.start({ key: mac('3a:48:7a:63:96:26'), username: 'carol', source: 'registration' });
    expect(ask('10.0.0.2', '3A-48-7A-63-96-26')).toBe('OK user=carol');
    const find = vi.spyOn(store, 'find');
    for (const group of ['ff:ff:ff:ff:ff:ff', '01:00:5e:00:00:01', '33-33-00-00-00-01']) {
      expect(ask('10.0.0.2', group), group).toBe('ERR');
    }
    expect(macLookups(find)).toEqual([]);
  });
});

describe('portal sessions: idle, hard and date limits as the splash page sets them', () => {
  const MINUTE = 60_000;
  const settings = {
    ...DEFAULT_PORTAL_SETTINGS,
    idleTimeoutMinutes: 10,
    hardTimeoutMinutes: 60,
    registrationClearDate: '2026-01-03',
  };

  /** The registration's end as the splash page computes it; these settings have one. */
  const clearAt = (s: Pick<typeof settings, 'registrationClearDate'>): number => {
    const at = registrationExpiry(s, T0);
    if (at === undefined) throw new Error('no clear date');
    return at;
  };

  /** ERR from `at` on, whatever traffic comes: each refused lookup is no "last seen". */
  function staysEnded(src: string, eui: string, at: number): void {
    for (let t = at; t < at + 3 * 60 * MINUTE; t += 7 * MINUTE) {
      clock.set(t);
      expect(ask(src, eui), `at +${t - at} ms`).toBe('ERR');
      lookup.flushSeen();
    }
    expect(store.list().find((s) => s.key.value === src)?.lastSeen ?? 0).toBeLessThan(at);
  }

  it.each(['portal', 'agreement'] as const)(
    '%s: idle timeout, OK just before, ERR just after, never revived',
    (source) => {
      portal.start({ key: ip('10.0.0.5'), username: 'alice', source, ...portalSessionLimits(settings, T0) });
      clock.set(T0 + 4 * MINUTE);
      expect(ask('10.0.0.5')).toBe('OK user=alice');
      lookup.flushSeen();
      clock.set(T0 + 14 * MINUTE);
      expect(ask('10.0.0.5')).toBe('OK user=alice');
      clock.set(T0 + 24 * MINUTE + 1);
      expect(ask('10.0.0.5')).toBe('ERR');
      staysEnded('10.0.0.5', '-', T0 + 24 * MINUTE + 1);
    },
  );

  it.each(['portal', 'agreement'] as const)(
    '%s: hard timeout despite traffic, ERR at the instant, never revived',
    (source) => {
      portal.start({ key: ip('10.0.0.5'), username: 'alice', source, ...portalSessionLimits(settings, T0) });
      for (let t = 0; t < 60 * MINUTE; t += 5 * MINUTE) {
        clock.set(T0 + t);
        expect(ask('10.0.0.5'), `at ${t} ms`).toBe('OK user=alice');
        lookup.flushSeen();
      }
      clock.set(T0 + 60 * MINUTE - 1);
      expect(ask('10.0.0.5')).toBe('OK user=alice');
      clock.set(T0 + 60 * MINUTE);
      expect(ask('10.0.0.5')).toBe('ERR');
      staysEnded('10.0.0.5', '-', T0 + 60 * MINUTE);
    },
  );

  it('registration: the clear date ends it at 00:00 server local time, even if nobody removed it', () => {
    const midnight = new Date(2026, 0, 3).getTime();
    const expiresAt = clearAt(settings);
    expect(expiresAt).toBe(midnight);
    portal.start({ key: mac('3a:48:7a:63:96:26'), username: 'carol', source: 'registration', expiresAt });
    clock.set(midnight - 1);
    expect(ask('10.0.0.2', '3a:48:7a:63:96:26')).toBe('OK user=carol');
    clock.set(midnight);
    expect(ask('10.0.0.2', '3a:48:7a:63:96:26')).toBe('ERR');
    expect(store.find(mac('3a:48:7a:63:96:26'))).toBeUndefined();
    staysEnded('10.0.0.2', '3a:48:7a:63:96:26', midnight);
  });

  it("registration: an address binding's idle limit (60 min when none is set), and the date ends it too", () => {
    const midnight = new Date(2026, 0, 3).getTime();
    const none = { ...settings, idleTimeoutMinutes: null };
    portal.start({
      key: ip('fd00::5'),
      username: 'carol',
      source: 'registration',
      expiresAt: clearAt(none),
      idleTimeoutMs: bindingIdleMs(none),
    });
    clock.set(T0 + 60 * MINUTE);
    expect(ask('fd00::5')).toBe('OK user=carol');
    clock.set(T0 + 120 * MINUTE + 1);
    expect(ask('fd00::5')).toBe('ERR');
    staysEnded('fd00::5', '-', T0 + 120 * MINUTE + 1);

    clock.set(midnight - 3 * 60 * MINUTE);
    portal.start({
      key: ip('fd00::6'),
      username: 'carol',
      source: 'registration',
      expiresAt: clearAt(none),
      idleTimeoutMs: bindingIdleMs(none),
    });
    for (let t = midnight - 3 * 60 * MINUTE; t < midnight; t += 20 * MINUTE) {
      clock.set(t);
      expect(ask('fd00::6')).toBe('OK user=carol');
    }
    clock.set(midnight - 1);
    expect(ask('fd00::6')).toBe('OK user=carol');
    clock.set(midnight);
    expect(ask('fd00::6')).toBe('ERR');
  });
});

describe('address bindings follow the device, not the address (issue 13)', () => {
  const MINUTE = 60_000;
  const CAROL = '3a:48:7a:63:96:26';
  const NEWCOMER = '3a:48:7a:00:00:99';
  /** A registration and its binding on `address`, made as the ICAP decision makes them, idle timeout 1 min. */
  function bound(address: string): void {
    const registration = portal.start({ key: mac(CAROL), username: 'carol', source: 'registration' });
    portal.start(
      addressBinding(registration, address, { ...DEFAULT_PORTAL_SETTINGS, idleTimeoutMinutes: 1 }),
    );
  }

  it('is refused when Squid names another device on the address; kept for its own MAC or when Squid has none', () => {
    bound('10.0.0.2');
    expect(ask('10.0.0.2', CAROL)).toBe('OK user=carol');
    expect(ask('10.0.0.2', '00:00:00:00:00:00')).toBe('OK user=carol');
    expect(ask('10.0.0.2', '-')).toBe('OK user=carol');
    expect(ask('10.0.0.2', NEWCOMER)).toBe('ERR');
    expect(ask('10.0.0.2', NEWCOMER.toUpperCase().replaceAll(':', '-'))).toBe('ERR');
    // The newcomer's own registration names it.
    portal.start({ key: mac(NEWCOMER), username: 'dave', source: 'registration' });
    expect(ask('10.0.0.2', NEWCOMER)).toBe('OK user=dave');
  });

  it("ends one idle timeout after it was made, however much traffic the address's holder sends", () => {
    bound('10.0.0.2');
    for (let t = 0; t < MINUTE; t += 10_000) {
      clock.set(T0 + t);
      expect(ask('10.0.0.2', '-'), `at +${t} ms`).toBe('OK user=carol');
      lookup.flushSeen();
    }
    clock.set(T0 + MINUTE);
    expect(ask('10.0.0.2', '-')).toBe('ERR');
    clock.set(T0 + 2.5 * MINUTE);
    expect(ask('10.0.0.2', '-')).toBe('ERR');
  });

  it('a binding from before schema 6 (no MAC) still names its user', () => {
    portal.start({ key: ip('fd00::5'), username: 'carol', source: 'registration', idleTimeoutMs: MINUTE });
    expect(ask('fd00::5', NEWCOMER)).toBe('OK user=carol');
  });
});
