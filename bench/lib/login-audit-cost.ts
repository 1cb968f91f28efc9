/**
 * What the audit trail and the login's counting cost a login in the store, in one process and one run, so that
 * other load on the machine falls on all sides alike: logins on the preloaded addresses through the SQLite
 * store's sessions.start as the login API makes them (--batch at once, so one group commit holds them, as under
 * load), each renewing its address's session (--users same: the same user) or taking it from another user
 * (--users next), in alternating rounds of three kinds:
 *   plain    start(input): the same write, no event
 *   audited  start(input, previous => loginEvent(...)): the session replaced as the write finds it, and the
 *            login's event in the group commit's audit page, in the same transaction (portal/api/login.ts)
 *   counted  audited, and the login API's counts (countLogin, countSessionEnd when one was replaced)
 * Prints one JSON line: the median CPU µs per login of each and the differences.
 *
 *   node bench/lib/login-audit-cost.ts --config FILE [--logins 20000] [--rounds 7] [--sessions 10000] [--batch 50]
 *        [--users same|next]
 */
import { parseArgs } from 'node:util';
import { dbPath, loadConfig } from '../../lib/config/load.ts';
import { countLogin, countSessionEnd } from '../../lib/metrics/sessions.ts';
import { processRegistry } from '../../lib/metrics/registry.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { openSqliteStore } from '../../lib/store/sqlite-store.ts';
import type { Replaced } from '../../lib/store/session.ts';
import { loginEvent } from '../../portal/api/login.ts';
import { replacementOf } from '../../portal/audit.ts';
import { benchKey, benchUser, isLoginUsers, loginUser } from './figures.ts';

const { values } = parseArgs({
  options: {
    config: { type: 'string' },
    logins: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '7' },
    sessions: { type: 'string', default: '10000' },
    batch: { type: 'string', default: '50' },
    users: { type: 'string', default: 'same' },
  },
});
const { config } = loadConfig(values.config);
const logins = Number(values.logins);
const sessions = Number(values.sessions);
const batch = Number(values.batch);
processRegistry('serve', { defaults: false });
const db = openDatabase(dbPath(config));
const store = openSqliteStore(db, { passwordFile: '/nonexistent', audit: { box: 'bench' } });

type Kind = 'plain' | 'audited' | 'counted';
let next = 0;
const users = values.users;
if (!isLoginUsers(users)) throw new Error('--users is same or next');
const input = () => {
  const n = next++;
  const i = n % sessions;
  const user = loginUser(users, i, n, sessions);
  return {
    key: { kind: 'ip', value: benchKey(i) } as const,
    username: benchUser(user),
    source: 'api' as const,
  };
};
async function login(kind: Kind): Promise<void> {
  const start = input();
  if (kind === 'plain') {
    await store.sessions.start(start);
    return;
  }
  let replaced: Replaced | undefined;
  await store.sessions.start(
    start,
    (previous) => (
      (replaced = previous),
      loginEvent('api-key:bench', start.key.value, start.username, replacementOf(start.username, previous))
    ),
  );
  if (kind === 'counted') {
    countLogin('api');
    if (replaced !== undefined) countSessionEnd(replaced.source, 'replaced');
  }
}
/** CPU µs per login over one round (user + system: the commits' writes are the kernel's). */
async function round(kind: Kind): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < logins; i += batch) {
    await Promise.all(Array.from({ length: batch }, () => login(kind)));
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / logins;
}
const kinds: Kind[] = ['plain', 'audited', 'counted'];
for (const kind of kinds) await round(kind);
const took: Record<Kind, number[]> = { plain: [], audited: [], counted: [] };
for (let r = 0; r < Number(values.rounds); r++) {
  for (const kind of r % 2 === 0 ? kinds : [...kinds].reverse()) took[kind].push(await round(kind));
}
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] ?? NaN;
const plain = median(took.plain);
const audited = median(took.audited);
const counted = median(took.counted);
const r1 = (n: number) => Math.round(n * 10) / 10;
console.log(
  JSON.stringify({
    label: `login in the store in-process (${users} users), plain vs audited vs audited and counted`,
    plain_us: r1(plain),
    audited_us: r1(audited),
    counted_us: r1(counted),
    audit_cost_us: r1(audited - plain),
    count_cost_us: r1(counted - audited),
  }),
);
await store.close();
db.close();
