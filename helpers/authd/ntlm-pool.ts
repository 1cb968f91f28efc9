import { spawn, type ChildProcess } from 'node:child_process';
import { systemClock, type Clock } from '../../lib/clock.ts';
import { InvalidInputError } from '../../lib/errors.ts';
import { MAX_NEGOTIATE_LINE_BYTES } from '../../lib/helper-protocol/negotiate.ts';
import type { NtlmBackend, NtlmLease, NtlmLeaseKind } from '../../lib/seamless/acceptors.ts';

/**
 * A small on-demand pool of Samba `ntlm_auth` processes for authd's NTLM legs (docs/seamless-design.md §1–2):
 * `--helper-protocol=squid-2.5-ntlmssp` for raw NTLMSSP, `--helper-protocol=gss-spnego` for NTLM inside
 * SPNEGO. A handshake leases one process from its `YR` to its final answer (ntlm_auth keeps the NTLM state
 * between the legs); the next `YR` on the same process starts over, so a process serves handshake after
 * handshake. ntlm_auth costs ~16 MB a process, so processes start when first needed (none before the first
 * NTLM client), at most `maxNtlmssp` / `maxSpnego` of them; beyond that leases queue. One process per kind
 * stays warm once started; the others are stopped after `idleMs` without a lease.
 *
 * ntlm_auth answers every request line with exactly one reply line (checked on Samba 4.17 with good, wrong
 * and garbage input: `TT`, `AF`, `NA`, `BH`). A process that exits, writes a line longer than the cap, writes
 * something that is not a reply, or does not answer in time is killed and forgotten; the next lease starts a
 * fresh one. Its stderr goes to the log, cut short (it never carries tokens, only Samba's messages).
 *
 * gss-spnego as user proxy does NTLM inside SPNEGO with the member's `private/` unreadable (root 0700;
 * checked on a joined member, lab dc-up.sh + member-up.sh): it needs winbindd's privileged pipe, as
 * squid-2.5-ntlmssp does, not secrets.tdb.
 */
export interface NtlmPoolOptions {
  /** The member's smb.conf (`--configfile=`). */
  smbConf: string;
  /** Samba's ntlm_auth; /usr/bin/ntlm_auth by default. */
  ntlmAuth?: string;
  /** At most this many squid-2.5-ntlmssp processes. */
  maxNtlmssp: number;
  /** At most this many gss-spnego processes. */
  maxSpnego: number;
  /** A process (beyond the one warm per kind) with no lease for longer than this is stopped. */
  idleMs: number;
  log: (line: string) => void;
  /** A step not answered within this is our failure: the process is killed (default 10 s). */
  stepTimeoutMs?: number;
  /** A lease not granted within this (every process busy) is refused (default 10 s). */
  leaseTimeoutMs?: number;
  clock?: Clock;
  /** How often idle processes are looked for (default: idleMs, between 1 s and 30 s). */
  sweepMs?: number;
}

export type NtlmPool = NtlmBackend & {
  /** Stop every process; waiting and later leases are refused. */
  close(): Promise<void>;
  /** How many processes are running. */
  size(): number;
  /** How many of them are leased to a handshake now. */
  leased(): number;
  /** How many handshakes wait for a process (every one is leased, and the pool is at its size). */
  waiting(): number;
};

/** ntlm_auth's replies are tokens like the requests: the same 64 KiB cap. */
const MAX_REPLY_BYTES = MAX_NEGOTIATE_LINE_BYTES;
/** stderr lines are logged up to this many characters, a few per process start. */
const MAX_STDERR_CHARS = 300;
const REPLY_CODES = new Set(['TT', 'AF', 'NA', 'BH']);

const PROTOCOL: Record<NtlmLeaseKind, string> = {
  ntlmssp: 'squid-2.5-ntlmssp',
  'gss-spnego': 'gss-spnego',
};

interface Pending {
  resolve: (line: string) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

interface Proc {
  kind: NtlmLeaseKind;
  child: ChildProcess;
  pid: number | undefined;
  leased: boolean;
  dead: boolean;
  lastUsed: number;
  pending: Pending | undefined;
  /** Bytes of an unfinished reply line. */
  partial: string;
}

interface Waiter {
  resolve: (proc: Proc) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export function createNtlmPool(options: NtlmPoolOptions): NtlmPool {
  const { smbConf, log } = options;
  const ntlmAuth = options.ntlmAuth ?? '/usr/bin/ntlm_auth';
  const clock = options.clock ?? systemClock;
  const stepTimeoutMs = options.stepTimeoutMs ?? 10_000;
  const leaseTimeoutMs = options.leaseTimeoutMs ?? 10_000;
  const max: Record<NtlmLeaseKind, number> = { ntlmssp: options.maxNtlmssp, 'gss-spnego': options.maxSpnego };
  for (const [field, value] of [
    ['maxNtlmssp', options.maxNtlmssp],
    ['maxSpnego', options.maxSpnego],
    ['idleMs', options.idleMs],
    ['stepTimeoutMs', stepTimeoutMs],
    ['leaseTimeoutMs', leaseTimeoutMs],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new InvalidInputError(field, `${String(value)} is not a whole number of at least 1`);
    }
  }
  if (smbConf === '') throw new InvalidInputError('smbConf', 'the path is empty');

  const procs: Record<NtlmLeaseKind, Proc[]> = { ntlmssp: [], 'gss-spnego': [] };
  const waiters: Record<NtlmLeaseKind, Waiter[]> = { ntlmssp: [], 'gss-spnego': [] };
  let closed = false;

  const forget = (proc: Proc, why: string) => {
    if (proc.dead) return;
    proc.dead = true;
    const list = procs[proc.kind];
    const at = list.indexOf(proc);
    if (at !== -1) list.splice(at, 1);
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
    const pending = proc.pending;
    proc.pending = undefined;
    if (pending !== undefined) {
      clearTimeout(pending.timer);
      pending.reject(new Error(why));
    }
    if (why !== 'idle' && why !== 'the pool is closed')
      log(`ntlm_auth (${proc.kind}) pid ${proc.pid}: ${why}; replaced on next use`);
    // A waiter may now start a process in the freed slot.
    serveWaiters(proc.kind);
  };

  const onStdout = (proc: Proc, chunk: Buffer) => {
    let text = proc.partial + chunk.toString('latin1');
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n')) {
      const line = text.slice(0, nl);
      text = text.slice(nl + 1);
      if (line.length > MAX_REPLY_BYTES) {
        forget(proc, `wrote a line longer than ${MAX_REPLY_BYTES} bytes`);
        return;
      }
      const pending = proc.pending;
      if (pending === undefined) {
        forget(proc, 'wrote a line nobody asked for');
        return;
      }
      const code = line.slice(0, 2);
      if (!REPLY_CODES.has(code) || (line.length > 2 && line[2] !== ' ')) {
        forget(proc, `answered ${JSON.stringify(line.slice(0, 16))}, not TT, AF, NA or BH`);
        return;
      }
      proc.pending = undefined;
      clearTimeout(pending.timer);
      pending.resolve(line);
    }
    if (text.length > MAX_REPLY_BYTES) {
      forget(proc, `wrote a line longer than ${MAX_REPLY_BYTES} bytes`);
      return;
    }
    proc.partial = text;
  };

  const launch = (kind: NtlmLeaseKind): Proc => {
    const child = spawn(ntlmAuth, [`--helper-protocol=${PROTOCOL[kind]}`, `--configfile=${smbConf}`], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const proc: Proc = {
      kind,
      child,
      pid: child.pid,
      leased: false,
      dead: false,
      lastUsed: clock.now(),
      pending: undefined,
      partial: '',
    };
    procs[kind].push(proc);
    child.stdout?.on('data', (chunk: Buffer) => onStdout(proc, chunk));
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      for (let nl = stderr.indexOf('\n'); nl !== -1; nl = stderr.indexOf('\n')) {
        const line = stderr.slice(0, nl).trim();
        stderr = stderr.slice(nl + 1);
        if (line !== '') log(`ntlm_auth (${kind}): ${line.slice(0, MAX_STDERR_CHARS)}`);
      }
      if (stderr.length > MAX_STDERR_CHARS) stderr = stderr.slice(0, MAX_STDERR_CHARS);
    });
    child.stdin?.on('error', () => {}); // EPIPE when it died: the exit handler reports it
    child.on('error', (error) => forget(proc, `could not run ${ntlmAuth}: ${error.message}`));
    child.on('exit', (code, signal) => forget(proc, `exited (${signal ?? `code ${code}`})`));
    return proc;
  };

  const leaseOf = (proc: Proc): NtlmLease => {
    let released = false;
    return {
      step(line) {
        if (released) return Promise.reject(new Error('the lease was released'));
        if (proc.dead) return Promise.reject(new Error(`ntlm_auth (${proc.kind}) is gone`));
        if (proc.pending !== undefined) return Promise.reject(new Error('a step is already under way'));
        if (line.includes('\n')) return Promise.reject(new Error('a request line holds a line feed'));
        proc.lastUsed = clock.now();
        return new Promise<string>((resolve, reject) => {
          const timer = setTimeout(
            () => forget(proc, `did not answer within ${stepTimeoutMs} ms`),
            stepTimeoutMs,
          );
          proc.pending = { resolve, reject, timer };
          proc.child.stdin?.write(`${line}\n`);
        });
      },
      release() {
        if (released) return;
        released = true;
        proc.leased = false;
        proc.lastUsed = clock.now();
        // Released mid-step (the handshake gave up waiting): its answer would reach the next handshake.
        if (proc.pending !== undefined) forget(proc, 'released with a step under way');
        else serveWaiters(proc.kind);
      },
    };
  };

  function serveWaiters(kind: NtlmLeaseKind): void {
    const queue = waiters[kind];
    while (queue.length > 0 && !closed) {
      const idle = procs[kind].find((p) => !p.leased && !p.dead);
      const proc = idle ?? (procs[kind].length < max[kind] ? launch(kind) : undefined);
      if (proc === undefined) return;
      const waiter = queue.shift() as Waiter;
      clearTimeout(waiter.timer);
      proc.leased = true;
      waiter.resolve(proc);
    }
  }

  // Idle processes beyond the warm one per kind are stopped; the sweep does not keep authd alive.
  const sweep = setInterval(
    () => {
      const now = clock.now();
      for (const kind of ['ntlmssp', 'gss-spnego'] as const) {
        const idle = procs[kind].filter((p) => !p.leased && now - p.lastUsed > options.idleMs);
        const keep = procs[kind].length === idle.length ? 1 : 0;
        for (const proc of idle.slice(keep)) forget(proc, 'idle');
      }
    },
    options.sweepMs ?? Math.max(1000, Math.min(options.idleMs, 30_000)),
  );
  sweep.unref();

  return {
    async lease(kind) {
      if (kind !== 'ntlmssp' && kind !== 'gss-spnego') {
        throw new InvalidInputError('kind', `${JSON.stringify(kind)} is not one of "ntlmssp", "gss-spnego"`);
      }
      if (closed) throw new Error('the ntlm_auth pool is closed');
      const proc = await new Promise<Proc>((resolve, reject) => {
        const timer = setTimeout(() => {
          const queue = waiters[kind];
          const at = queue.indexOf(waiter);
          if (at !== -1) queue.splice(at, 1);
          reject(
            new Error(`all ${max[kind]} ntlm_auth (${kind}) processes stayed busy for ${leaseTimeoutMs} ms`),
          );
        }, leaseTimeoutMs);
        const waiter: Waiter = { resolve, reject, timer };
        waiters[kind].push(waiter);
        serveWaiters(kind);
      });
      return leaseOf(proc);
    },
    async close() {
      closed = true;
      clearInterval(sweep);
      for (const kind of ['ntlmssp', 'gss-spnego'] as const) {
        for (const waiter of waiters[kind].splice(0)) {
          clearTimeout(waiter.timer);
          waiter.reject(new Error('the ntlm_auth pool is closed'));
        }
      }
      const all = [...procs.ntlmssp, ...procs['gss-spnego']];
      await Promise.all(
        all.map(
          (proc) =>
            new Promise<void>((resolve) => {
              if (proc.child.exitCode !== null || proc.child.signalCode !== null) return resolve();
              proc.child.once('exit', () => resolve());
              forget(proc, 'the pool is closed');
            }),
        ),
      );
    },
    size: () => procs.ntlmssp.length + procs['gss-spnego'].length,
    leased: () => [...procs.ntlmssp, ...procs['gss-spnego']].filter((p) => p.leased).length,
    waiting: () => waiters.ntlmssp.length + waiters['gss-spnego'].length,
  };
}
