import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { systemClock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import { testSettings } from '../directory/directory.ts';
import { lookupUser } from '../system/service-user.ts';
import { localSeamlessControl, type SeamlessControl, type SeamlessDeps } from './control.ts';
import { realGatherIo } from './doctor/gather.ts';
import type { StepOutcome } from './join.ts';
import { type CommandRunner, describeFailure, spawnRunner } from './run-command.ts';
import { openStoresKeepingRoot } from './stores.ts';
import { realProcesses } from './winbindd.ts';

/**
 * The SeamlessControl of a root process with the real transports: the CLI's, and serve's privileged child's.
 */
export interface SquidTarget {
  /** Where Squid's include goes (rewritten with `doorman squid-conf`, mode 0600). */
  include: string;
  /** The squid.conf to reconfigure (`squid -k reconfigure -f FILE`); default: Squid's own. */
  squidConf?: string;
  /** The Squid binary (default `squid` on PATH). */
  squid?: string;
}

export interface LocalSeamlessOptions {
  /** The configuration file the config came from, for `doorman squid-conf -c`. */
  configFile?: string;
  squid?: SquidTarget;
  /** This host's name (its first label becomes the computer name); default os.hostname(). */
  hostName?: string;
  run?: CommandRunner;
}

/**
 * The doorman CLI, run from source as bin/doorman runs it (cli/main.ts): dist/ holds no cli/, and serve's root
 * child runs this file from dist/lib/seamless/.
 */
const cliEntry = () => {
  const root = resolve(import.meta.dirname, '..', '..');
  return resolve(basename(root) === 'dist' ? dirname(root) : root, 'cli', 'main.ts');
};

/**
 * `doorman squid-conf` in a child (so whatever the include holds is decided there, in one place), its output
 * written over the include through a temporary file (0600: it holds the proxy key), then `squid -k reconfigure`.
 */
export function squidRegenerator(target: SquidTarget, run: CommandRunner, configFile?: string) {
  return async (): Promise<StepOutcome> => {
    const args = [
      ...process.execArgv,
      cliEntry(),
      'squid-conf',
      ...(configFile === undefined ? [] : ['-c', configFile]),
    ];
    const made = await run({ command: process.execPath, args, timeoutMs: 60_000 });
    if (made.code !== 0) {
      return {
        ok: false,
        detail: describeFailure({ command: 'doorman', args: ['squid-conf'] }, made),
        fix: 'run `doorman squid-conf` by hand to see why, write its output over the include and reconfigure Squid',
      };
    }
    const temp = `${target.include}.${process.pid}.tmp`;
    try {
      writeFileSync(temp, made.stdout, { mode: 0o600 });
      renameSync(temp, target.include);
    } finally {
      rmSync(temp, { force: true });
    }
    const squid = target.squid ?? 'squid';
    const reconfigure = [
      '-k',
      'reconfigure',
      ...(target.squidConf === undefined ? [] : ['-f', target.squidConf]),
    ];
    const done = await run({ command: squid, args: reconfigure, timeoutMs: 60_000 });
    if (done.code !== 0) {
      return {
        ok: false,
        detail: `wrote ${target.include}, but ${describeFailure({ command: squid, args: reconfigure }, done)}`,
        fix: `check the configuration with \`${squid} -k parse\` and reconfigure Squid by hand`,
      };
    }
    return {
      ok: true,
      detail: `wrote ${target.include} and reconfigured Squid (an authentication scheme removed needs a Squid restart)`,
    };
  };
}

/** The include named in the configuration (squid.seamless.squidInclude), if any: the admin screen's only way. */
export function configuredSquid(config: Config): SquidTarget | undefined {
  const { squidInclude, squidConf } = config.squid.seamless;
  if (squidInclude === null) return undefined;
  return { include: squidInclude, ...(squidConf === null ? {} : { squidConf }) };
}

export function openLocalSeamless(
  config: Config,
  options: LocalSeamlessOptions = {},
): { control: SeamlessControl; close(): void } {
  const stores = openStoresKeepingRoot(config);
  const run = options.run ?? spawnRunner;
  const squid = options.squid ?? configuredSquid(config);
  const deps: SeamlessDeps = {
    run,
    processes: realProcesses,
    clock: systemClock,
    store: stores.seamless,
    directory: () => stores.directory(),
    testDirectory: (applied) => testSettings(applied.settings, applied.password),
    helperAccount: () => ({ name: config.serviceUser, ...lookupUser(config.serviceUser) }),
    gatherIo: (applied) =>
      realGatherIo({
        directory:
          applied === undefined ? undefined : { settings: applied.settings, password: applied.password },
        run,
        clock: systemClock,
      }),
    ...(options.hostName === undefined ? {} : { hostName: options.hostName }),
    ...(squid === undefined ? {} : { regenerateSquid: squidRegenerator(squid, run, options.configFile) }),
  };
  return { control: localSeamlessControl(config, deps), close: () => stores.close() };
}
