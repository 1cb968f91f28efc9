import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { start, type Started } from './processes.ts';
import { run, type RunOptions, type RunResult } from './run.ts';

/**
 * A network namespace of the test's own, joined to the host by a veth pair on a private /30
 * (10.213.N.1 on the host side, 10.213.N.2 inside), so that processes in the host namespace reach servers in
 * it by address while the servers' ports (53, 88, 389, 445…) cannot clash with anything on the host. There is no
 * default route inside and no forwarding on the host: nothing in it reaches further than the host.
 *
 * Commands run inside with `ip netns exec`, which also gives each one a mount namespace of its own (mounts
 * there don't propagate back); in it, files of ours are bind-mounted over /etc/hosts, /etc/resolv.conf and the
 * like, so the host's files are never touched.
 */
export interface Netns {
  readonly name: string;
  /** The host side's address (10.213.N.1). */
  readonly hostAddress: string;
  /** The namespace side's address (10.213.N.2). */
  readonly address: string;
  /** The host side's interface name. */
  readonly hostInterface: string;
  /** Run a command inside, with the bind mounts, to its end. */
  exec(command: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /** Start a long-running command inside, with the bind mounts (ip execs sh, sh execs it: same PID). */
  spawn(command: string, args: readonly string[], env?: NodeJS.ProcessEnv): Started;
  /** PIDs of every process inside. */
  pids(): number[];
  /** SIGKILL every process inside, delete the veth pair and the namespace. Synchronous (usable on exit). */
  remove(): void;
}

export interface BindMount {
  /** A file or directory of ours. */
  source: string;
  /** What it hides inside the namespace's commands, e.g. /etc/hosts. */
  target: string;
}

/**
 * A namespace name for this process: `${prefix}${pid}-${6 hex digits}`. The PID tells removeStaleNetns whether
 * the owner still runs; the random part names the veth pair.
 */
export function netnsName(prefix: string): string {
  return `${prefix}${process.pid}-${randomBytes(3).toString('hex')}`;
}

/** Create namespace `name` (from netnsName) with its loopback up and a veth pair to the host. */
export function createNetns(name: string, mounts: readonly BindMount[]): Netns {
  const hostInterface = vethName(name, 'h');
  const innerInterface = vethName(name, 'n');
  const subnet = freeSubnet();
  const hostAddress = `10.213.${subnet}.1`;
  const address = `10.213.${subnet}.2`;
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const remove = () => removeNetns(name);
  try {
    ip('netns', 'add', name);
    ip('-n', name, 'link', 'set', 'lo', 'up');
    ip('link', 'add', hostInterface, 'type', 'veth', 'peer', 'name', innerInterface, 'netns', name);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', hostInterface);
    ip('link', 'set', hostInterface, 'up');
    ip('-n', name, 'addr', 'add', `${address}/30`, 'dev', innerInterface);
    ip('-n', name, 'link', 'set', innerInterface, 'up');
  } catch (error) {
    remove();
    throw error;
  }

  // sh -c 'mount --bind SRC DST …; exec CMD ARGS' sh SRC DST … -- CMD ARGS
  const script =
    'while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 111; shift 2; done; shift; exec "$@"';
  const wrap = (command: string, args: readonly string[]) => [
    'netns',
    'exec',
    name,
    'sh',
    '-c',
    script,
    'sh',
    ...mounts.flatMap((m) => [m.source, m.target]),
    '--',
    command,
    ...args,
  ];
  return {
    name,
    hostAddress,
    address,
    hostInterface,
    exec: (command, args, options) => run('ip', wrap(command, args), options),
    spawn: (command, args, env) => start('ip', wrap(command, args), env),
    pids: () => netnsPids(name),
    remove,
  };
}

/**
 * Remove the namespaces named `prefix*` (see netnsName) whose owner process is gone (killed before its afterAll),
 * and their directories `${tmpdir()}/${name}-*`. Best effort; namespaces of live processes are left alone.
 */
export function removeStaleNetns(prefix: string): void {
  let names: string[];
  try {
    names = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.split(' ')[0] ?? '')
      .filter((name) => name.startsWith(prefix));
  } catch {
    return;
  }
  for (const name of names) {
    const owner = Number(name.slice(prefix.length).split('-')[0]);
    if (Number.isInteger(owner) && isAlive(owner)) continue;
    removeNetns(name);
    for (const entry of readdirSync(tmpdir()))
      if (entry.startsWith(`${name}-`)) rmSync(join(tmpdir(), entry), { recursive: true, force: true });
  }
}

function removeNetns(name: string): void {
  for (const pid of netnsPids(name)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // Killed processes leave the namespace when they are reaped; until then the namespace lives on (harmless).
  const quiet = { stdio: 'ignore' } as const;
  try {
    execFileSync('ip', ['link', 'del', vethName(name, 'h')], quiet);
  } catch {
    // gone with the namespace's end of the pair, or never made
  }
  try {
    execFileSync('ip', ['netns', 'del', name], quiet);
  } catch {
    // never made
  }
}

/** The processes running in namespace `name` (none when it does not exist). */
export function netnsPids(name: string): number[] {
  try {
    return execFileSync('ip', ['netns', 'pids', name], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Interface names are at most 15 bytes: "dm-" + the name's random part + "-h" (host side) or "-n". */
function vethName(name: string, side: 'h' | 'n'): string {
  return `dm-${name.slice(-6)}-${side}`;
}

/** A 10.213.N.0/30 that no host interface uses yet (N from 0 to 255, starting at a random one). */
function freeSubnet(): number {
  const used = execFileSync('ip', ['-4', '-o', 'addr', 'show'], { encoding: 'utf8' });
  const first = Math.floor(Math.random() * 256);
  for (let i = 0; i < 256; i++) {
    const n = (first + i) % 256;
    if (!used.includes(` 10.213.${n}.`)) return n;
  }
  throw new Error('no free 10.213.N.0/30 subnet for a test namespace');
}
