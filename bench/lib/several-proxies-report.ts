/**
 * The several-proxies bench's figures side by side, PostgreSQL | SQLite | issue 15's target | met, from the
 * records of one run (bench/several-proxies.sh writes them; cpu-monitor.py annotates other processes' CPU
 * use). A cell with several runs shows the median and the range. Printed twice: every record of the run, and
 * only those during which other processes used at most --quiet-max % of the CPUs.
 *
 *   node bench/lib/several-proxies-report.ts results/several-proxies.jsonl [--run RUN_ID] [--quiet-max 5]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Rec {
  label: string;
  engine: 'PostgreSQL' | 'SQLite';
  figure: string;
  run_id: string;
  other_cpu_during_pct?: { mean: number; max: number };
  [field: string]: unknown;
}

interface Row {
  title: string;
  figure: string;
  /** Only records whose label holds this. */
  labelHas?: string;
  value: (r: Rec) => unknown;
  digits?: number;
  target?: string;
  /** Whether PostgreSQL's median meets the target. */
  meets?: (v: number) => boolean;
}

const at = (r: Rec, path: string): unknown =>
  path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], r);
const f =
  (path: string, scale = 1) =>
  (r: Rec): unknown => {
    const v = at(r, path);
    return typeof v === 'number' ? v * scale : v;
  };

function rows(records: readonly Rec[]): Row[] {
  const anyOf = (figure: string) => records.find((r) => r.figure === figure);
  const callers = anyOf('logins')?.callers ?? '?';
  const visRate = /at (\d+)\/s/.exec(anyOf('visibility')?.label ?? '')?.[1] ?? '?';
  const loginRate = anyOf('lookups-writing')?.login_rate ?? '?';
  return [
    {
      title: `logins/s at ${sessions(records)} live sessions, ${callers} callers`,
      figure: 'logins',
      value: f('per_sec'),
      target: '≥ 20,000',
      meets: (v) => v >= 20_000,
    },
    {
      title: 'p99 of a login, ms',
      figure: 'logins',
      value: f('lat_ms.p99'),
      digits: 1,
      target: '≤ 20 ms',
      meets: (v) => v <= 20,
    },
    { title: 'p50 of a login, ms', figure: 'logins', value: f('lat_ms.p50'), digits: 1 },
    {
      title: "PostgreSQL's CPU per login (all its processes), µs",
      figure: 'logins',
      value: f('postgres_cpu_us_per_login'),
    },
    {
      title: "the writing process's CPU per login, µs",
      figure: 'logins',
      value: f('driver_cpu_us_per_login'),
    },
    {
      title: "the writing process's longest GC pause during the logins, ms",
      figure: 'logins',
      value: f('gc.max_ms'),
      digits: 1,
    },
    {
      title: `A→B: B holds a login, after A's answer, p50, ms (A at ${visRate}/s)`,
      figure: 'visibility',
      value: f('answered_to_b_ms.p50'),
      digits: 1,
    },
    {
      title: 'A→B: the same, p99, ms',
      figure: 'visibility',
      value: f('answered_to_b_ms.p99'),
      digits: 1,
      target: '≤ 50 ms',
      meets: (v) => v <= 50,
    },
    {
      title: 'A→B: from A being asked, p99, ms',
      figure: 'visibility',
      value: f('asked_to_b_ms.p99'),
      digits: 1,
    },
    {
      title: "A→B: box A's own login p99 meanwhile, ms",
      figure: 'visibility',
      value: f('a_login_p99_ms'),
      digits: 1,
    },
    {
      title: 'A→B: longest GC pause of box A meanwhile, ms',
      figure: 'visibility',
      value: f('a_gc.max_ms'),
      digits: 1,
    },
    {
      title: 'A→B: longest GC pause of box B meanwhile, ms',
      figure: 'visibility',
      value: f('b_gc.max_ms'),
      digits: 1,
    },
    {
      title: "full reload: authd's cold start to its first OK, s",
      figure: 'reload',
      labelHas: 'cold start',
      value: f('ms', 0.001),
      digits: 2,
      target: '≤ 3 s',
      meets: (v) => v <= 3,
    },
    {
      title: 'full reload: Replica.start() in box A (in-process), s',
      figure: 'reload',
      labelHas: 'box A',
      value: f('ms', 0.001),
      digits: 2,
      target: '≤ 3 s',
      meets: (v) => v <= 3,
    },
    {
      title: 'full reload: Replica.start() in box B (its own process), s',
      figure: 'reload',
      labelHas: 'box B',
      value: f('ms', 0.001),
      digits: 2,
      target: '≤ 3 s',
      meets: (v) => v <= 3,
    },
    {
      title: "authd's RSS once loaded, MB",
      figure: 'memory',
      value: f('rss_mb'),
      target: '≤ 300 MB',
      meets: (v) => v <= 300,
    },
    {
      title: "authd's RSS after the lookups, MB",
      figure: 'memory-after',
      value: f('rss_mb'),
      target: '≤ 300 MB',
      meets: (v) => v <= 300,
    },
    { title: 'lookups/s through the shim, no logins', figure: 'lookups', value: f('per_sec') },
    {
      title: `lookups/s through the shim, logins at ${loginRate}/s elsewhere`,
      figure: 'lookups-writing',
      value: f('per_sec'),
    },
    { title: 'p99 of a lookup, no logins, ms', figure: 'lookups', value: f('lat_us.p99', 0.001), digits: 2 },
    {
      title: 'p99 of a lookup with logins, ms',
      figure: 'lookups-writing',
      value: f('lat_us.p99', 0.001),
      digits: 2,
    },
    {
      title: 'p99 of the logins made meanwhile, ms',
      figure: 'lookups-writing',
      value: f('login_p99_ms'),
      digits: 1,
    },
    { title: 'logins made meanwhile that were refused', figure: 'lookups-writing', value: f('login_errors') },
    {
      title: "authd's CPU per lookup, no logins, µs",
      figure: 'lookups',
      value: f('authd_cpu_us_per_lookup'),
    },
    {
      title: "authd's CPU per lookup with logins, µs",
      figure: 'lookups-writing',
      value: f('authd_cpu_us_per_lookup'),
    },
    {
      title: 'memory per session held, V8 heap and buffers (session-memory.ts), bytes',
      figure: 'memory-parts',
      value: f('table_bytes_each'),
    },
    {
      title: 'memory of all the sessions held, MB',
      figure: 'memory-parts',
      value: f('table_mb'),
    },
    {
      title: '… after a "last seen" for every session, MB',
      figure: 'memory-parts',
      value: f('table_after_touch_mb'),
    },
    { title: '… at the peak of a full load, MB', figure: 'memory-parts', value: f('peak_during_load_mb') },
  ];
}

function sessions(records: readonly Rec[]): string {
  const n = records.find((r) => typeof r.sessions === 'number')?.sessions as number | undefined;
  return n === undefined ? '?' : n.toLocaleString('en');
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
const show = (v: number, digits = 0): string =>
  v.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function cell(records: readonly Rec[], row: Row): { text: string; median?: number } {
  const values = records
    .filter((r) => r.figure === row.figure && (row.labelHas === undefined || r.label.includes(row.labelHas)))
    .map(row.value)
    .filter((v): v is number => typeof v === 'number');
  if (values.length === 0) return { text: '—' };
  const m = median(values);
  if (values.length === 1) return { text: show(m, row.digits), median: m };
  const range = `${show(Math.min(...values), row.digits)}–${show(Math.max(...values), row.digits)}`;
  return { text: `${show(m, row.digits)} (${range})`, median: m };
}

function table(records: readonly Rec[]): string {
  const lines = ['| figure | PostgreSQL | SQLite | target (PostgreSQL) | met |', '|---|---:|---:|---|---|'];
  const pg = records.filter((r) => r.engine === 'PostgreSQL');
  const lite = records.filter((r) => r.engine === 'SQLite');
  for (const row of rows(records)) {
    const p = cell(pg, row);
    const s = cell(lite, row);
    if (p.median === undefined && s.median === undefined) continue;
    const met =
      row.meets === undefined || p.median === undefined ? '' : row.meets(p.median) ? 'yes' : '**no**';
    lines.push(`| ${row.title} | ${p.text} | ${s.text} | ${row.target ?? ''} | ${met} |`);
  }
  const other = (of: readonly Rec[]): string => {
    const means = of.map((r) => r.other_cpu_during_pct?.mean).filter((v): v is number => v !== undefined);
    return means.length === 0 ? '—' : `${show(median(means), 1)} (max ${show(Math.max(...means), 1)})`;
  };
  lines.push(
    `| other processes' CPU during the figures, mean %: median | ${other(pg)} | ${other(lite)} | | |`,
  );
  return lines.join('\n');
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { run: { type: 'string' }, 'quiet-max': { type: 'string', default: '5' } },
});
const file = positionals[0];
if (file === undefined) {
  console.error('usage: several-proxies-report.ts FILE.jsonl [--run RUN_ID] [--quiet-max 5]');
  process.exit(2);
}
const all = readFileSync(file, 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as Rec);
const run = values.run ?? all.at(-1)?.run_id;
const these = all.filter((r) => r.run_id === run);
const quietMax = Number(values['quiet-max']);
console.log(`Run ${run}, every figure (${file}):\n`);
console.log(table(these));
const quiet = these.filter(
  (r) => r.other_cpu_during_pct !== undefined && r.other_cpu_during_pct.mean <= quietMax,
);
console.log(`\nQuiet figures only (other processes ≤ ${quietMax} % of the CPUs during the figure):\n`);
console.log(quiet.length === 0 ? '  (none)' : table(quiet));
