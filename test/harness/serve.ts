import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfigInput } from '../../lib/config/schema.ts';
import { ROOT, requireSystem } from './lab.ts';
import { freePort, start, waitForPort, type Started } from './processes.ts';
import { run, type RunOptions, type RunResult } from './run.ts';

const DOORMAN = join(ROOT, 'bin', 'doorman');

/** A real `doorman serve` on 127.0.0.1 alone (no Squid: for that, lab.ts), with an administrator. */
export interface ServeSite {
  dir: string;
  configFile: string;
  /** `http://127.0.0.1:<port>/`, the config's baseUrl. */
  baseUrl: string;
  port: number;
  /** The doorman CLI with this site's config; rejects on a non-zero exit. */
  doorman(args: readonly string[], options?: RunOptions): Promise<RunResult>;
  serve: Started;
  /** Stops serve and removes the directory. */
  stop(): Promise<void>;
}

export interface ServeOptions {
  /** The temporary directory's name starts with this. */
  name: string;
  /** The administrator `admin`'s password (`doorman admin passwd` before serve starts). */
  adminPassword: string;
  /** Config fields on top of the site's own (baseUrl, listen, no trusted proxies, stateDir). */
  config?: Partial<ConfigInput>;
  /** Runs after the config and the administrator are written, before serve starts (apply a directory, …). */
  beforeServe?: (doorman: ServeSite['doorman']) => Promise<unknown>;
}

export async function startServe(options: ServeOptions): Promise<ServeSite> {
  requireSystem();
  const dir = mkdtempSync(join(tmpdir(), `${options.name}-`));
  chmodSync(dir, 0o755); // serve drops to the service user, who must reach stateDir below
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}/`;
  const config: ConfigInput = {
    baseUrl,
    listen: [{ host: '127.0.0.1', port }],
    trustedProxies: [],
    stateDir: join(dir, 'state'),
    ...options.config,
  };
  const configFile = join(dir, 'doorman.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2), { mode: 0o644 });
  const doorman = (args: readonly string[], runOptions?: RunOptions) =>
    run(DOORMAN, [...args, '--config', configFile], runOptions);
  try {
    await doorman(['admin', 'passwd', '--user', 'admin'], { input: `${options.adminPassword}\n` });
    await options.beforeServe?.(doorman);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const serve = start(DOORMAN, ['serve', '--config', configFile]);
  const stop = async () => {
    await serve.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort('127.0.0.1', port, 10_000, serve.child);
  } catch (error) {
    await stop();
    throw error;
  }
  return { dir, configFile, baseUrl, port, doorman, serve, stop };
}
