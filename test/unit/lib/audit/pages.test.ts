import { describe, expect, it } from 'vitest';
import {
  eventsOf,
  type NewPage,
  PAGE_EVENTS,
  PAGE_SPAN_MS,
  pagesOf,
  type StoredPage,
} from '../../../../lib/audit/pages.ts';
import { record, store, T0 } from '../../../support/audit-pages.ts';

describe('pagesOf', () => {
  it("keeps a commit's records in one page, in time order (stable), their ids the page's and their index", () => {
    const [page, ...more] = store([
      [
        record(T0 + 5, 'b'),
        record(T0 + 2, 'a'),
        record(T0 + 5, 'c'),
        record(T0 + 2, 'd', { user: undefined }),
      ],
    ]);
    expect(more).toEqual([]);
    expect(page).toMatchObject({ id: 1, atFirst: T0 + 2, atLast: T0 + 5, box: 'proxy1' });
    const events = eventsOf(page as StoredPage);
    expect(events.map((e) => [e.id, e.at, e.user])).toEqual([
      [PAGE_EVENTS, T0 + 2, 'a'],
      [PAGE_EVENTS + 1, T0 + 2, undefined],
      [PAGE_EVENTS + 2, T0 + 5, 'b'],
      [PAGE_EVENTS + 3, T0 + 5, 'c'],
    ]);
    expect(events[0]).toEqual({ id: PAGE_EVENTS, ...record(T0 + 2, 'a') });
    expect(pagesOf([])).toEqual([]);
  });

  it('starts a new page at PAGE_EVENTS events, past PAGE_SPAN_MS, and for another box', () => {
    const many = Array.from({ length: PAGE_EVENTS + 1 }, (_, i) => record(T0, `u${i}`));
    expect(pagesOf(many).map((p) => eventsOf({ ...p, id: 1 }).length)).toEqual([PAGE_EVENTS, 1]);
    const spread = [record(T0, 'a'), record(T0 + PAGE_SPAN_MS, 'b'), record(T0 + PAGE_SPAN_MS + 1, 'c')];
    expect(pagesOf(spread).map((p) => [p.atFirst, p.atLast])).toEqual([
      [T0, T0 + PAGE_SPAN_MS],
      [T0 + PAGE_SPAN_MS + 1, T0 + PAGE_SPAN_MS + 1],
    ]);
    const boxes = [record(T0, 'a'), record(T0, 'b', { box: 'proxy2' })];
    expect(pagesOf(boxes).map((p) => p.box)).toEqual(['proxy1', 'proxy2']);
  });
});

describe('eventsOf', () => {
  it('writes each kind and actor once a page, times from its first, no empty detail; reads back the records', () => {
    const records = [
      record(T0, 'alice'),
      record(T0 + 3, 'bob', { kind: 'api.replaced', detail: { replaced: 'alice', source: 'api' } }),
      record(T0 + 3, 'carol', { address: undefined, actor: 'admin:root', kind: 'session.ended' }),
    ];
    const [page] = pagesOf(records);
    expect(JSON.parse(page?.events ?? '')).toEqual([
      ['api.login', 'api-key:wifi', 'api.replaced', 'session.ended', 'admin:root'],
      [0, 0, 1, 'alice', '10.0.0.1'],
      [3, 2, 1, 'bob', '10.0.0.1', { replaced: 'alice', source: 'api' }],
      [3, 3, 4, 'carol', null],
    ]);
    const events = eventsOf({ ...(page as NewPage), id: 2 });
    expect(events).toEqual(records.map((r, i) => ({ id: 2 * PAGE_EVENTS + i, ...r })));
  });

  it('refuses a page that is not JSON or not [strings, events…], naming the page and the event', () => {
    const page = (events: string): StoredPage => ({ id: 7, atFirst: T0, box: 'proxy1', events });
    expect(() => eventsOf(page('[[1,'))).toThrow('audit page 7: not valid JSON');
    expect(() => eventsOf(page('{}'))).toThrow('audit page 7: not [strings, events…]');
    expect(() => eventsOf(page('[1, [0, 0, 0, null, null]]'))).toThrow('not [strings, events…]');
    expect(() =>
      eventsOf(page(JSON.stringify([[], ...Array(PAGE_EVENTS + 1).fill([0, 0, 0, null, null])]))),
    ).toThrow('not [strings, events…]');
    const bad = ['[0, 0]', '[0, 0, 0, 1, null]', '["0", 0, 0, null, null]', '[0, 0, 0, null, null, []]'];
    for (const event of bad)
      expect(() => eventsOf(page(`[["api.login"], [0, 0, 0, null, null], ${event}]`))).toThrow(
        'audit page 7: event 1 is not [dt, kind, actor, user, address, detail?]',
      );
    expect(() => eventsOf(page('[["api.login"], [0, 0, 1, null, null]]'))).toThrow(
      'audit page 7: event 0 names no kind or actor',
    );
  });
});
