import { type ChildProcess, fork } from 'node:child_process';
import type { Config } from '../config/schema.ts';
import type { SeamlessControl, SeamlessStatus, SeamlessStep } from './control.ts';
import type { DoctorReport } from './doctor/report.ts';
import { adminArgument } from './join.ts';
import { openLocalSeamless, type SquidTarget } from './local.ts';
import { parseSeamlessSettings, type SeamlessSettings } from './settings.ts';

/**
 * Privilege separation for the admin screen: `doorman serve` forks this module as a child **before** it gives up
 * root, and the child stays root, to run the join, winbindd and the keytab's chown. It accepts exactly the four
 * operations of SeamlessControl over the IPC channel, one at a time, and nothing else: no command, path or
 * option ever comes from the parent beyond the Enable dialogue's checked fields. serve (now the service user)
 * holds a SeamlessControl whose calls are these messages.
 *
 * The administrator's password crosses the channel as base64 and becomes a Buffer on the other side, which
 * the child zeroes once the join (or the leave) is done; it is never logged.
 *
 * One process boundary, one file (style.md item 11): the parent's proxy and the child's loop are both here; the
 * child runs when this file is the entry point (`import.meta.main`).
 */

type Operation =
  | { op: 'status' }
  | { op: 'doctor' }
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
  const child: ChildProcess = fork(import.meta.filename, [], {
    execArgv: process.execArgv,
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
 * The child trusts nothing the parent (the service user's process, which faces the network) says beyond the
 * dialogue's meaning: the settings are written back into the dialogue's fields and checked again here, as root,
 * with the same rules, and only what that check returns is used. A parent that sent a domain or a user name the
 * dialogue would refuse (a line break for smb.conf, an option for net) gets the problems, and nothing runs.
 */
export function recheckSettings(settings: SeamlessSettings, password: Buffer): SeamlessSettings {
  const checked = parseSeamlessSettings({
    serverVersion: settings.serverVersion,
    domain: settings.domain,
    netbiosDomain: settings.netbiosDomain,
    adminUser: adminArgument(settings.adminUser),
    // Only checked for its form here; the parent's Buffer is the one used (and zeroed).
    adminPassword: password.length === 0 ? '' : 'x',
  });
  if (!checked.ok) {
    throw new Error(
      `refused settings: ${checked.problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`,
    );
  }
  checked.password.fill(0);
  if (checked.settings.realm !== settings.realm) {
    throw new Error(
      `refused settings: realm: ${JSON.stringify(settings.realm)} is not the domain upper-cased`,
    );
  }
  return checked.settings;
}

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
    try {
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
