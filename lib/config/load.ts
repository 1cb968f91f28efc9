import { readCapped } from '../fs/read-capped.ts';
import { join } from 'node:path';
import type { z } from 'zod';
import { DoormanError } from '../errors.ts';
import { configSchema, type Config } from './schema.ts';

/** Default place of the config file; absent means the embedded defaults. */
export const DEFAULT_CONFIG_PATH = '/etc/doorman/doorman.json';
const MAX_CONFIG_BYTES = 1024 * 1024;

export interface LoadedConfig {
  config: Config;
  /** The file it came from, or undefined for the embedded defaults. */
  path: string | undefined;
}

/** Every problem, one line each, named by its dotted field path. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : '(top level)'}: ${i.message}`);
}

export function parseConfig(document: unknown, source: string): Config {
  const result = configSchema.safeParse(document);
  if (!result.success) {
    throw new DoormanError(
      'CONFIG_INVALID',
      `${source} is not a valid Doorman configuration:\n  ${describeIssues(result.error.issues).join('\n  ')}`,
    );
  }
  return result.data;
}

/**
 * Load the configuration once, at start-up. An explicit path must exist; the default path may be absent,
 * in which case the embedded defaults apply.
 */
export function loadConfig(explicitPath?: string): LoadedConfig {
  const path = explicitPath ?? DEFAULT_CONFIG_PATH;
  let text: string;
  try {
    text = readCapped(path, MAX_CONFIG_BYTES);
  } catch (error) {
    if (error instanceof DoormanError) throw error;
    if (explicitPath === undefined && (error as NodeJS.ErrnoException).code === 'ENOENT') {
      return { config: parseConfig({}, 'the embedded default'), path: undefined };
    }
    throw new DoormanError('CONFIG_UNREADABLE', `${path}: ${(error as Error).message}`, { cause: error });
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new DoormanError('CONFIG_INVALID', `${path}: not valid JSON: ${(error as Error).message}`);
  }
  return { config: parseConfig(document, path), path };
}

/**
 * A directory of root's beside stateDir (`/var/lib/doorman` → `/var/lib/doorman-samba`): what root manages
 * never lives in stateDir, which belongs to the service user.
 */
export function besideStateDir(stateDir: string, suffix: string): string {
  let end = stateDir.length;
  while (end > 1 && stateDir[end - 1] === '/') end -= 1;
  return `${stateDir.slice(0, end)}-${suffix}`;
}

export function dbPath(config: Config): string {
  return join(config.stateDir, config.dbFile);
}
