import { describe, expect, it } from 'vitest';
import {
  changedFields,
  CidrSet,
  clearDateProblem,
  DEFAULT_PORTAL_SETTINGS,
  isCalendarDate,
  localDate,
  MAX_GROUP_CIDRS,
  MAX_POLICY_LENGTH,
  MAX_TIMEOUT_MINUTES,
  MAX_WALLED_CIDRS,
  MAX_WALLED_HOSTS,
  normaliseCidr,
  normaliseWalledHost,
  parseDeviceGroup,
  parsePortalSettings,
  walledHostMatches,
  type PortalSettings,
} from '../../../../lib/portal/settings.ts';

const VALID: PortalSettings = {
  mode: 'authentication',
  idleTimeoutMinutes: 30,
  hardTimeoutMinutes: 600,
  registrationClearDate: '2026-07-01',
  policyText: 'Be kind.\nNo torrents.\r\n\tThanks.',
  walledGarden: { hosts: ['example.com', '*.apple.com'], cidrs: ['10.0.0.0/8', '2001:db8::/32'] },
};

/** The problems for VALID with `change` applied, as field → message. */
function problems(change: Record<string, unknown>): Record<string, string> {
  const result = parsePortalSettings({ ...VALID, ...change });
  if (result.ok) throw new Error(`expected problems for ${JSON.stringify(change)}`);
  return Object.fromEntries(result.problems.map((p) => [p.field, p.message]));
}

describe('parsePortalSettings', () => {
  it('accepts the defaults and a full valid set, unchanged', () => {
    expect(parsePortalSettings(DEFAULT_PORTAL_SETTINGS)).toEqual({
      ok: true,
      settings: DEFAULT_PORTAL_SETTINGS,
    });
    expect(parsePortalSettings(VALID)).toEqual({ ok: true, settings: VALID });
    expect(DEFAULT_PORTAL_SETTINGS).toEqual({
      mode: 'off',
      idleTimeoutMinutes: 60,
      hardTimeoutMinutes: 480,
      registrationClearDate: null,
      policyText: '',
      walledGarden: { hosts: [], cidrs: [] },
    });
    expect(Object.isFrozen(DEFAULT_PORTAL_SETTINGS.walledGarden.hosts)).toBe(true);
  });

  it.each(['off', 'agreement', 'authentication', 'registration'])('accepts mode %s', (mode) => {
    expect(parsePortalSettings({ ...VALID, mode }).ok).toBe(true);
  });

  it('refuses an unknown mode, naming the value and the choices', () => {
    expect(problems({ mode: 'guest' })).toEqual({
      mode: 'must be one of off, agreement, authentication, registration (given: "guest")',
    });
  });

  it.each([
    [1, true],
    [MAX_TIMEOUT_MINUTES, true],
    [null, true],
    [0, false],
    [MAX_TIMEOUT_MINUTES + 1, false],
    [1.5, false],
    [-5, false],
    ['60', false],
    [Number.NaN, false],
  ])('timeouts: %s accepted: %s', (value, ok) => {
    for (const field of ['idleTimeoutMinutes', 'hardTimeoutMinutes']) {
      const result = parsePortalSettings({ ...VALID, [field]: value });
      expect(result.ok, field).toBe(ok);
      if (!result.ok) {
        expect(result.problems).toHaveLength(1);
        expect(result.problems[0]?.field).toBe(field);
        expect(result.problems[0]?.message).toMatch(/minute/);
      }
    }
  });

  it('names the value given for a bad timeout', () => {
    expect(problems({ idleTimeoutMinutes: 0, hardTimeoutMinutes: 525601 })).toEqual({
      idleTimeoutMinutes: 'must be at least 1 minute (null for none) (given: 0)',
      hardTimeoutMinutes: 'must be at most 525600 minutes (one year), or null for none (given: 525601)',
    });
  });

  it.each([
    '2026-02-30',
    '2026-13-01',
    '26-01-01',
    '2026-1-1',
    '1969-12-31',
    '2026-01-01T00:00',
    '',
    'tomorrow',
  ])('refuses the clear date %j', (date) => {
    expect(problems({ registrationClearDate: date }).registrationClearDate).toMatch(
      /must be a date YYYY-MM-DD/,
    );
  });

  it('accepts a leap day and null as the clear date', () => {
    expect(parsePortalSettings({ ...VALID, registrationClearDate: '2028-02-29' }).ok).toBe(true);
    expect(parsePortalSettings({ ...VALID, registrationClearDate: null }).ok).toBe(true);
    expect(isCalendarDate('2027-02-29')).toBe(false);
  });

  it('policy text: up to 20,000 characters of plain text; required in the agreement mode', () => {
    expect(parsePortalSettings({ ...VALID, policyText: 'x'.repeat(MAX_POLICY_LENGTH) }).ok).toBe(true);
    expect(problems({ policyText: 'x'.repeat(MAX_POLICY_LENGTH + 1) }).policyText).toMatch(
      /^must be at most 20000 characters \(given: "x{64}…"\)$/,
    );
    expect(problems({ policyText: 'a\u0000b' }).policyText).toMatch(/no control characters/);
    expect(problems({ policyText: '\u001b[31mred' }).policyText).toMatch(/no control characters/);
    expect(problems({ mode: 'agreement', policyText: ' \n ' }).policyText).toMatch(
      /is required in the agreement mode/,
    );
    expect(parsePortalSettings({ ...VALID, mode: 'agreement' }).ok).toBe(true);
    expect(parsePortalSettings({ ...VALID, mode: 'registration', policyText: '' }).ok).toBe(true);
  });

  it('the agreement-mode policy check is listed with the other problems', () => {
    expect(
      Object.keys(problems({ mode: 'agreement', policyText: '', idleTimeoutMinutes: 0 })).sort(),
    ).toEqual(['idleTimeoutMinutes', 'policyText']);
  });

  it('walled-garden hosts: lower-cased, *.suffix allowed, duplicates dropped; bad ones named', () => {
    const ok = parsePortalSettings({
      ...VALID,
      walledGarden: { hosts: ['Example.COM', '*.Apple.com', 'example.com'], cidrs: [] },
    });
    expect(ok.ok && ok.settings.walledGarden.hosts).toEqual(['example.com', '*.apple.com']);
    const bad = ['bad_host', '10.0.0.1', '*.', '*', 'a..b', '-a.com', `${'a'.repeat(64)}.com`, 'a.com.', ''];
    const result = problems({ walledGarden: { hosts: bad, cidrs: [] } });
    expect(Object.keys(result)).toEqual(bad.map((_, i) => `walledGarden.hosts.${i}`));
    expect(result['walledGarden.hosts.0']).toBe('"bad_host" is not a host name or *.domain');
  });

  it('walled-garden hosts: at most 200, each at most 253 characters', () => {
    const label = 'a'.repeat(63);
    const longest = [label, label, label, 'a'.repeat(61)].join('.'); // 253
    expect(longest).toHaveLength(253);
    expect(normaliseWalledHost(longest)).toBe(longest);
    expect(normaliseWalledHost(`b${longest}`)).toBeUndefined();
    const many = Array.from({ length: MAX_WALLED_HOSTS }, (_, i) => `h${i}.example.com`);
    expect(parsePortalSettings({ ...VALID, walledGarden: { hosts: many, cidrs: [] } }).ok).toBe(true);
    expect(
      problems({ walledGarden: { hosts: [...many, 'x.example.com'], cidrs: [] } })['walledGarden.hosts'],
    ).toMatch(/^must have at most 200 entries/);
  });

  it('walled-garden CIDRs: normalised, at most 500; bad ones named', () => {
    const ok = parsePortalSettings({
      ...VALID,
      walledGarden: { hosts: [], cidrs: ['10.1.2.3/8', '10.0.0.0/8', '2001:DB8::/32', '192.0.2.1'] },
    });
    expect(ok.ok && ok.settings.walledGarden.cidrs).toEqual(['10.0.0.0/8', '2001:db8::/32', '192.0.2.1/32']);
    const many = Array.from({ length: MAX_WALLED_CIDRS + 1 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`);
    expect(problems({ walledGarden: { hosts: [], cidrs: many } })['walledGarden.cidrs']).toMatch(
      /^must have at most 500 entries/,
    );
    expect(problems({ walledGarden: { hosts: [], cidrs: ['10.0.0.0/33'] } })).toEqual({
      'walledGarden.cidrs.0':
        '"10.0.0.0/33" is not an IPv4 or IPv6 address or network (e.g. 10.0.0.0/8, 2001:db8::/32)',
    });
  });

  it('lists every problem at once, unknown and missing fields included', () => {
    const result = parsePortalSettings({
      mode: 'x',
      policyText: 5,
      walledGarden: { hosts: 'a.com', extra: 1 },
      bogus: 1,
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(Object.fromEntries(result.problems.map((p) => [p.field, p.message]))).toEqual({
      mode: 'must be one of off, agreement, authentication, registration (given: "x")',
      idleTimeoutMinutes: 'must be a whole number of minutes from 1 to 525600, or null for none (missing)',
      hardTimeoutMinutes: 'must be a whole number of minutes from 1 to 525600, or null for none (missing)',
      registrationClearDate: 'must be a date YYYY-MM-DD, or null for never (missing)',
      policyText: "must be text ('' for none) (given: 5)",
      'walledGarden.hosts': 'must be a list (given: "a.com")',
      'walledGarden.cidrs': 'must be a list (missing)',
      'walledGarden.extra': 'is not a portal setting',
      bogus: 'is not a portal setting',
    });
    expect(parsePortalSettings(null)).toMatchObject({ ok: false });
  });

  it('changedFields names the fields that differ', () => {
    expect(changedFields(VALID, VALID)).toEqual([]);
    expect(
      changedFields(VALID, { ...VALID, mode: 'off', walledGarden: { ...VALID.walledGarden, cidrs: [] } }),
    ).toEqual(['mode', 'walledGarden']);
  });
});

describe('clear date in the future', () => {
  it('a new or changed date must be after today; a stored one that has passed is kept', () => {
    expect(clearDateProblem('2026-03-02', null, '2026-03-01')).toBeUndefined();
    expect(clearDateProblem('2026-03-01', null, '2026-03-01')).toEqual({
      field: 'registrationClearDate',
      message: '"2026-03-01" is not in the future (today is 2026-03-01, server local time)',
    });
    expect(clearDateProblem('2025-01-01', '2026-06-01', '2026-03-01')?.field).toBe('registrationClearDate');
    expect(clearDateProblem('2025-01-01', '2025-01-01', '2026-03-01')).toBeUndefined();
    expect(clearDateProblem(null, '2025-01-01', '2026-03-01')).toBeUndefined();
  });

  it('localDate is the server-local calendar date', () => {
    const d = new Date(2026, 4, 7, 23, 59);
    expect(localDate(d.getTime())).toBe('2026-05-07');
  });
});

describe('CIDRs', () => {
  it.each([
    ['10.1.2.3/8', '10.0.0.0/8'],
    ['10.0.0.5', '10.0.0.5/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['2001:DB8:0:0::1/32', '2001:db8::/32'],
    ['2001:db8::1', '2001:db8::1/128'],
    ['::/0', '::/0'],
    ['::ffff:10.1.0.0/112', '10.1.0.0/16'],
    ['::ffff:10.0.0.1', '10.0.0.1/32'],
    ['::ffff:0:0/95', '::fffe:0:0/95'],
    ['fe80::1:2:3:4/64', 'fe80::/64'],
  ])('%s is written %s', (input, written) => {
    expect(normaliseCidr(input)).toBe(written);
  });

  it.each([
    '10.0.0.0/33',
    '2001:db8::/129',
    '10.0.0.0/08',
    '10.0.0.0/',
    '10.0.0.0/-1',
    '10.0.0/8',
    '010.0.0.1',
    'fe80::1%eth0/64',
    'example.com/8',
    '10.0.0.0/8/8',
    ' 10.0.0.0/8',
    '',
    `${'1'.repeat(50)}`,
  ])('%j is not a CIDR', (input) => {
    expect(normaliseCidr(input)).toBeUndefined();
  });

  it('CidrSet matches IPv4, IPv6 and IPv4-mapped IPv6 by network', () => {
    const set = new CidrSet(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32', 'fe80::/10', 'not a cidr']);
    for (const ip of [
      '10.0.0.0',
      '10.255.255.255',
      '::ffff:10.1.2.3',
      '::FFFF:a01:203',
      '192.168.1.7',
      '2001:db8:ffff::1',
      'fe80::1',
      'febf::1',
    ]) {
      expect(set.has(ip), ip).toBe(true);
    }
    for (const ip of [
      '11.0.0.0',
      '9.255.255.255',
      '192.168.1.8',
      '2001:db9::',
      'fec0::1',
      '::a00:1',
      'junk',
      '',
      '10.0.0.1/8',
    ]) {
      expect(set.has(ip), ip).toBe(false);
    }
  });

  it('CidrSet skips what is not text (networks read from a database other boxes write), never throws', () => {
    const set = new CidrSet(['10.0.0.0/8', 5, null, { a: 1 }] as unknown as string[]);
    expect(set.has('10.1.2.3')).toBe(true);
    expect(set.has('192.0.2.1')).toBe(false);
  });

  it('CidrSet: /0 holds every address of its family only; an empty set holds none', () => {
    const v4 = new CidrSet(['0.0.0.0/0']);
    expect(v4.has('203.0.113.9')).toBe(true);
    expect(v4.has('::ffff:203.0.113.9')).toBe(true);
    expect(v4.has('2001:db8::1')).toBe(false);
    expect(new CidrSet(['::/0']).has('2001:db8::1')).toBe(true);
    expect(new CidrSet(['::/0']).has('10.0.0.1')).toBe(false);
    expect(new CidrSet([]).has('10.0.0.1')).toBe(false);
  });

  it('CidrSet: a mapped network written as IPv6 matches IPv4 clients', () => {
    expect(new CidrSet(['::ffff:10.1.0.0/112']).has('10.1.200.3')).toBe(true);
    expect(new CidrSet(['::ffff:10.1.0.0/112']).has('10.2.0.1')).toBe(false);
  });
});

describe('walledHostMatches', () => {
  const entries = ['example.com', '*.apple.com'];
  it.each([
    ['example.com', true],
    ['EXAMPLE.com.', true],
    ['www.example.com', false],
    ['captive.apple.com', true],
    ['a.b.apple.com', true],
    ['apple.com', false],
    ['evilapple.com', false],
    ['.apple.com', false],
  ])('%s: %s', (host, match) => {
    expect(walledHostMatches(host, entries)).toBe(match);
  });
});

describe('parseDeviceGroup', () => {
  it('accepts a group, normalising its CIDRs', () => {
    expect(
      parseDeviceGroup({ name: 'Lab 2 (ÉTÉ)', cidrs: ['10.1.2.3/16', '10.1.0.0/16'], active: true }),
    ).toEqual({
      ok: true,
      group: { name: 'Lab 2 (ÉTÉ)', cidrs: ['10.1.0.0/16'], active: true },
    });
  });

  it('names every bad field', () => {
    const result = parseDeviceGroup({ name: 'a\tb', cidrs: [], active: 'yes', id: 3 });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(Object.fromEntries(result.problems.map((p) => [p.field, p.message]))).toEqual({
      name: 'must not contain control characters (given: "a\\tb")',
      cidrs: 'must have at least one entry (given: [])',
      active: 'must be true or false (given: "yes")',
      id: 'is not a Device Group field',
    });
  });

  it('names: 1-64 characters (not UTF-16 units), no leading or trailing white space', () => {
    const ok = (name: string) => parseDeviceGroup({ name, cidrs: ['10.0.0.0/8'], active: true }).ok;
    expect(ok('x'.repeat(64))).toBe(true);
    expect(ok('😀'.repeat(64))).toBe(true);
    expect(ok('x'.repeat(65))).toBe(false);
    expect(ok('')).toBe(false);
    expect(ok(' lab')).toBe(false);
    expect(ok('lab ')).toBe(false);
    expect(ok('a\u0085b')).toBe(false);
  });

  it('at most 1000 CIDRs', () => {
    const many = Array.from({ length: MAX_GROUP_CIDRS + 1 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`);
    expect(parseDeviceGroup({ name: 'n', cidrs: many.slice(0, MAX_GROUP_CIDRS), active: true }).ok).toBe(
      true,
    );
    const result = parseDeviceGroup({ name: 'n', cidrs: many, active: true });
    expect(!result.ok && result.problems[0]?.message).toMatch(/^must have at most 1000 entries/);
  });
});
