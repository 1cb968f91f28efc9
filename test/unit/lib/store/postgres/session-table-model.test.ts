import { describe, expect, it } from 'vitest';
import { SessionTable, type SessionRow } from '../../../../../lib/store/postgres/session-table.ts';
import { toSession } from '../../../../../lib/store/session.ts';

/**
 * SessionTable against a model of two Maps (by key, by id) over random operations chosen to hit its edges:
 * keys of both kinds sharing their text, an id moving between keys and kinds, users and keys around the
 * 28 bytes a slot holds (ASCII and not), a MAC added and cleared, equal and older change numbers, removals of
 * replaced ids, ids up to 2^53 - 1, and enough churn to compact the arena and reuse freed slots.
 */
type Model = { byKey: Map<string, SessionRow>; byId: Map<number, string> };
const at = (r: Pick<SessionRow, 'key_kind' | 'key'>) => `${r.key_kind}:${r.key}`;

function modelPut(m: Model, r: SessionRow): void {
  const held = m.byKey.get(at(r));
  if (held !== undefined && held.change > r.change) return;
  const other = m.byId.get(r.id);
  if (other !== undefined && other !== at(r)) {
    const moved = m.byKey.get(other) as SessionRow;
    if (moved.change > r.change) return;
    m.byKey.delete(other);
  }
  if (held !== undefined) m.byId.delete(held.id);
  m.byKey.set(at(r), r);
  m.byId.set(r.id, at(r));
}

function modelRemove(m: Model, id: number): void {
  const key = m.byId.get(id);
  if (key === undefined) return;
  m.byId.delete(id);
  m.byKey.delete(key);
}

function random(seed: number) {
  let s = seed >>> 0;
  return (bound: number): number => {
    // xorshift32: enough spread for a test's choices
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) % bound;
  };
}

/** Strings whose UTF-8 length lands on and around 28 bytes alone or beside a key (one-, two-, three-, four-byte units). */
function textAround(next: (bound: number) => number, prefix: string, long = false): string {
  const unit = ['a', 'é', '€', '😀'][next(4)] as string;
  const count = long || next(4) === 0 ? 1 + next(300) : 1 + next(30);
  let text = prefix;
  for (let i = 0; i < count; i++) text += i % 3 === 0 ? unit : String.fromCharCode(97 + (i % 26));
  return text;
}

const KEYS = [
  '10.0.0.1',
  '10.0.0.10',
  '255.255.255.255',
  '2001:db8::1',
  '2001:0db8:0000:0000:0000:0000:0000:0001',
  'fe80::1ff:fe23:4567:890a',
  '02:00:00:00:00:01',
  '02:00:00:00:00:0a',
  'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
];

describe('SessionTable against a model (random operations at its edges)', () => {
  // the last two: long users, so that the arena's garbage passes its 4 MB and is compacted many times
  for (const [seed, long] of [
    [1, false],
    [2, false],
    [3, false],
    [4, false],
    [5, true],
    [6, true],
  ] as const) {
    it(`answers as two Maps would (seed ${seed}${long ? ', arena compacted' : ''})`, () => {
      const next = random(seed * 7919);
      const table = new SessionTable();
      const model: Model = { byKey: new Map(), byId: new Map() };
      const ids = [1, 2, 3, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1, 2 ** 53 - 2, 4294967297];
      let change = 0;
      let compactions = 0;
      const keyText = (): string => {
        const pick = next(KEYS.length + 20);
        return pick < KEYS.length
          ? (KEYS[pick] as string)
          : Array.from(textAround(next, `k${pick}-`))
              .slice(0, 64)
              .join('');
      };
      for (let step = 0; step < 40_000; step++) {
        const op = next(20);
        if (op < 12) {
          const idPick = next(ids.length + 4);
          const id = idPick < ids.length ? (ids[idPick] as number) : 100 + next(5000);
          const r: SessionRow = {
            id,
            key_kind: next(2) === 0 ? 'ip' : 'mac',
            key: keyText(),
            username: textAround(next, '', long),
            source: (['api', 'portal', 'registration', 'agreement'] as const)[
              next(4)
            ] as SessionRow['source'],
            created_at: next(1000),
            last_seen: next(100000),
            expires_at: next(3) === 0 ? null : next(2000),
            idle_timeout: next(2) === 0 ? null : next(600000),
            mac: next(2) === 0 ? null : `02:00:00:00:${String(next(90) + 10)}:0${next(10)}`,
            // equal, older and newer numbers
            change: (change += next(3)) - next(3),
          };
          const garbage = table.stats().arenaGarbage;
          table.put(r);
          modelPut(model, r);
          if (table.stats().arenaGarbage < garbage) compactions += 1;
        } else if (op < 17) {
          const known = [...model.byId.keys()];
          const id =
            next(3) === 0 || known.length === 0 ? 100 + next(5000) : (known[next(known.length)] as number);
          table.remove(id);
          modelRemove(model, id);
        } else {
          const key = keyText();
          const kind = next(2) === 0 ? 'ip' : 'mac';
          const held = model.byKey.get(`${kind}:${key}`);
          const now = next(2000);
          const want =
            held === undefined || (held.expires_at !== null && held.expires_at <= now)
              ? undefined
              : toSession(held);
          expect(table.find({ kind, value: key }, now)).toEqual(want);
        }
        expect(table.size).toBe(model.byKey.size);
        if (step % 4000 === 3999) {
          const now = 1000;
          const want = [...model.byKey.values()]
            .filter((r) => r.expires_at === null || r.expires_at > now)
            .sort((a, b) =>
              a.key_kind !== b.key_kind
                ? a.key_kind === 'ip'
                  ? -1
                  : 1
                : a.key < b.key
                  ? -1
                  : a.key > b.key
                    ? 1
                    : 0,
            )
            .map(toSession);
          expect(table.list(now)).toEqual(want);
          expect([...table.live(now)].length).toBe(want.length);
          expect(table.countBySource(['portal', 'agreement'], now)).toBe(
            want.filter((s) => s.source === 'portal' || s.source === 'agreement').length,
          );
        }
      }
      if (long) expect(compactions).toBeGreaterThan(0);
    });
  }
});
