/**
 * Box B of the several-proxies bench's A→B visibility figure, a process of its own (forked with an IPC
 * channel): a PostgreSQL client, a Replica and PgSessions, as authd or the web app of another box holds them.
 * It loads every session, says `{ ready, loadMs, size }`, then is told each login box A is about to make
 * (`{ watch: [n, key, username] }`) and notes the moment its own copy first answers that key with that user:
 * right after the replica applied what it read (a wrapped TableSync), so the moment is the replica's, not a
 * poll's. On `{ stop: true }` it answers `{ seen: [[n, epochMs, late]...], unseen, gc }` (gc: its pauses since
 * it was ready) and exits; `late` marks a
 * login already visible when B heard of it (the time is then when B heard, an upper bound).
 *
 *   node bench/lib/visibility-box.ts --url URL --password-file FILE
 */
import { parseArgs } from 'node:util';
import { systemClock } from '../../lib/clock.ts';
import { connectPostgres } from '../../lib/store/postgres/connect.ts';
import { Replica, type TableSync } from '../../lib/store/postgres/replica.ts';
import type { ReplicatedTable } from '../../lib/store/postgres/schema.ts';
import { PgSessions } from '../../lib/store/postgres/sessions.ts';
import { watchGc, type GcPauses } from './gc-pauses.ts';
import { epochNow } from './login-rate.ts';

export type ToBox = { watch: [number, string, string] } | { stop: true };
export type FromBox =
  | { ready: true; loadMs: number; size: number }
  | { failed: string }
  | { seen: Array<[number, number, boolean]>; unseen: number; gc: GcPauses };

/** A Replica that says when it has applied what it read. */
class ObservedReplica extends Replica {
  applied$: () => void = () => undefined;

  override table(tab: ReplicatedTable, sync: TableSync): void {
    const then = (apply: () => void) => () => {
      apply();
      this.applied$();
    };
    const { delta } = sync;
    super.table(tab, {
      load: async (tx, read) => then(await sync.load(tx, read)),
      ...(delta === undefined
        ? {}
        : { delta: async (tx, after, read) => then(await delta.call(sync, tx, after, read)) }),
    });
  }
}

const { values } = parseArgs({ options: { url: { type: 'string' }, 'password-file': { type: 'string' } } });
const send = (message: FromBox): void => void process.send?.(message);
if (values.url === undefined || process.send === undefined) {
  console.error('usage: visibility-box.ts --url URL [--password-file FILE] (forked, with an IPC channel)');
  process.exit(2);
}

const sql = connectPostgres(
  { url: values.url, passwordFile: values['password-file'] ?? null },
  { applicationName: 'doorman-bench-b' },
);
const replica = new ObservedReplica(sql, { log: (line) => console.error(`box B: ${line}`) });
const sessions = new PgSessions(sql, replica, { clock: systemClock });
let gc = watchGc();
const watching = new Map<string, { n: number; username: string }>();
const seen: Array<[number, number, boolean]> = [];
const visible = (key: string, username: string): boolean =>
  sessions.find({ kind: 'ip', value: key })?.username === username;

replica.applied$ = () => {
  const at = epochNow();
  for (const [key, { n, username }] of watching) {
    if (!visible(key, username)) continue;
    seen.push([n, at, false]);
    watching.delete(key);
  }
};

process.on('message', (message: ToBox) => {
  if ('watch' in message) {
    const [n, key, username] = message.watch;
    if (visible(key, username)) seen.push([n, epochNow(), true]);
    else watching.set(key, { n, username });
    return;
  }
  send({ seen, unseen: watching.size, gc: gc.stop() });
  void replica
    .close()
    .then(() => sql.end({ timeout: 2 }))
    .finally(() => process.connected && process.disconnect());
});

try {
  const started = performance.now();
  await replica.start();
  send({ ready: true, loadMs: Math.round(performance.now() - started), size: sessions.size });
  gc.stop();
  gc = watchGc(); // from here on: what B's pauses add to the visibility
} catch (error) {
  send({ failed: (error as Error).message });
  await sql.end({ timeout: 1 });
  if (process.connected) process.disconnect();
}
