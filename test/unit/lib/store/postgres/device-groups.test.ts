import { describe, expect, it, vi } from 'vitest';
import { DeviceGroupInputError } from '../../../../../lib/store/device-group-rules.ts';
import { takeChange } from '../../../../../lib/store/postgres/changes.ts';
import { usePgSite } from '../../../../harness/pg-site.ts';
import { rejection } from '../../../../support/thrown.ts';
import { describeDeviceGroups } from '../contract/device-groups.ts';

describe('PgDeviceGroups (a real PostgreSQL 15)', { timeout: 30_000 }, () => {
  const { pg, open } = usePgSite();
  describeDeviceGroups(open);

  const counters = async (sql: Awaited<ReturnType<typeof open>>['sql']) =>
    Object.fromEntries(
      (await sql<{ tab: string; last: number }[]>`SELECT tab, last FROM changes`).map((r) => [r.tab, r.last]),
    );

  it('a group made on box A answers on A at once and on B by notification; cidrs are JSON, rows stamped', async () => {
    const site = await open();
    const [a, b] = [await site.box(), await site.box()];
    const lab = await a.store.deviceGroups.create({ name: 'Lab', cidrs: ['10.0.0.0/8'] });
    expect(a.store.deviceGroups.activeGroupFor('10.1.2.3')?.name).toBe('Lab');
    await vi.waitFor(() => expect(b.store.deviceGroups.activeGroupFor('10.1.2.3')?.name).toBe('Lab'), {
      timeout: 1000,
      interval: 5,
    });
    expect(await site.sql`SELECT id, name, cidrs, active, change FROM device_groups`).toEqual([
      { id: lab.id, name: 'Lab', cidrs: ['10.0.0.0/8'], active: true, change: 1 },
    ]);
    // A creation ends no agreement: the sessions are not touched, nor their number taken.
    expect(await counters(site.sql)).toMatchObject({ device_groups: 1, sessions: 0 });
  });

  it('ended agreements are recorded for every box’s delta, renamed ones stamped, under one sessions number', async () => {
    const site = await open();
    const box = await site.box();
    const lab = await box.store.deviceGroups.create({ name: 'Lab', cidrs: ['10.1.0.0/16'] });
    const campus = await box.store.deviceGroups.create({ name: 'Campus', cidrs: ['10.0.0.0/8'] });
    const kept = await box.store.sessions.start({
      key: { kind: 'ip', value: '10.3.0.5' },
      username: 'agreement:Campus',
      source: 'agreement',
    });
    const ended = await box.store.sessions.start({
      key: { kind: 'ip', value: '10.1.0.5' },
      username: 'agreement:Lab',
      source: 'agreement',
    });
    await box.store.deviceGroups.update(campus.id, { name: 'Whole campus', cidrs: ['10.3.0.0/16'] });
    const sessions = (await counters(site.sql)).sessions ?? NaN;
    expect(await site.sql`SELECT id, change FROM session_deletions`).toEqual([]);
    expect(await site.sql`SELECT id, username, change FROM sessions ORDER BY id`).toEqual([
      { id: kept.id, username: 'agreement:Whole campus', change: sessions },
      { id: ended.id, username: 'agreement:Lab', change: sessions - 1 },
    ]);
    expect(await box.store.deviceGroups.setActive(lab.id, false)).toMatchObject({ endedSessions: 1 });
    expect(await site.sql`SELECT id, change FROM session_deletions`).toEqual([
      { id: ended.id, change: sessions + 1 },
    ]);
  });

  it('two boxes making one name at once: the write’s lock decides, one group, the other told the name is taken', async () => {
    const site = await open();
    const [a, b] = [await site.box(), await site.box()];
    const outcomes = await Promise.all([
      rejection(a.store.deviceGroups.create({ name: 'Lab', cidrs: ['10.0.0.0/8'] })),
      rejection(b.store.deviceGroups.create({ name: 'LAB', cidrs: ['10.0.0.0/8'] })),
    ]);
    expect(outcomes.filter((o) => o === undefined)).toHaveLength(1);
    const refused = outcomes.find((o) => o !== undefined);
    expect(refused).toBeInstanceOf(DeviceGroupInputError);
    expect((refused as DeviceGroupInputError).problems).toEqual([
      { field: 'name', message: expect.stringMatching(/^"(Lab|LAB)" is taken by the group "(Lab|LAB)"$/) },
    ]);
    expect(await site.sql`SELECT name FROM device_groups`).toHaveLength(1);
  });

  it('a change PostgreSQL aborts to break a deadlock runs again and is done', async () => {
    const site = await open();
    const groups = (await site.box()).store.deviceGroups;
    const lab = await groups.create({ name: 'Lab', cidrs: ['10.0.0.0/8'] });
    // Another writer that takes the locks the other way round: sessions, then a share of device_groups'
    // counter. The group change waits for sessions first, so its backend finds the deadlock and is aborted.
    const other = site.sql.begin(async (tx) => {
      await takeChange(tx, 'sessions');
      const changing = groups.setActive(lab.id, false);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await tx`SELECT last FROM changes WHERE tab = 'device_groups' FOR SHARE`;
      return { changing };
    });
    const { changing } = await other;
    expect(await changing).toMatchObject({ active: false, endedSessions: 0 });
    expect(groups.get(lab.id)?.active).toBe(false);
  });

  it('PostgreSQL away: lookups answer from memory; every write is STORE_UNAVAILABLE', async () => {
    const site = await open();
    const groups = (await site.box()).store.deviceGroups;
    const lab = await groups.create({ name: 'Lab', cidrs: ['10.0.0.0/8'] });
    await pg.server.stop();
    try {
      expect(groups.activeGroupFor('10.0.0.1')?.name).toBe('Lab');
      const writes = [
        () => groups.create({ name: 'Other', cidrs: ['192.168.0.0/16'] }),
        () => groups.setActive(lab.id, false),
        () => groups.remove(lab.id),
      ];
      for (const write of writes)
        expect(await rejection(write())).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(groups.list()).toEqual([lab]);
    } finally {
      await pg.server.start();
    }
  });
});
