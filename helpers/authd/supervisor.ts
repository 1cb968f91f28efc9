import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../lib/config/schema.ts';
import type { Log } from '../../lib/log.ts';
import { seamlessPaths, runDir } from '../../lib/seamless/paths.ts';
import { makeRunDir } from './listener.ts';

/**
 * authd as a child of `doorman serve` (docs/seamless-design.md §1): started after serve has given up root, so
 * it runs as the helper user and owns its sockets; restarted with backoff when it dies (the shims answer BH
 * meanwhile, and reconnect on their own); stopped with serve. Its stderr is serve's (its lines carry their own
 * `doorman-authd[pid]` prefix). Rejected: the shim starting authd, which would then outlive upgrades and hold
 * Squid's cache.log descriptor.
 */
export interface AuthdSupervisorOptions {
  config: Config;
  /** The config file serve read (undefined: the default), passed on as `--config`. */
  configFile?: string | undefined;
  log: Log;
  /** The compiled entry point; dist/helpers/authd/main.js of this checkout by default. */
  script?: string;
  /** Restart delays: the first, doubled on each quick death up to the last. */
  backoffMs?: { first: number; max: number };
}

export interface AuthdSupervisor {
  /** SIGTERM, wait for the exit (SIGKILL after STOP_GRACE_MS); no restart after this. */
  stop(): Promise<void>;
  /** The running authd's pid, if one is running. */
  pid(): number | undefined;
}

/**
 * The entry point Squid's shims depend on: compiled (dist/, by npm run build), because Node's TypeScript
 * stripper costs about 18 MB. serve runs this file as TypeScript, beside which dist/ is two levels up.
 */
export const AUTHD_SCRIPT = import.meta.filename.endsWith('.js')
  ? join(import.meta.dirname, 'main.js')
  : join(import.meta.dirname, '..', '..', 'dist', 'helpers', 'authd', 'main.js');
/** authd itself gives in-flight answers 5 s; this is for one that does not stop at all. */
const STOP_GRACE_MS = 10_000;
/** A run this long resets the backoff: it died of something new, not of its start-up. */
const HEALTHY_MS = 60_000;

/**
 * The environment authd runs in: the Kerberos acceptor reads these once (lib/seamless/kerberos-acceptor.ts).
 * GSS_MECH_CONFIG=/dev/null keeps a system-wide gss-ntlmssp out of the acceptor (lab §6.2) unless serve's own
 * environment says otherwise (tests select gss-ntlmssp that way); UV_THREADPOOL_SIZE bounds the threads
 * that GSSAPI and the DB's file work run on.
 */
export function authdEnvironment(config: Config, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const paths = seamlessPaths(config);
  return {
    ...env,
    KRB5_KTNAME: `FILE:${paths.keytab}`,
    KRB5_CONFIG: paths.krb5Conf,
    KRB5RCACHEDIR: paths.rcacheDir,
    GSS_MECH_CONFIG: env.GSS_MECH_CONFIG ?? '/dev/null',
    UV_THREADPOOL_SIZE: env.UV_THREADPOOL_SIZE ?? '4',
  };
}

export function superviseAuthd(options: AuthdSupervisorOptions): AuthdSupervisor {
  const { config, log } = options;
  const script = options.script ?? AUTHD_SCRIPT;
  const backoff = options.backoffMs ?? { first: 1000, max: 30_000 };
  const env = authdEnvironment(config);
  let child: ChildProcess | undefined;
  let stopping = false;
  let delay = backoff.first;
  let timer: NodeJS.Timeout | undefined;

  const start = () => {
    timer = undefined;
    if (!existsSync(script)) {
      log(`authd: ${script} is missing (run npm run build); trying again in ${delay} ms`);
      return restartLater();
    }
    try {
      // Made here, as the helper user, each time: stateDir may be out of reach until the operator fixes it
      // (serve answers 503 meanwhile), and the shims need the run directory before authd's first socket.
      makeRunDir(runDir(config.stateDir));
      // The Kerberos replay cache must be the helper user's own (the acceptor writes it as authd).
      mkdirSync(seamlessPaths(config).rcacheDir, { recursive: true, mode: 0o700 });
    } catch (error) {
      log(`authd: ${error instanceof Error ? error.message : String(error)}; trying again in ${delay} ms`);
      return restartLater();
    }
    const startedAt = Date.now();
    const args = ['--max-semi-space-size=2', script, '--exit-with-parent'];
    if (options.configFile !== undefined) args.push('--config', options.configFile);
    const started = spawn(process.execPath, args, { env, stdio: ['pipe', 'ignore', 'inherit'] });
    child = started;
    started.once('error', (error) => log(`authd: cannot start: ${error.message}`));
    started.once('exit', (code, signal) => {
      child = undefined;
      if (stopping) return;
      if (Date.now() - startedAt >= HEALTHY_MS) delay = backoff.first;
      log(`authd (pid ${started.pid}) exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`);
      restartLater();
    });
    log(`authd started (pid ${started.pid})`);
  };
  const restartLater = () => {
    timer = setTimeout(start, delay);
    delay = Math.min(delay * 2, backoff.max);
  };
  start();

  return {
    pid: () => child?.pid,
    async stop() {
      stopping = true;
      if (timer !== undefined) clearTimeout(timer);
      const running = child;
      if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
      running.kill('SIGTERM');
      const kill = setTimeout(() => running.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(kill);
    },
  };
}
