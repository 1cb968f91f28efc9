import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { isAlive } from './netns.ts';
import { freePort, waitForPort } from './processes.ts';

/**
 * A throwaway PostgreSQL 15 cluster (Debian's `postgresql` package, see ../shared/lab/README.md): initdb in a
 * temporary directory of the postgres user's, the server on a port of its own on 127.0.0.1, fsync off. The role `doorman` signs in with a password over TCP (scram-sha-256), as a
 * box would; the superuser only over the cluster's own socket directory.
 */
export interface Postgres {
  readonly host: string;
  readonly port: number;
  /** The `doorman` role's password (tests write it to a 0600 file for store.passwordFile). */
  readonly password: string;
  /** A URL for the `doorman` role, without the password. */
  url(database?: string): string;
  /** A new, empty database owned by `doorman`. */
  createDatabase(name: string): void;
  /** Run SQL as the superuser (psql, on the socket); its output, unaligned, tuples only. */
  psql(sql: string, database?: string): string;
  /** Whether the server is running now. */
  running(): boolean;
  /** Fast shutdown (clients are cut off), and wait for it. */
  stop(): Promise<void>;
  /** Start again on the same data directory and port. */
  start(): Promise<void>;
  /**
   * SIGSTOP the server and every backend (connections stay open, nothing answers: a peer gone without a word),
   * or SIGCONT them again.
   */
  freeze(frozen: boolean): void;
  /** Stop and remove everything. */
  destroy(): Promise<void>;
}

const BIN = '/usr/lib/postgresql/15/bin';
const USER = 'postgres';

const asPostgres = (command: string, args: string[]): string =>
  execFileSync('runuser', ['-u', USER, '--', join(BIN, command), ...args], { encoding: 'utf8' });

export async function startPostgres(): Promise<Postgres> {
  const host = '127.0.0.1';
  const port = await freePort(host, []);
  const dir = mkdtempSync(join(tmpdir(), 'doorman-pg-'));
  chownSync(dir, uidOf(USER), gidOf(USER));
  const data = join(dir, 'data');
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  asPostgres('initdb', ['-D', data, '-U', USER, '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  writeFileSync(
    join(data, 'pg_hba.conf'),
    [
      'local all all trust',
      `host all doorman ${host}/32 scram-sha-256`,
      'host all all 0.0.0.0/0 reject',
    ].join('\n') + '\n',
  );
  let child: ChildProcess | undefined;
  let log = '';
  const start = async () => {
    const args = [
      // setpriv execs (runuser would fork and keep the signal from reaching postgres).
      `--reuid=${USER}`,
      `--regid=${USER}`,
      '--init-groups',
      join(BIN, 'postgres'),
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      `listen_addresses=${host}`,
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=on',
      '-c',
      'max_connections=200',
      '-c',
      'log_min_messages=warning',
    ];
    const started = spawn('setpriv', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child = started;
    started.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
    // A test run or a bench that dies before its teardown must not leave a server behind (it would outlive
    // us, orphaned): an immediate shutdown, which takes its backends along, and its files gone, when this
    // process exits.
    const onExit = () => {
      started.kill('SIGQUIT');
      // Nothing asynchronous runs at exit: wait here (at most 3 s) for it to be gone before removing its files.
      const pause = new Int32Array(new SharedArrayBuffer(4));
      for (let i = 0; i < 60 && started.pid !== undefined && isAlive(started.pid); i++)
        Atomics.wait(pause, 0, 0, 50);
      rmSync(dir, { recursive: true, force: true });
    };
    process.once('exit', onExit);
    started.once('exit', () => process.removeListener('exit', onExit));
    await waitForPort(host, port, 15_000, child);
    // Ready for connections on TCP may still be starting up: ask until it answers.
    for (let i = 0; ; i++) {
      try {
        psql('SELECT 1');
        return;
      } catch (error) {
        if (i > 100) throw new Error(`PostgreSQL did not answer: ${String(error)}\n${log}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  };
  const psql = (sql: string, database = 'postgres') =>
    execFileSync(
      'runuser',
      [
        '-u',
        USER,
        '--',
        join(BIN, 'psql'),
        '-h',
        dir,
        '-p',
        String(port),
        '-d',
        database,
        '-XAtq',
        '-v',
        'ON_ERROR_STOP=1',
        '-c',
        sql,
      ],
      { encoding: 'utf8' },
    );
  const stop = async () => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGINT');
    await exited;
  };
  await start();
  psql(`CREATE ROLE doorman LOGIN PASSWORD '${password}'`);
  return {
    host,
    port,
    password,
    url: (database = 'doorman') =>
      `postgres://doorman@${host.includes(':') ? `[${host}]` : host}:${port}/${database}`,
    createDatabase: (name) => void psql(`CREATE DATABASE "${name.replaceAll('"', '""')}" OWNER doorman`),
    psql,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    freeze: (frozen) => {
      const pid = child?.pid;
      if (pid === undefined) return;
      const backends = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
        .split('\n')
        .map((line) => Number(line.trim()))
        .filter((n) => n > 0);
      for (const p of [pid, ...backends]) process.kill(p, frozen ? 'SIGSTOP' : 'SIGCONT');
    },
    stop,
    start,
    destroy: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const uidOf = (user: string) => Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
const gidOf = (user: string) => Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());

/**
 * One cluster for a test file (started before its first test, removed after its last) and a fresh database
 * for each test, with a client connected to it as `doorman` by password (through a 0600 password file).
 */
export function usePostgres(): {
  readonly server: Postgres;
  /** This test's database (a URL for `doorman`, without the password). */
  readonly url: string;
  /** Its name (for server.psql). */
  readonly database: string;
  /** A 0600 file holding the password, as store.passwordFile. */
  readonly passwordFile: string;
} {
  let server: Postgres | undefined;
  let url = '';
  let database = '';
  let passwordFile = '';
  let count = 0;
  beforeAll(async () => {
    server = await startPostgres();
    passwordFile = join(mkdtempSync(join(tmpdir(), 'doorman-pgpw-')), 'password');
    writeFileSync(passwordFile, `${server.password}\n`, { mode: 0o600 });
  }, 60_000);
  afterAll(async () => {
    await server?.destroy();
    if (passwordFile !== '') rmSync(dirname(passwordFile), { recursive: true, force: true });
  });
  beforeEach(() => {
    database = `t${++count}`;
    server?.createDatabase(database);
    url = server?.url(database) ?? '';
  });
  return {
    get server() {
      if (server === undefined) throw new Error('PostgreSQL is not started');
      return server;
    },
    get url() {
      return url;
    },
    get database() {
      return database;
    },
    get passwordFile() {
      return passwordFile;
    },
  };
}
