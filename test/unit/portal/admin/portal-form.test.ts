import { describe, expect, it } from 'vitest';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../lib/portal/settings.ts';
import { groupFormProblems, readDeviceGroupForm } from '../../../../portal/admin/device-group-form.ts';
import { linesOf } from '../../../../portal/admin/lines.ts';
import { portalFormProblems, readPortalForm } from '../../../../portal/admin/portal-form.ts';
import { describeChanges } from '../../../../portal/admin/views/portal.ts';

const params = (fields: Record<string, string>) => new Map(Object.entries(fields));

describe('the portal settings form, read', () => {
  it('blank timeouts and date are null; lists are one entry a line, blank lines skipped; CRLF is LF', () => {
    const form = readPortalForm(
      params({
        mode: ' registration ',
        idleTimeoutMinutes: '',
        hardTimeoutMinutes: '45',
        registrationClearDate: '',
        policyText: '\r\nLine one\r\nLine two\r\n',
        walledHosts: ' a.example \r\n\r\n  \r\n*.b.example',
        walledCidrs: '',
      }),
    );
    expect(form.own).toEqual([]);
    expect(form.input).toEqual({
      mode: 'registration',
      idleTimeoutMinutes: null,
      hardTimeoutMinutes: 45,
      registrationClearDate: null,
      policyText: 'Line one\nLine two',
      walledGarden: { hosts: ['a.example', '*.b.example'], cidrs: [] },
    });
    expect(form.hosts.lineOf).toEqual([1, 4]);
  });

  it('a value it can tell is wrong is passed on as typed (so the store refuses it) with its own words', () => {
    const form = readPortalForm(
      params({ mode: 'off', idleTimeoutMinutes: '08x', registrationClearDate: '1.1.2030' }),
    );
    expect(form.input).toMatchObject({ idleTimeoutMinutes: '08x', registrationClearDate: '1.1.2030' });
    expect(form.own.map((p) => p.field)).toEqual(['idleTimeoutMinutes', 'registrationClearDate']);
    // The store's words for the same fields give way to ours; its list problems get their line numbers.
    const problems = portalFormProblems({ ...form, hosts: linesOf('\nx y') }, [
      { field: 'idleTimeoutMinutes', message: 'must be a whole number of minutes (given: "08x")' },
      { field: 'walledGarden.hosts.0', message: '"x y" is not a host name or *.domain' },
      { field: 'walledGarden.cidrs', message: 'must have at most 500 entries' },
    ]);
    expect(problems).toEqual([
      {
        field: 'idleTimeoutMinutes',
        message:
          '"08x" is not a whole number of minutes from 1 to 525600 (one year); leave it blank for none',
      },
      {
        field: 'registrationClearDate',
        message: '"1.1.2030" is not a date written YYYY-MM-DD; leave it blank for never',
      },
      { field: 'walledHosts', message: 'line 2: "x y" is not a host name or *.domain' },
      { field: 'walledCidrs', message: 'must have at most 500 entries' },
    ]);
  });
});

describe('the Device Group form, read', () => {
  it('trims the name; an unticked box (not sent) is inactive; a problem with a network names its line', () => {
    const form = readDeviceGroupForm(params({ name: '  Lab ', cidrs: '10.0.0.0/8\r\n\r\nbad' }));
    expect(form.input).toEqual({ name: 'Lab', cidrs: ['10.0.0.0/8', 'bad'], active: false });
    expect(readDeviceGroupForm(params({ name: 'x', cidrs: '', active: 'on' })).input.active).toBe(true);
    expect(groupFormProblems(form, [{ field: 'cidrs.1', message: '"bad" is not an address' }])).toEqual([
      { field: 'cidrs', message: 'line 3: "bad" is not an address' },
    ]);
  });
});

describe('what changed, in words', () => {
  const before: PortalSettings = structuredClone(DEFAULT_PORTAL_SETTINGS);
  const with_ = (changes: Partial<PortalSettings>): PortalSettings => ({ ...before, ...changes });
  it.each<[Partial<PortalSettings>, Partial<PortalSettings>, string]>([
    [{}, { mode: 'registration' }, 'Mode: Off → Device Registration'],
    [{}, { idleTimeoutMinutes: 1 }, 'Idle timeout: 60 minutes → 1 minute'],
    [{}, { hardTimeoutMinutes: null }, 'Hard timeout: 480 minutes → none'],
    [
      { registrationClearDate: '2030-01-01' },
      { registrationClearDate: null },
      'Registration clear date: 2030-01-01 → never',
    ],
    [{ policyText: 'a' }, { policyText: 'b' }, 'Usage policy: changed'],
    [{ policyText: 'a' }, { policyText: '' }, 'Usage policy: removed'],
    [
      {},
      { walledGarden: { hosts: ['a.example'], cidrs: [] } },
      'Walled garden: 0 host names, 0 networks → 1 host name, 0 networks',
    ],
  ])('%j → %j', (from, to, line) => {
    const a = with_(from);
    const b = with_({ ...from, ...to });
    const changed = Object.keys(to) as (keyof PortalSettings)[];
    expect(describeChanges(a, b, changed)).toEqual([line]);
  });
});
