import { existsSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { DoormanError } from '../../lib/errors.ts';
import { helperSocket, runDir } from '../../lib/seamless/paths.ts';
import { pidFilePath, runningAuthd } from '../../helpers/authd/pid-file.ts';
import { probeAuthd, type ProbeResult } from '../../helpers/authd/probe.ts';
import {
  AUTHD_SCRIPT,
  authdArgs,
  authdEnvironment,
  authdLogPath,
  spawnDetachedAuthd,
} from '../../helpers/authd/supervisor.ts';
import {
  actionOf,
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  out,
  parse,
  UsageError,
} from '../command.ts';

const help = `Usage: doorman authd [run]
       doorman authd start | stop | restart | status [--wait SECONDS]

doorman-authd answers every helper Squid runs (dist/bin/doorman-shim relays each Squid child's lines to its
sockets in <stateDir>/run). See docs/services.md.

  run      (the default) authd in the foreground, as a service of its own: started as root it runs as
           serviceUser. Its sockets come from systemd (LISTEN_FDS: systemd/doorman-authd.socket, matched by
           FileDescriptorName= or path) or are made here. Ready once a session lookup is answered:
           sd_notify READY=1 under systemd (Type=notify; WatchdogSec= is pinged from its event loop), and the
           pid file <stateDir>/run/authd.pid. SIGTERM: stop accepting, answer what was read (at most 5 s),
           exit. SIGHUP: restart keeping the sockets (below).
  start    authd in the background, in a session of its own, unless one answers already; returns once it
           answers (at most 30 s) and prints its pid
  stop     SIGTERM to the running authd; returns once it has exited (SIGKILL after 10 s)
  restart  a planned restart without a gap: the running authd starts its successor on the same listening
           sockets (SIGHUP), and once that one answers, stops accepting, answers what it has read and exits.
           Meanwhile the shims hold requests and send them again; nothing is refused. Returns once the new one
           answers (at most 35 s) and prints its pid. Under systemd: systemctl restart doorman-authd
  status   whether authd answers a session lookup within 5 s (exit 0) or not (exit 1), with its pid;
           --wait SECONDS asks again until it does or the time is up

Options:
      --wait SECONDS  (status) wait up to this long for an answer
${CONFIG_HELP}`;

const START_MS = 30_000;
const STOP_MS = 10_000;
/** authd gives its successor 30 s to be ready, then the new one must answer here. */
const RESTART_MS = 35_000;
const PROBE_MS = 5000;

export const authdCommand: Command = {
  name: 'authd',
  summary: "run, start, stop or restart doorman-authd, which answers Squid's helpers",
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: { ...CONFIG_OPTION, wait: { type: 'string' } },
      allowPositionals: true,
    });
    if (values.help) return (out(help), EXIT.ok);
    const { action } =
      positionals.length === 0
        ? { action: 'run' as const }
        : actionOf('authd', positionals, ['run', 'start', 'stop', 'restart', 'status']);
    const waitS = values.wait === undefined ? undefined : Number(values.wait);
    if (
      values.wait !== undefined &&
      (action !== 'status' || !(waitS !== undefined && waitS >= 0 && waitS <= 3600))
    )
      throw new UsageError(
        action === 'status'
          ? `--wait: expected seconds from 0 to 3600, got ${JSON.stringify(values.wait)}`
          : `--wait goes with status only`,
      );
    const loaded = configFrom(values.config);
    const configFile = loaded.path === undefined ? undefined : resolvePath(loaded.path);
    const { stateDir } = loaded.config;
    const socket = helperSocket(stateDir, 'session');
    const pidFile = pidFilePath(runDir(stateDir));
    const answered = (ms = PROBE_MS) => probeAuthd(socket, ms);

    switch (action) {
      case 'run': {
        if (!existsSync(AUTHD_SCRIPT))
          throw new DoormanError('NOT_FOUND', `${AUTHD_SCRIPT} is missing: run npm run build`);
        const env = authdEnvironment(loaded.config);
        const args = authdArgs(AUTHD_SCRIPT, configFile);
        if (process.env.LISTEN_FDS === undefined && process.env.DOORMAN_LISTEN_FDS === undefined) {
          // The same process becomes authd (same pid), on the compiled script without the TypeScript
          // stripper this CLI runs under.
          process.execve?.(process.execPath, [process.execPath, ...args], env);
        }
        // Node's execve closes every descriptor from 3 on, the listening sockets among them: authd runs in
        // this process instead (about 18 MB more; systemd/doorman-authd.service runs the script directly).
        Object.assign(process.env, env);
        process.argv = [process.execPath, ...args.slice(1)];
        await import(AUTHD_SCRIPT);
        return new Promise<number>(() => {}); // authd exits the process itself
      }
      case 'status': {
        const result = await untilAnswered(answered, (waitS ?? 0) * 1000);
        const pid = runningAuthd(pidFile);
        if (result.ok) {
          out(
            `authd answering on ${socket} (pid ${pid ?? "unknown: systemd's?"}, ${Math.round(result.ms)} ms)`,
          );
          return EXIT.ok;
        }
        process.stderr.write(
          `authd not answering: ${result.detail}${pid === undefined ? '' : ` (pid ${pid} is running)`}\n`,
        );
        return EXIT.failed;
      }
      case 'start': {
        const first = await answered();
        if (first.ok) {
          out(`authd answering already (pid ${runningAuthd(pidFile) ?? 'unknown'})`);
          return EXIT.ok;
        }
        if (!existsSync(AUTHD_SCRIPT))
          throw new DoormanError('NOT_FOUND', `${AUTHD_SCRIPT} is missing: run npm run build`);
        const { child, release } = spawnDetachedAuthd(
          AUTHD_SCRIPT,
          configFile,
          loaded.config.stateDir,
          authdEnvironment(loaded.config),
        );
        const exited = new Promise<string>((resolve) =>
          child.once('exit', (code, signal) => resolve(signal ?? `code ${code}`)),
        );
        const result = await Promise.race([untilAnswered(answered, START_MS), exited]);
        if (typeof result === 'string')
          throw new DoormanError('NOT_FOUND', `authd exited (${result}); see above`);
        release();
        if (!result.ok) throw new DoormanError('TIMEOUT', `authd did not answer within ${START_MS / 1000} s`);
        out(`authd started (pid ${child.pid}); its log: ${authdLogPath(loaded.config.stateDir)}`);
        return EXIT.ok;
      }
      case 'stop': {
        const pid = runningOrFail(pidFile);
        process.kill(pid, 'SIGTERM');
        if (await until(() => runningAuthd(pidFile) !== pid || !alive(pid), STOP_MS)) {
          await until(() => !alive(pid), STOP_MS);
        }
        if (alive(pid)) {
          process.kill(pid, 'SIGKILL');
          process.stderr.write(`authd (pid ${pid}) did not stop within ${STOP_MS / 1000} s: killed\n`);
        }
        out(`authd stopped (pid ${pid})`);
        return EXIT.ok;
      }
      case 'restart': {
        const pid = runningOrFail(pidFile);
        process.kill(pid, 'SIGHUP');
        let next: number | undefined;
        const ok = await until(() => {
          next = runningAuthd(pidFile);
          return next !== undefined && next !== pid;
        }, RESTART_MS);
        const result = ok ? await untilAnswered(answered, PROBE_MS) : undefined;
        if (next === undefined || !ok || !result?.ok)
          throw new DoormanError(
            'TIMEOUT',
            `no successor answered within ${RESTART_MS / 1000} s; authd (pid ${pid}) ${alive(pid) ? 'goes on serving' : 'is gone'}: see its log`,
          );
        out(`authd restarted (pid ${pid} -> ${next})`);
        return EXIT.ok;
      }
    }
  },
};

function runningOrFail(pidFile: string): number {
  const pid = runningAuthd(pidFile);
  if (pid === undefined)
    throw new DoormanError(
      'NOT_FOUND',
      `no authd runs from ${pidFile} (under systemd: systemctl stop|restart doorman-authd)`,
    );
  return pid;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Asks again every 100 ms until `check` holds or `ms` has passed; whether it held. */
async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (check()) return true;
    if (Date.now() >= end) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function untilAnswered(probe: (ms?: number) => Promise<ProbeResult>, ms: number): Promise<ProbeResult> {
  const end = Date.now() + ms;
  for (;;) {
    const result = await probe(Math.min(PROBE_MS, Math.max(500, end - Date.now())));
    if (result.ok || Date.now() >= end) return result;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
