import { describe, expect, it } from 'vitest';
import { settingsChanges } from '../../../../lib/audit/changes.ts';
import { auditDetail, auditJsonLine, auditRecord, DETAIL_JSON_MAX } from '../../../../lib/audit/event.ts';
import { expiryOf } from '../../../../lib/audit/expiry.ts';
import { syslogDatagram } from '../../../../lib/audit/syslog-format.ts';

describe('auditDetail', () => {
  it('redacts every field whose name says secret, at any depth it keeps', () => {
    const detail = auditDetail({
      password: 'p1',
      bindPassword: 'p2',
      adminPassword: 'p3',
      api_key: 'k1',
      apiKey: 'k2',
      key: 'k3',
      token: 't1',
      csrfToken: 't2',
      ticket: 'x1',
      keytab: 'x2',
      secret_hash: 'h1',
      nested: { passphrase: 'p4', fine: 'ok' },
      name: 'wifi',
    });
    expect(JSON.stringify(detail)).not.toMatch(/p[1-4]|k[1-3]|t[12]|x[12]|h1/);
    expect(detail).toMatchObject({ name: 'wifi', nested: { fine: 'ok', passphrase: '[redacted]' } });
  });

  it('caps strings, keys, depth and the whole', () => {
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${i}`, 'v'.repeat(1000)]));
    const detail = auditDetail(many);
    expect(JSON.stringify(detail).length).toBeLessThanOrEqual(DETAIL_JSON_MAX);
    expect(detail['truncated']).toBe(true);
    expect(auditDetail({ a: { b: { c: { d: 1 } } } })).toEqual({ a: { b: { c: '{…}' } } });
    expect((auditDetail({ s: 'x'.repeat(1000) })['s'] as string).length).toBe(256);
  });

  it('keeps the first 32 own keys, in order, and never an inherited one', () => {
    const small = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i]));
    expect(Object.keys(auditDetail(small))).toEqual(Array.from({ length: 32 }, (_, i) => `k${i}`));
    const inherited = Object.assign(Object.create({ leaked: 'x' }) as Record<string, unknown>, { own: 1 });
    expect(auditDetail(inherited)).toEqual({ own: 1 });
  });

  it('keeps a two-key detail whole without measuring it: the worst two keys fit (every character escaped)', () => {
    const worst = '\u0001'.repeat(1000);
    const detail = auditDetail({ [`a${worst}`]: worst, [`b${worst}`]: worst });
    expect(Object.keys(detail)).toHaveLength(2);
    expect(detail['truncated']).toBeUndefined();
    expect(JSON.stringify(detail).length).toBeLessThanOrEqual(DETAIL_JSON_MAX);
    // Three such keys do not fit: measured, and cut.
    const three = auditDetail({ [`a${worst}`]: worst, [`b${worst}`]: worst, [`c${worst}`]: worst });
    expect(three['truncated']).toBe(true);
    expect(JSON.stringify(three).length).toBeLessThanOrEqual(DETAIL_JSON_MAX);
  });
});

describe('settingsChanges', () => {
  it('names each changed field with its old and new value, nested ones with dots; secrets only as changed', () => {
    expect(
      settingsChanges(
        { mode: 'off', idle: 30, same: [1], tls: { ca: 'a', bindPassword: 'old' } },
        { mode: 'agreement', idle: 30, same: [1], tls: { ca: 'b', bindPassword: 'new' }, added: true },
      ),
    ).toEqual({
      mode: { from: 'off', to: 'agreement' },
      'tls.ca': { from: 'a', to: 'b' },
      'tls.bindPassword': { from: '[redacted]', to: '[redacted]' },
      added: { from: null, to: true },
    });
    expect(settingsChanges(undefined, { a: 1 })).toEqual({ a: { from: null, to: 1 } });
    expect(settingsChanges({ bindDn: 'x' }, { bindDn: 'y' }, ['bindDn'])).toEqual({
      bindDn: { from: '[redacted]', to: '[redacted]' },
    });
  });
});

describe('expiryOf', () => {
  const base = {
    id: 1,
    key: { kind: 'ip' as const, value: '10.0.0.1' },
    username: 'u',
    source: 'api' as const,
    createdAt: 0,
    lastSeen: 1000,
  };
  it('whichever end came first: idle from the last sighting, the hard end, a registration date', () => {
    expect(expiryOf({ ...base, expiresAt: 5000, idleTimeoutMs: 1000 })).toEqual({ reason: 'idle', at: 2000 });
    expect(expiryOf({ ...base, expiresAt: 1500, idleTimeoutMs: 1000 })).toEqual({ reason: 'hard', at: 1500 });
    const registration = { ...base, key: { kind: 'mac' as const, value: 'aa:bb:cc:dd:ee:ff' } };
    expect(
      expiryOf({ ...registration, source: 'registration', expiresAt: 9, idleTimeoutMs: undefined }),
    ).toEqual({
      reason: 'date',
      at: 9,
    });
  });
});

describe('the JSON line and the syslog datagram', () => {
  const record = auditRecord(
    { kind: 'api.login', actor: 'api-key:wifi', user: 'alice', address: '10.0.0.5' },
    Date.UTC(2026, 10, 27, 4, 0, 0),
    'proxy1',
  );
  it('one line of JSON, time in UTC, absent fields left out', () => {
    const line = auditJsonLine(record);
    expect(line).toBe(
      '{"at":"2026-11-27T04:00:00.000Z","box":"proxy1","kind":"api.login","actor":"api-key:wifi","user":"alice","address":"10.0.0.5"}',
    );
    expect(auditJsonLine({ ...record, user: 'a\nb' })).not.toContain('\n');
  });
  it('a datagram as glibc syslog(3) sends it: authpriv.info, date, tag[pid], the JSON', () => {
    const at = new Date(2026, 10, 7, 4, 5, 6);
    expect(syslogDatagram(record, 42, at)).toBe(
      `<86>Nov  7 04:05:06 doorman-audit[42]: ${auditJsonLine(record)}`,
    );
  });
});
