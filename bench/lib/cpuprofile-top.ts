/**
 * Where the time went in a V8 .cpuprofile (node --cpu-prof): self time by area (project code, each npm
 * package, Node internals, GC, idle), the functions with the most self time, and the inclusive time of the
 * project's own functions.
 *
 *   node bench/lib/cpuprofile-top.ts FILE.cpuprofile [--top 25] [--root /work/main]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' }, root: { type: 'string', default: '/work/main' } },
});
const file = positionals[0];
if (file === undefined) {
  console.error('usage: cpuprofile-top.ts FILE.cpuprofile [--top N] [--root DIR]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const top = Number(values.top);
const root = `file://${values.root}/`;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);

function area(f: CallFrame): string {
  const { url, functionName } = f;
  if (url === '') return functionName.startsWith('(') ? functionName : '(native/builtin)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `npm:${pkg[1]}`;
  if (url.startsWith(root)) return `project:${url.slice(root.length).split('/')[0]}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return url;
}
const label = (f: CallFrame): string => {
  const where = f.url.startsWith(root) ? f.url.slice(root.length) : f.url.replace(/^.*node_modules\//, '');
  return `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber + 1}`;
};
const pct = (us: number): string => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
const ms = (us: number): string => `${(us / 1000).toFixed(0).padStart(6)} ms`;

function table(title: string, rows: Map<string, number>, limit: number): void {
  console.log(`\n${title}`);
  for (const [name, us] of [...rows].sort((a, b) => b[1] - a[1]).slice(0, limit)) {
    console.log(`  ${pct(us)} ${ms(us)}  ${name}`);
  }
}

const areas = new Map<string, number>();
const functions = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, us] of self) {
  const node = byId.get(id);
  if (node === undefined) continue;
  const a = area(node.callFrame);
  areas.set(a, (areas.get(a) ?? 0) + us);
  const name = label(node.callFrame);
  functions.set(name, (functions.get(name) ?? 0) + us);
  // Inclusive time of project functions: walk up the stack, counting each function once per sample.
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const f = byId.get(cur)?.callFrame;
    if (f === undefined || !f.url.startsWith(root)) continue;
    const fn = label(f);
    if (seen.has(fn)) continue;
    seen.add(fn);
    inclusive.set(fn, (inclusive.get(fn) ?? 0) + us);
  }
}

const busy = total - (areas.get('(idle)') ?? 0);
console.log(
  `${file}: ${(total / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s not idle (${pct(busy).trim()})`,
);
table('Self time by area', areas, 40);
table(`Top ${top} functions by self time`, functions, top);
table(`Top ${top} project functions by inclusive time`, inclusive, top);
