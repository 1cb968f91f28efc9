import { describe, expect, it } from 'vitest';
import type { AuditEvent, AuditRecord } from '../../../../lib/audit/event.ts';
import { PageCollector } from '../../../../lib/audit/page-collector.ts';
import { eventsOf, PAGE_EVENTS, PAGE_SPAN_MS } from '../../../../lib/audit/pages.ts';
import type { AuditCursor, AuditPage, AuditQuery } from '../../../../lib/audit/query.ts';
import { record, store, T0 } from '../../../support/audit-pages.ts';

/** AuditStore.list's reading, without SQLite: the same WHERE and ORDER BY over the pages. */
function list(pages: ReturnType<typeof store>, query: AuditQuery, scanRows = 100_000): AuditPage {
  const collector = new PageCollector(query, scanRows);
  const below = PageCollector.below(query);
  const read = pages
    .filter((p) => p.atLast < below + PAGE_SPAN_MS && p.atFirst < below && p.atLast >= (query.from ?? 0))
    .sort((a, b) => b.atLast - a.atLast || b.id - a.id);
  for (const page of read) {
    if (!collector.wants(page.atLast, page.id)) break;
    collector.add(page);
  }
  return collector.result();
}

const newestFirst = (a: AuditCursor, b: AuditCursor) => b.at - a.at || b.id - a.id;

/** Every event a query matches, newest first, by reading all of it. */
function everything(pages: ReturnType<typeof store>, query: Omit<AuditQuery, 'limit'>): AuditEvent[] {
  return pages
    .flatMap(eventsOf)
    .filter(
      (e) =>
        (query.from === undefined || e.at >= query.from) &&
        (query.to === undefined || e.at < query.to) &&
        (query.user === undefined || e.user === query.user || e.actor === `admin:${query.user}`) &&
        (query.address === undefined || e.address === query.address) &&
        (query.kind === undefined || e.kind === query.kind),
    )
    .sort(newestFirst);
}

/** Every page of a query, following the cursors (at most `most` pages). */
function walk(pages: ReturnType<typeof store>, query: AuditQuery, scanRows: number, most = 10_000) {
  const events: AuditEvent[] = [];
  let before: AuditCursor | undefined;
  let n = 0;
  for (; n < most; n++) {
    const page = list(pages, { ...query, ...(before === undefined ? {} : { before }) }, scanRows);
    expect(page.events.length).toBeLessThanOrEqual(query.limit);
    events.push(...page.events);
    // Each cursor strictly older than the last: a walk always ends.
    if (before !== undefined && page.next !== undefined)
      expect(newestFirst(before, page.next)).toBeLessThan(0);
    before = page.next;
    if (before === undefined) break;
  }
  return { events, pages: n + 1 };
}

/**
 * A trail like a busy day's: logins in commits of a few ms, admin actions, expiries recorded late. `gap`: the
 * most ms between commits (a small one makes runs of pages of one millisecond).
 */
function day(seed: number, gap = 400, count = 300): AuditRecord[][] {
  let state = seed;
  const random = (n: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state % n;
  };
  const commits: AuditRecord[][] = [];
  let now = T0;
  for (let c = 0; c < count; c++) {
    now += random(gap);
    const size = 1 + random(30);
    const commit: AuditRecord[] = [];
    for (let i = 0; i < size; i++) {
      const late = random(10) === 0 ? random(5 * PAGE_SPAN_MS) : 0;
      commit.push(
        record(now - late, `u${random(40)}`, {
          address: `10.0.0.${random(20)}`,
          ...(late > 0 ? { kind: 'session.expired', actor: 'system' } : {}),
          ...(random(25) === 0
            ? { kind: 'settings.saved', actor: `admin:u${random(40)}`, user: undefined }
            : {}),
        }),
      );
    }
    commits.push(commit);
  }
  return commits;
}

describe('PageCollector', () => {
  it('pages through a trail newest first, as reading all of it and sorting would, for every filter', () => {
    const pages = store(day(7));
    const queries: Array<Omit<AuditQuery, 'limit'>> = [
      {},
      { user: 'u3' },
      { address: '10.0.0.4' },
      { kind: 'session.expired' },
      { from: T0 + 20_000, to: T0 + 40_000 },
      { user: 'u5', from: T0 + 10_000 },
    ];
    for (const query of queries) {
      const all = everything(pages, query);
      for (const limit of [1, 7, 50]) {
        expect(walk(pages, { ...query, limit }, 100_000).events).toEqual(all);
      }
      // A bounded scan ends pages short, never losing or repeating an event.
      expect(walk(pages, { ...query, limit: 10 }, 40).events).toEqual(all);
    }
  });

  it('pages through runs of pages of one millisecond too, however small the scan bound', () => {
    for (let seed = 1; seed <= 12; seed++) {
      const pages = store(day(seed, 3, 60));
      for (const query of [{ user: `u${seed}` }, { kind: 'session.expired' as const }, {}]) {
        const all = everything(pages, query);
        for (const scanRows of [1, 5, 40]) {
          expect(walk(pages, { ...query, limit: 1 + (seed % 9) }, scanRows).events).toEqual(all);
        }
      }
    }
  });

  it("a filtered walk gets past a registration date's expiries, every one at the same millisecond", () => {
    const expiry = (user: string) => record(T0, user, { kind: 'session.expired', actor: 'system' });
    const pages = store([
      [record(T0 - 5000, 'rare')],
      ...Array.from({ length: 10 }, (_, c) => [0, 1, 2].map((i) => expiry(`u${c}-${i}`))),
      [record(T0 + 1000, 'other')],
    ]);
    const { events, pages: read } = walk(pages, { user: 'rare', limit: 5 }, 9);
    expect(events.map((e) => e.user)).toEqual(['rare']);
    // Inside the run, pages stop by id: three short pages of about nine events read each, then the match.
    expect(read).toBe(4);
  });

  it('a filtered page that reaches its scan bound ends where it stopped, with a cursor from there', () => {
    const pages = store(
      Array.from({ length: 10 }, (_, i) => [record(T0 + i * 1000, i === 0 ? 'rare' : `u${i}`)]),
    );
    const first = list(pages, { user: 'rare', limit: 5 }, 4);
    expect(first.events).toEqual([]);
    expect(first.searchedTo).toBe(T0 + 6000);
    expect(first.next).toEqual({ at: T0 + 6000, id: 7 * PAGE_EVENTS });
    expect(
      list(pages, { user: 'rare', limit: 5, before: first.next as AuditCursor }, 100).events.map(
        (e) => e.user,
      ),
    ).toEqual(['rare']);
  });

  it('an unfiltered page reads only as far as it must: pages older than its oldest event are not asked for', () => {
    const pages = store(Array.from({ length: 100 }, (_, i) => [record(T0 + i * 10 * PAGE_SPAN_MS, `u${i}`)]));
    const collector = new PageCollector({ limit: 3 }, 100_000);
    const asked: number[] = [];
    for (const page of [...pages].reverse()) {
      asked.push(page.atLast);
      if (!collector.wants(page.atLast, page.id)) break;
      collector.add(page);
    }
    expect(asked).toHaveLength(5);
    expect(collector.result().events.map((e) => e.user)).toEqual(['u99', 'u98', 'u97']);
  });
});
