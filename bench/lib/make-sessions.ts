/**
 * Preload a Doorman session DB for the benchmarks, through the real store code (openDatabase +
 * SessionStore.start), all rows in one transaction.
 *
 *   node bench/lib/make-sessions.ts --db FILE --count N [--first I] [--ips "A B C"]
 *
 * Keys are the anchors' driver keys: 10.a.b.c for i in first..first+count-1 (a = int(i/65536) % 256,
 * b = int(i/256) % 256, c = i % 256), user i is user%05d. With --ips, sessions are made for exactly these
 * addresses instead (user00000, user00001, ... in the order given). Prints one JSON line with the timing.
 */
import { parseArgs } from 'node:util';
import { systemClock } from '../../lib/clock.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { SessionStore } from '../../lib/store/session-store.ts';
import { benchKey, benchUser } from './figures.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    count: { type: 'string', default: '10000' },
    first: { type: 'string', default: '0' },
    ips: { type: 'string' },
  },
});
if (values.db === undefined) {
  console.error('usage: make-sessions.ts --db FILE [--count N] [--first I] [--ips "A B ..."]');
  process.exit(2);
}

const keys: [string, string][] = [];
if (values.ips !== undefined) {
  values.ips
    .split(/\s+/)
    .filter((ip) => ip !== '')
    .forEach((ip, i) => keys.push([ip, benchUser(i)]));
} else {
  const first = Number(values.first);
  const count = Number(values.count);
  for (let i = first; i < first + count; i++) keys.push([benchKey(i), benchUser(i)]);
}

const started = performance.now();
const db = openDatabase(values.db);
const store = new SessionStore(db, systemClock);
db.transaction(() => {
  for (const [ip, username] of keys) store.start({ key: { kind: 'ip', value: ip }, username, source: 'api' });
})();
const rows = db.prepare('SELECT count(*) FROM sessions').pluck().get() as number;
db.close();
console.log(
  JSON.stringify({ db: values.db, written: keys.length, rows, ms: Math.round(performance.now() - started) }),
);
