import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../config/schema.ts';
import type { SeamlessControl, SeamlessStatus, SeamlessStep } from './control.ts';
import type { DoctorReport } from './doctor/report.ts';
import type { StepOutcome } from './join.ts';
import { memberSmbConfPath, NOT_ENABLED } from './not-enabled.ts';
import type { openLocalSeamless, SquidTarget } from './local.ts';
import type { SeamlessSettings } from './settings.ts';

/**
 * Privilege separation for the admin screen: `doorman serve` forks this module as a child **before** it gives up
 * root, and the child stays root, to run the join, winbindd and the keytab's chown. It accepts exactly the five
 * operations of SeamlessControl over the IPC channel, one at a time, and nothing else: no command, path or
 * option ever comes from the parent beyond the Enable dialogue's checked fields. serve (now the service user)
 * holds a SeamlessControl whose calls are these messages.
 *
 * The administrator's password crosses the channel as base64 and becomes a Buffer on the other side, which
 * the child zeroes once the join (or the leave) is done; it is never logged.
 *
 * One process boundary, one file (style.md item 11): the parent's proxy and the child's loop are both here; the
 * child runs when this file is the entry point (`import.meta.main`).
 *
 * The child waits, idle, for as long as serve runs, so it costs what it loads at start: it runs this file compiled
 * to plain JavaScript (dist/, `npm run build`: no TypeScript stripper) and loads the join's machinery (the
 * stores, SQLite, the directory client, the dialogue's zod rules) on its first operation, not before. Idle, it is
 * Node and this file (bench/idle-memory.sh: ~105 MB before, the .ts with everything loaded at start).
 */

type Operation =
  | { op: 'status' }
  | { op: 'doctor' }
  | { op: 'resume' }
  | { op: 'enable'; settings: SeamlessSettings; password: string }
  | { op: 'disable'; admin?: { user: string; password: string } };

type Request = { id: number } & Operation;
type Init = { init: { config: Config; options: PrivilegedOptions } };

type Reply =
  { id: number; step: SeamlessStep } | { id: number; result: unknown } | { id: number; error: string };

export interface PrivilegedOptions {
  configFile?: string;
  squid?: SquidTarget;
}

export interface PrivilegedSeamless {
  control: SeamlessControl;
  close(): Promise<void>;
}

/** Fork the root child. Call while still root, before dropPrivileges. */
export function startPrivilegedSeamless(
  config: Config,
  options: PrivilegedOptions & { log?: (line: string) => void } = {},
): PrivilegedSeamless {
  const { log = () => {}, ...childOptions } = options;
  const entry = childEntry();
  const child: ChildProcess = fork(entry.file, [], {
    execArgv: entry.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Not in serve's process group: a Ctrl-C meant for serve reaches the child through serve's close().
    detached: false,
  });
  let exited = false;
  const pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void; onStep?: (s: SeamlessStep) => void }
  >();
  child.on('exit', (code, signal) => {
    exited = true;
    for (const [, call] of pending)
      call.reject(new Error(`the privileged seamless process ended (${signal ?? code})`));
    pending.clear();
    log(`seamless: the privileged process ended (${signal ?? `exit ${code}`})`);
  });
  child.on('message', (message: Reply) => {
    const call = pending.get(message.id);
    if (call === undefined) return;
    if ('step' in message) call.onStep?.(message.step);
    else {
      pending.delete(message.id);
      if ('error' in message) call.reject(new Error(message.error));
      else call.resolve(message.result);
    }
  });
  child.send({ init: { config, options: childOptions } } satisfies Init);
  let next = 1;
  const call = <T>(operation: Operation, onStep?: (s: SeamlessStep) => void): Promise<T> => {
    if (exited || !child.connected) {
      return Promise.reject(
        new Error('the privileged seamless process is not running: restart doorman serve (as root)'),
      );
    }
    const id = next++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, {
        resolve: resolve as (v: unknown) => void,
        reject,
        ...(onStep === undefined ? {} : { onStep }),
      });
      child.send({ id, ...operation } satisfies Request);
    });
  };
  const control: SeamlessControl = {
    status: () => call<SeamlessStatus>({ op: 'status' }),
    doctor: () => call<DoctorReport>({ op: 'doctor' }),
    resume: () => call<StepOutcome>({ op: 'resume' }),
    async enable(settings, password, onStep) {
      const encoded = password.toString('base64');
      password.fill(0);
      return call({ op: 'enable', settings, password: encoded }, onStep);
    },
    async disable(admin, onStep) {
      const operation: Operation =
        admin === undefined
          ? { op: 'disable' }
          : { op: 'disable', admin: { user: admin.user, password: admin.password.toString('base64') } };
      admin?.password.fill(0);
      return call(operation, onStep);
    },
  };
  return {
    control,
    close: async () => {
      if (exited) return;
      const ended = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await ended;
    },
  };
}

/**
 * serve at start-up: the root child starts the member's winbindd again if the proxy is joined and it is not
 * running (after a reboot, resume.ts). The outcome is logged in one line; serve's start never waits for it.
 */
export function resumeAtStart(control: SeamlessControl, log: (line: string) => void): Promise<void> {
  return control.resume().then(
    (outcome) => {
      const said = outcome.ok
        ? `${outcome.skipped === true ? 'skipped' : 'ok'}: ${outcome.detail}`
        : `FAILED: ${outcome.detail}; fix: ${outcome.fix}`;
      log(`seamless: resume winbindd: ${said}`);
    },
    (error: unknown) =>
      log(`seamless: resume winbindd: FAILED: ${error instanceof Error ? error.message : String(error)}`),
  );
}

/**
 * This file compiled (dist/lib/seamless/privileged.js beside the source tree), run without the parent's flags;
 * this file itself, with them, when it is the compiled one or there is no build.
 */
function childEntry(): { file: string; execArgv: string[] } {
  const self = import.meta.filename;
  if (!self.endsWith('.ts')) return { file: self, execArgv: process.execArgv };
  const built = resolve(import.meta.dirname, '..', '..', 'dist', 'lib', 'seamless', 'privileged.js');
  return existsSync(built) ? { file: built, execArgv: [] } : { file: self, execArgv: process.execArgv };
}

/** What the child loads on its first operation (a static import would load it at start, idle or not). */
interface ChildMachinery {
  openLocalSeamless: typeof openLocalSeamless;
  recheckSettings: (settings: SeamlessSettings, password: Buffer) => SeamlessSettings;
}
let machinery: Promise<ChildMachinery> | undefined;
const loadMachinery = (): Promise<ChildMachinery> =>
  (machinery ??= Promise.all([import('./local.ts'), import('./recheck.ts')]).then(([local, recheck]) => ({
    openLocalSeamless: local.openLocalSeamless,
    recheckSettings: recheck.recheckSettings,
  })));

/** The child: one operation at a time, each on a freshly opened store (the DB may come and go). */
function runChild(): void {
  let init: Init['init'] | undefined;
  let queue: Promise<void> = Promise.resolve();
  const send = (reply: Reply) => {
    if (process.connected) process.send?.(reply);
  };
  const handle = async (request: Request): Promise<void> => {
    if (init === undefined) return send({ id: request.id, error: 'not initialised' });
    const { config, options } = init;
    let secret: Buffer | undefined;
    let adminSecret: Buffer | undefined;
    let local: ReturnType<typeof openLocalSeamless> | undefined;
    // Asked at every start of serve: on a proxy never joined, answered without loading anything.
    if (request.op === 'resume' && !existsSync(memberSmbConfPath(config))) {
      return send({ id: request.id, result: NOT_ENABLED });
    }
    try {
      const { openLocalSeamless, recheckSettings } = await loadMachinery();
      local = openLocalSeamless(config, options);
      const onStep = (step: SeamlessStep) => send({ id: request.id, step });
      let result: unknown;
      switch (request.op) {
        case 'status':
          result = await local.control.status();
          break;
        case 'doctor':
          result = await local.control.doctor();
          break;
        case 'resume':
          result = await local.control.resume();
          break;
        case 'enable':
          secret = Buffer.from(request.password, 'base64');
          result = await local.control.enable(recheckSettings(request.settings, secret), secret, onStep);
          break;
        case 'disable':
          if (request.admin !== undefined) adminSecret = Buffer.from(request.admin.password, 'base64');
          result = await local.control.disable(
            request.admin === undefined || adminSecret === undefined
              ? undefined
              : { user: request.admin.user, password: adminSecret },
            onStep,
          );
          break;
        default:
          throw new Error(`unknown operation ${JSON.stringify((request as { op: unknown }).op)}`);
      }
      send({ id: request.id, result });
    } catch (error) {
      send({ id: request.id, error: error instanceof Error ? error.message : String(error) });
    } finally {
      secret?.fill(0);
      adminSecret?.fill(0);
      local?.close();
    }
  };
  process.on('message', (message: Init | Request) => {
    if ('init' in message) {
      init ??= message.init;
      return;
    }
    queue = queue.then(() => handle(message));
  });
  // serve gone (or closing us): nothing left to serve.
  process.on('disconnect', () => {
    void queue.finally(() => process.exit(0));
  });
}

if (import.meta.main && process.send !== undefined) runChild();
