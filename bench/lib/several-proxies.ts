/**
 * Several proxies on PostgreSQL beside one on SQLite (issue 15's bench), in one run: a throwaway PostgreSQL 15
 * and a SQLite session DB each preloaded with SESSIONS (1,000,000) live sessions on the same keys, then
 *
 *   1. logins/s and p99 straight into the store (store.sessions.start(), CALLERS callers in this process):
 *      PgSessions (box A: its Replica holding every session) and openSqliteStore, alternately, RUNS times;
 *   2. A→B visibility: box A (this process) logging in at VIS_RATE/s, box B a process of its own
 *      (visibility-box.ts) noting when its copy holds each login;
 *   3. authd's memory: a real doorman-authd on each store, RSS once loaded and after the lookups;
 *   4. a full reload of every session: Replica.start() in box A and box B, and authd's cold start until its
 *      first OK answer;
 *   5. session lookups/s through the real shim (LOOKUPS over all the keys, INFLIGHT at once), with no logins
 *      and while box A (this process) logs in at LOGIN_RATE/s (on SQLite: this process as the web app);
 *   and where a PostgreSQL session's memory goes (session-memory.ts, MEMORY_PARTS=1).
 *
 * Run by bench/several-proxies.sh, which gives the environment: OUT (the JSONL), SCRATCH (a directory of its
 * own, removed at the end), KIT, MACHINE (the kit's machine facts as JSON), RUN_ID, and the knobs. Records
 * are appended to OUT as the kit's are ({ label, ..., run_id, machine }); machine.date is each figure's start.
 * Nothing is asserted. Every process started here is stopped by its handle; the PostgreSQL data is removed.
 */
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { systemClock } from '../../lib/clock.ts';
import { connectPostgres } from '../../lib/store/postgres/connect.ts';
import { Replica } from '../../lib/store/postgres/replica.ts';
import { PgSessions } from '../../lib/store/postgres/sessions.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { openSqliteStore } from '../../lib/store/sqlite-store.ts';
import type { SessionRepository } from '../../lib/store/store.ts';
import { shimLookups, startAuthd, type Authd } from './authd-box.ts';
import { preloadSessions, startBenchPostgres, type BenchPostgres } from './bench-postgres.ts';
import { benchKey, seededRandom } from './figures.ts';
import { watchGc, type GcPauses } from './gc-pauses.ts';
import { profiled } from './inspector-profile.ts';
import { driveLogins, steadyLogins, type LoginRate } from './login-rate.ts';
import { cpuMsOf, cpuMsOfTree } from './proc-cpu.ts';
import { memoryOf } from './proc-memory.ts';
import { measureVisibility } from './visibility.ts';

const execFileAsync = promisify(execFile);
const num = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name}: not a number: ${process.env[name]}`);
  return value;
};
const SESSIONS = num('SESSIONS', 1_000_000);
const CALLERS = num('CALLERS', 100);
const DURATION_MS = num('DURATION', 10) * 1000;
const WARMUP_MS = num('WARMUP', 1) * 1000;
const RUNS = num('RUNS', 2);
const VIS_RATE = num('VIS_RATE', 1000);
const LOGIN_RATE = num('LOGIN_RATE', 1000);
const LOOKUPS = num('LOOKUPS', 500_000);
const INFLIGHT = num('INFLIGHT', 100);
const PROFILE = process.env.PROFILE === '1';
const MEMORY_PARTS = process.env.MEMORY_PARTS !== '0';
const SERVICE_USER = process.env.SERVICE_USER ?? 'proxy';
const need = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '')
    throw new Error(`${name} is not set (run bench/several-proxies.sh)`);
  return value;
};
const OUT = need('OUT');
const D = need('SCRATCH');
const KIT = need('KIT');
const MACHINE = JSON.parse(need('MACHINE')) as Record<string, unknown>;
const RUN_ID = need('RUN_ID');
const PG = 'PostgreSQL';
const LITE = 'SQLite';
const M = SESSIONS >= 1_000_000 ? `${SESSIONS / 1_000_000}M` : String(SESSIONS);

type Engine = typeof PG | typeof LITE;
/** Append one record (the kit's shape) and print it on one line. */
function record(label: string, engine: Engine, figure: string, startedAt: number, fields: object): void {
  const seconds = Math.max(1, Math.round((Date.now() - startedAt) / 1000));
  const machine = { ...MACHINE, date: new Date(startedAt).toISOString().replace(/\.\d+Z$/, 'Z') };
  const line = { label, engine, figure, seconds, sessions: SESSIONS, ...fields, run_id: RUN_ID, machine };
  appendFileSync(OUT, `${JSON.stringify(line)}\n`);
  console.log(`  ${label}: ${JSON.stringify(fields)}`);
}
const step = (what: string) => console.log(`=== ${what}`);
const mb = (kb: number) => Math.round(kb / 1024);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const profile = <T>(name: string, work: () => Promise<T>): Promise<T> =>
  PROFILE ? profiled(join(dirname(OUT), `several-proxies.${name}.cpuprofile`), work) : work();

rmSync(D, { recursive: true, force: true });
mkdirSync(D, { recursive: true });
const cleanups: Array<() => unknown> = [];
try {
  await main();
} finally {
  for (const cleanup of cleanups.reverse())
    await Promise.resolve(cleanup()).catch((e: unknown) => console.error(e));
  rmSync(D, { recursive: true, force: true });
}

async function main(): Promise<void> {
  // --- preload: PostgreSQL by COPY (here), SQLite through the store's own start() (make-sessions.ts) --------------
  step(`preload ${SESSIONS} sessions on both engines`);
  const liteState = join(D, 'sqlite-state');
  mkdirSync(liteState);
  const liteDb = join(liteState, 'doorman.db');
  const t0 = Date.now();
  // in another process, meanwhile
  const litePreload = execFileAsync(
    process.execPath,
    [join(import.meta.dirname, 'make-sessions.ts'), '--db', liteDb, '--count', String(SESSIONS)],
    { encoding: 'utf8' },
  );
  const pg: BenchPostgres = await startBenchPostgres(SERVICE_USER);
  cleanups.push(() => pg.destroy());
  const postmaster = Number(
    readFileSync(join(pg.server.psql('SHOW data_directory').trim(), 'postmaster.pid'), 'utf8').split('\n')[0],
  );
  const pgPreload = await preloadSessions(pg.sql, SESSIONS);
  record(
    `preload ${M} sessions, PostgreSQL (COPY, one change number; VACUUM ANALYZE)`,
    PG,
    'preload',
    t0,
    pgPreload,
  );
  const lite = JSON.parse((await litePreload).stdout) as { ms: number; rows: number };
  record(`preload ${M} sessions, SQLite (SessionStore.start() in one transaction)`, LITE, 'preload', t0, {
    ms: lite.ms,
    rows: lite.rows,
  });

  // --- box A: this process's PgSessions, every session loaded (a full reload, timed) -------------------------------
  step('box A: Replica.start() of every session');
  const sqlA = connectPostgres(pg.settings, { applicationName: 'doorman-bench-a' });
  const replicaA = new Replica(sqlA, { log: (line) => console.error(`box A: ${line}`) });
  const pgSessions = new PgSessions(sqlA, replicaA, { clock: systemClock });
  cleanups.push(async () => {
    await pgSessions.drain();
    await replicaA.close();
    await sqlA.end({ timeout: 2 });
  });
  let t = Date.now();
  const started = performance.now();
  await profile('replica-start', () => replicaA.start());
  const heap = process.memoryUsage();
  record(`full reload of ${M}: Replica.start() in box A (this process)`, PG, 'reload', t, {
    ms: Math.round(performance.now() - started),
    loaded: pgSessions.size,
    process_heap_used_mb: Math.round(heap.heapUsed / 1048576),
    process_rss_mb: Math.round(heap.rss / 1048576),
  });
  const liteStore = openSqliteStore(openDatabase(liteDb), { passwordFile: join(D, 'bind-password') });
  cleanups.push(() => liteStore.close());

  // --- 1. logins/s and p99 at SESSIONS live sessions ----------------------------------------------------------------
  const logins = async (engine: Engine, sessions: Pick<SessionRepository, 'start'>, run: number) => {
    t = Date.now();
    // CPU (this process's, PostgreSQL's) and GC pauses over the measured seconds only
    let cpu = process.cpuUsage();
    let pgMs = cpuMsOfTree(postmaster);
    let gc = watchGc();
    let pauses: GcPauses | undefined;
    const measuring = (on: boolean) => {
      if (on) {
        cpu = process.cpuUsage();
        pgMs = cpuMsOfTree(postmaster);
        gc.stop();
        gc = watchGc();
        return;
      }
      cpu = process.cpuUsage(cpu);
      pgMs = cpuMsOfTree(postmaster) - pgMs;
      pauses = gc.stop();
    };
    const options = {
      callers: CALLERS,
      keys: SESSIONS,
      warmupMs: WARMUP_MS,
      durationMs: DURATION_MS,
      measuring,
    };
    const work = () => driveLogins(sessions, { ...options, offset: run * 100_003 });
    const name = `logins-${engine === PG ? 'pg' : 'sqlite'}`;
    const r: LoginRate = await (run === 0 ? profile(name, work) : work());
    const per = (ms: number) => (r.logins === 0 ? null : Math.round((ms * 1000) / r.logins));
    record(
      `logins at ${M} live sessions, ${engine}, ${CALLERS} callers (store.sessions.start())`,
      engine,
      'logins',
      t,
      {
        ...r,
        callers: CALLERS,
        driver_cpu_us_per_login: per((cpu.user + cpu.system) / 1000),
        ...(engine === PG ? { postgres_cpu_us_per_login: per(pgMs) } : {}),
        gc: pauses,
      },
    );
  };
  for (let run = 0; run < RUNS; run++) {
    step(`1. logins at ${SESSIONS} sessions, run ${run + 1} of ${RUNS}`);
    await logins(PG, pgSessions, run);
    await logins(LITE, liteStore.sessions, run);
  }

  // --- 2. A→B visibility ----------------------------------------------------------------------------------------------
  step(
    `2. A→B visibility: box A logs in at ${VIS_RATE}/s, box B (its own process) loads every session first`,
  );
  t = Date.now();
  const vis = await measureVisibility({
    sessions: pgSessions,
    store: pg.settings,
    rate: VIS_RATE,
    durationMs: DURATION_MS,
    keys: SESSIONS,
  });
  record(`full reload of ${M}: Replica.start() in box B (its own process)`, PG, 'reload', t, {
    ms: vis.b_load_ms,
    loaded: vis.b_sessions,
  });
  record(
    `A→B visibility, box A logging in at ${VIS_RATE}/s`,
    PG,
    'visibility',
    Date.now() - DURATION_MS - 1500,
    {
      answered_to_b_ms: vis.answered_to_b_ms,
      asked_to_b_ms: vis.asked_to_b_ms,
      unseen: vis.unseen,
      late: vis.late,
      a_logins: vis.a_logins.logins,
      a_login_p99_ms: vis.a_logins.lat_ms.p99,
      a_errors: vis.a_logins.errors,
      a_gc: vis.a_gc,
      b_gc: vis.b_gc,
    },
  );

  // --- 3, 4, 5: authd on each store --------------------------------------------------------------------------------
  const requests = join(D, 'lookups.txt');
  const rand = seededRandom(5);
  writeFileSync(
    requests,
    Array.from({ length: LOOKUPS }, () => benchKey(Math.floor(rand() * SESSIONS))).join('\n') + '\n',
  );
  const pgState = join(D, 'pg-state');
  mkdirSync(pgState);
  const configs: Record<
    Engine,
    { config: string; stateDir: string; writer: Pick<SessionRepository, 'start'>; writerIs: string }
  > = {
    [PG]: {
      config: join(D, 'pg.json'),
      stateDir: pgState,
      writer: pgSessions,
      writerIs: 'box A (another process, its own PostgreSQL client)',
    },
    [LITE]: {
      config: join(D, 'sqlite.json'),
      stateDir: liteState,
      writer: liteStore.sessions,
      writerIs: "the web app's store on this box (another process, the same DB)",
    },
  };
  writeFileSync(
    configs[PG].config,
    JSON.stringify({
      stateDir: pgState,
      serviceUser: SERVICE_USER,
      store: { kind: 'postgres', ...pg.serviceSettings },
    }),
  );
  writeFileSync(configs[LITE].config, JSON.stringify({ stateDir: liteState, serviceUser: SERVICE_USER }));
  for (const engine of [PG, LITE] as const) {
    const { config, stateDir, writer, writerIs } = configs[engine];
    step(`3-5. doorman-authd on ${engine} with ${SESSIONS} sessions`);
    t = Date.now();
    const authd: Authd = await startAuthd({
      config,
      stateDir,
      logFile: join(D, `authd-${engine}.log`),
      knownKey: benchKey(SESSIONS - 1),
    });
    cleanups.push(() => authd.stop());
    record(`full reload of ${M}: authd's cold start to its first OK`, engine, 'reload', t, {
      ms: authd.coldStartMs,
      answers_before_ok: authd.notYet,
    });
    await sleep(1000);
    const loaded = memoryOf(authd.pid);
    const cpuLoaded = cpuMsOf(authd.pid);
    record(`authd's memory with ${M} sessions, once loaded`, engine, 'memory', Date.now(), {
      rss_mb: mb(loaded.rss),
      pss_mb: mb(loaded.pss),
      cpu_ms_to_load: cpuLoaded,
    });
    for (let run = 0; run < RUNS; run++) {
      for (const rate of [0, LOGIN_RATE]) {
        t = Date.now();
        const writing = rate === 0 ? undefined : steadyLogins(writer, { rate, keys: SESSIONS });
        const r = await shimLookups({
          kit: KIT,
          socket: authd.socket,
          requests,
          inflight: INFLIGHT,
          authdPid: authd.pid,
          label: `shim ${engine}`,
        });
        const w = await writing?.stop();
        const how = rate === 0 ? 'no logins' : `${writerIs} logging in at ${rate}/s`;
        record(
          `session lookups through the shim, ${engine} authd, ${how}`,
          engine,
          rate === 0 ? 'lookups' : 'lookups-writing',
          t,
          {
            ...r,
            inflight: INFLIGHT,
            login_rate: rate,
            ...(w === undefined
              ? {}
              : {
                  logins_answered: w.logins,
                  login_p99_ms: w.lat_ms.p99,
                  login_errors: w.errors,
                  ...(w.error === undefined ? {} : { login_error: w.error }),
                }),
          },
        );
      }
    }
    const after = memoryOf(authd.pid);
    record(`authd's memory with ${M} sessions, after the lookups`, engine, 'memory-after', Date.now(), {
      rss_mb: mb(after.rss),
      pss_mb: mb(after.pss),
      lookups: LOOKUPS * RUNS * 2,
    });
    await authd.stop();
  }

  // --- where a PostgreSQL session's memory goes ---------------------------------------------------------------------
  if (MEMORY_PARTS) {
    step(
      `where the memory of ${SESSIONS} PostgreSQL sessions goes (session-memory.ts, V8 heap and buffers after GC)`,
    );
    t = Date.now();
    const out = execFileSync(
      process.execPath,
      ['--expose-gc', join(import.meta.dirname, 'session-memory.ts'), '--count', String(SESSIONS)],
      { encoding: 'utf8' },
    );
    record(
      `where the memory of ${M} sessions goes (SessionTable, V8 heap and buffers)`,
      PG,
      'memory-parts',
      t,
      JSON.parse(out) as object,
    );
  }
}
