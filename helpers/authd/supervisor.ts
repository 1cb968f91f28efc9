import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Config } from '../../lib/config/schema.ts';
import type { Log } from '../../lib/log.ts';

export { authdEnvironment };
import { helperSocket, runDir } from '../../lib/seamless/paths.ts';
import { authdEnvironment } from './environment.ts';
import { isAuthd, pidFilePath, runningAuthd } from './pid-file.ts';
import { probeAuthd, type ProbeResult } from './probe.ts';
import { countAuthdRestart } from '../../lib/metrics/authd.ts';

/**
 * authd for `doorman serve` on a machine without a service manager (docs/services.md): serve uses the authd
 * that answers on the sockets, whoever started it, and starts one only when none does. The one it starts runs
 * in a session of its own (detached) with no tie to serve, so serve's death, even by SIGKILL, leaves the lookups
 * answered, and the next serve finds it. Health is checked from outside, as Squid sees it: a session lookup
 * over the socket every `intervalMs`, answered within `deadlineMs`. No answer and no process (it died): another
 * is started, with backoff if they keep dying. A live process that does not answer (stopped, spinning) past its
 * start-up grace: SIGKILL, and another. stop() stops the checks only: authd goes on (`doorman authd stop`
 * stops it). Under systemd serve starts none (`doorman serve --no-authd`; the units run it).
 */
export interface AuthdSupervisorOptions {
  config: Config;
  /** The config file serve read (undefined: the default), passed on as `--config`. */
  configFile?: string | undefined;
  log: Log;
  /** The compiled entry point; dist/helpers/authd/main.js of this checkout by default. */
  script?: string;
  /** Restart delays after a start that died young: the first, doubled up to the last. */
  backoffMs?: { first: number; max: number };
  /** Health checks: how often, and how long one may take (default 1 s, 5 s). */
  intervalMs?: number;
  deadlineMs?: number;
  /** A newly started authd that has not answered yet is not judged stuck for this long (default 30 s). */
  startGraceMs?: number;
  /** The check itself (tests stand in for it); probeAuthd on the session socket by default. */
  probe?: (socketPath: string, deadlineMs: number) => Promise<ProbeResult>;
}

export interface AuthdSupervisor {
  /** Resolves once authd has answered a check (the one found running, or the one started). */
  answering(): Promise<number | undefined>;
  /** Stop checking (and starting); authd itself is left running. */
  stop(): Promise<void>;
  /** The pid of the authd in use, if known. */
  pid(): number | undefined;
}

/**
 * The entry point Squid's shims depend on: compiled (dist/, by npm run build), because Node's TypeScript
 * stripper costs about 18 MB. serve runs this file as TypeScript, beside which dist/ is two levels up.
 */
export const AUTHD_SCRIPT = import.meta.filename.endsWith('.js')
  ? join(import.meta.dirname, 'main.js')
  : join(import.meta.dirname, '..', '..', 'dist', 'helpers', 'authd', 'main.js');
/** A run this long resets the backoff: it died of something new, not of its start-up. */
const HEALTHY_MS = 60_000;
/**
 * An authd alive but not accepting (its socket gone or refusing: stopping after SIGTERM, answering what it owes
 * for at most 5 s, or handing its sockets over) is left alone this long before it counts as stuck.
 */
const NOT_ACCEPTING_MS = 10_000;
/** After SIGKILL, how long to wait for the process to be gone before starting another on its sockets. */
const KILL_WAIT_MS = 2000;

/** Where authd started by serve or `doorman authd start` logs: `<stateDir>/authd.log` (systemd's: the journal). */
export const authdLogPath = (stateDir: string): string => join(stateDir, 'authd.log');

/**
 * The command line that runs authd: small young generation (the Squid-facing process must stay small); a log
 * file of its own when it is detached, since it outlives whoever started it.
 */
export function authdArgs(script: string, configFile: string | undefined, logFile?: string): string[] {
  return [
    '--max-semi-space-size=2',
    script,
    ...(configFile === undefined ? [] : ['--config', configFile]),
    ...(logFile === undefined ? [] : ['--log-file', logFile]),
  ];
}

/**
 * authd detached, its stderr a pipe to us until it answers (what stops its start is shown where it was started),
 * then let go: authd holds nothing of its starter's, so a reader of the starter's output is not kept waiting.
 */
export function spawnDetachedAuthd(
  script: string,
  configFile: string | undefined,
  stateDir: string,
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; release(): void } {
  const child = spawn(process.execPath, authdArgs(script, configFile, authdLogPath(stateDir)), {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  child.stderr?.on('error', () => {});
  child.unref();
  return {
    child,
    release: () => {
      child.stderr?.destroy();
    },
  };
}

export function superviseAuthd(options: AuthdSupervisorOptions): AuthdSupervisor {
  const { config, log } = options;
  const script = options.script ?? AUTHD_SCRIPT;
  const backoff = options.backoffMs ?? { first: 1000, max: 30_000 };
  const intervalMs = options.intervalMs ?? 1000;
  const deadlineMs = options.deadlineMs ?? 5000;
  const startGraceMs = options.startGraceMs ?? 30_000;
  const probe = options.probe ?? probeAuthd;
  const socket = helperSocket(config.stateDir, 'session');
  const pidFile = pidFilePath(runDir(config.stateDir));
  const env = authdEnvironment(config);

  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  /** The authd started here last, while it may still be starting. */
  let started: { pid: number; at: number; answered: boolean } | undefined;
  let inUse: number | undefined;
  let delay = backoff.first;
  let notBefore = 0;
  let healthy = true;
  let resolveAnswering: (pid: number | undefined) => void = () => {};
  let releaseStarted: () => void = () => {};
  let notAcceptingSince: number | undefined;
  /** The authd replaced next was killed as stuck (else it died by itself). */
  let killed = false;
  const answering = new Promise<number | undefined>((resolve) => (resolveAnswering = resolve));

  const startOne = (): void => {
    // detached: a session and process group of its own, so nothing aimed at serve's group reaches it.
    const { child, release } = spawnDetachedAuthd(script, options.configFile, config.stateDir, env);
    releaseStarted = release;
    child.once('error', (error) => log(`authd: cannot start: ${error.message}`));
    // Only to log how it ended while serve is here to see it; the checks decide what to do.
    child.once('exit', (code, signal) => {
      if (!stopping) log(`authd (pid ${child.pid}) exited (${signal ?? `code ${code}`})`);
    });
    if (child.pid === undefined) return;
    started = { pid: child.pid, at: Date.now(), answered: false };
    log(
      `authd started (pid ${child.pid}), in a session of its own; its log: ${authdLogPath(config.stateDir)}`,
    );
  };

  const check = async (): Promise<void> => {
    const result = await probe(socket, deadlineMs);
    if (stopping) return;
    const now = Date.now();
    if (result.ok) {
      const pid = runningAuthd(pidFile) ?? started?.pid;
      if (pid !== inUse || !healthy)
        log(`authd answering (pid ${pid ?? 'unknown'}, ${Math.round(result.ms)} ms)`);
      inUse = pid;
      healthy = true;
      notAcceptingSince = undefined;
      if (started !== undefined && started.pid === pid) {
        started.answered = true;
        releaseStarted();
      }
      if (started !== undefined && now - started.at >= HEALTHY_MS) delay = backoff.first;
      resolveAnswering(pid);
      return;
    }
    const pid =
      runningAuthd(pidFile) ?? (started !== undefined && isAuthd(started.pid) ? started.pid : undefined);
    // Starting (opening the DB, loading) is not being stuck: until it has answered once, within the grace.
    const young =
      started !== undefined && started.pid === pid && !started.answered && now - started.at < startGraceMs;
    if (pid !== undefined && young) return; // still starting
    if (healthy) log(`authd not answering: ${result.detail}`);
    healthy = false;
    // Stuck is a connection accepted and left unanswered; one refused (or no socket) by a live authd is one
    // stopping or handing over: it ends by itself, and is replaced only if it stays so.
    if (pid !== undefined && result.reason !== 'timeout') {
      notAcceptingSince ??= now;
      if (now - notAcceptingSince < NOT_ACCEPTING_MS) return;
    }
    if (pid !== undefined) {
      log(
        result.reason === 'timeout'
          ? `authd (pid ${pid}) is alive but did not answer within ${deadlineMs} ms: SIGKILL, and another`
          : `authd (pid ${pid}) is alive but has not accepted for ${NOT_ACCEPTING_MS / 1000} s: SIGKILL, and another`,
      );
      notAcceptingSince = undefined;
      killed = true;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
      await gone(pid, KILL_WAIT_MS);
    }
    if (stopping || now < notBefore) return;
    if (started !== undefined && now - started.at < HEALTHY_MS) {
      notBefore = now + delay;
      log(`authd died young; starting another in ${delay} ms`);
      delay = Math.min(delay * 2, backoff.max);
      started = undefined;
      return;
    }
    // A start after one that had answered (here or found running) is a restart; the first one is not.
    if (inUse !== undefined) countAuthdRestart(killed ? 'unresponsive' : 'died');
    killed = false;
    startOne();
  };

  const loop = (): void => {
    void check()
      .catch((error: unknown) =>
        log(`authd check: ${error instanceof Error ? error.message : String(error)}`),
      )
      .then(() => {
        if (!stopping) timer = setTimeout(loop, intervalMs);
      });
  };
  loop();

  return {
    answering: () => answering,
    pid: () => inUse ?? started?.pid,
    stop() {
      stopping = true;
      releaseStarted();
      if (timer !== undefined) clearTimeout(timer);
      return Promise.resolve();
    },
  };
}

/** Resolves once `pid` is no longer an authd, or after `ms`. */
async function gone(pid: number, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (isAuthd(pid) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
}
