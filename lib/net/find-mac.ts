import { execFile } from 'node:child_process';
import { showValue } from '../errors.ts';
import { normaliseIp } from './address.ts';
import type { MacLookupCache } from './mac-lookup-cache.ts';
import {
  fromNeighbours,
  fromRoute,
  fromSquidEui,
  invalidAddress,
  lookupFailed,
  type MacLookup,
} from './mac-lookup.ts';
import { parseNeighbours } from './neighbour-table.ts';
import { parseRouteGet } from './route-get.ts';

/** How `ip` ended: its exit code and output. */
export interface IpResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs iproute2's `ip` with these arguments. Resolves with how it ended, a non-zero exit included; rejects, with a
 * message saying why, when it could not run to its end (not installed, timed out, output over the cap).
 */
export type IpRunner = (args: readonly string[]) => Promise<IpResult>;

export interface IpRunnerOptions {
  /** Default `ip`, found on PATH (/usr/bin or /usr/sbin, depending on the distribution). */
  command?: string;
  /** Default 2 s: `ip` answers in milliseconds; a hung one must not hold a request. */
  timeoutMs?: number;
  /** Bytes of stdout (and of stderr) at most; default 256 KiB (one address's entries are ~100 bytes each). */
  maxBuffer?: number;
}

export const DEFAULT_IP_TIMEOUT_MS = 2000;
export const DEFAULT_IP_MAX_BUFFER = 256 * 1024;

/** The real runner: execFile, no shell (the arguments are never parsed by one), asynchronous. */
export function execIp(options: IpRunnerOptions = {}): IpRunner {
  const command = options.command ?? 'ip';
  const timeout = options.timeoutMs ?? DEFAULT_IP_TIMEOUT_MS;
  const maxBuffer = options.maxBuffer ?? DEFAULT_IP_MAX_BUFFER;
  return (args) =>
    new Promise((resolve, reject) => {
      execFile(command, args, { timeout, maxBuffer, encoding: 'utf8' }, (error, stdout, stderr) => {
        if (error === null) return resolve({ code: 0, stdout, stderr });
        const line = `${command} ${args.join(' ')}`;
        if (error.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') {
          return reject(new Error(`${line}: output over ${maxBuffer} bytes`, { cause: error }));
        }
        if (error.killed === true || error.signal != null) {
          const why = error.killed === true ? `timed out after ${timeout} ms` : `killed by ${error.signal}`;
          return reject(new Error(`${line}: ${why}`, { cause: error }));
        }
        if (typeof error.code === 'number') return resolve({ code: error.code, stdout, stderr });
        if (error.code === 'ENOENT') {
          return reject(
            new Error(`${line}: ${command} not found (is iproute2 installed?)`, { cause: error }),
          );
        }
        reject(new Error(`${line}: ${error.message}`, { cause: error }));
      });
    });
}

export interface FindMacOptions {
  /**
   * Squid's %>eui for the client, if the caller has it: used when it is a real MAC of an IPv4 client, so no
   * process is started; otherwise (`-`, all zeros, any IPv6 client) the neighbour table is read.
   */
  squidEui?: string;
  /** Default execIp(). */
  run?: IpRunner;
  /** Answers shared between lookups for a few seconds; none by default. */
  cache?: MacLookupCache;
}

const defaultRunner = execIp();

/**
 * The MAC address of the client at `ip`, from the kernel's neighbour table of the namespace this process runs
 * in (Squid's, for a helper: the table of the host that received the client's packets). Never rejects: every
 * failure is an answer with a reason and a message that says why (see MacLookup).
 */
export async function findMac(ip: string, options: FindMacOptions = {}): Promise<MacLookup> {
  const address = normaliseIp(ip);
  if (address === undefined) return invalidAddress(ip);
  const fromSquid = fromSquidEui(address, options.squidEui);
  if (fromSquid !== undefined) return fromSquid;
  const run = options.run ?? defaultRunner;
  if (options.cache === undefined) return fromTable(address, run);
  return options.cache.get(address, () => fromTable(address, run));
}

/** `address` is in normaliseIp form, so it is a plain address, never an option or a prefix to `ip`. */
async function fromTable(address: string, run: IpRunner): Promise<MacLookup> {
  const neigh = await runIp(run, ['-json', 'neigh', 'show', 'to', address]);
  if (typeof neigh === 'string') return lookupFailed(neigh);
  if (neigh.code !== 0) return lookupFailed(exitWhy('ip neigh show', neigh));
  const listing = parseNeighbours(neigh.stdout);
  if (!listing.ok) return lookupFailed(listing.reason);
  const found = fromNeighbours(address, listing.entries);
  if (found !== undefined) return found;

  // No entry at all: the route tells a device that is not on a link of ours from one that is but kept quiet.
  const route = await runIp(run, ['-json', 'route', 'get', address]);
  if (typeof route === 'string') return lookupFailed(route);
  if (route.code !== 0) {
    // "RTNETLINK answers: Network is unreachable" (or No route to host, Invalid argument for a group address)
    return fromRoute(address, {
      kind: 'no-route',
      detail: firstLine(route.stderr) || `ip exited with ${route.code}`,
    });
  }
  const parsed = parseRouteGet(route.stdout);
  if (!parsed.ok) return lookupFailed(parsed.reason);
  return fromRoute(address, parsed.route);
}

/** The result, or the reason it could not run, as a string. A runner that throws is not trusted to reject. */
async function runIp(run: IpRunner, args: readonly string[]): Promise<IpResult | string> {
  try {
    return await run(args);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

function exitWhy(what: string, result: IpResult): string {
  const stderr = firstLine(result.stderr);
  return `${what} exited with ${result.code}${stderr === '' ? '' : `: ${stderr}`}`;
}

/** ip's own message, bounded and with control characters made visible (it ends up in logs). */
function firstLine(text: string): string {
  const line = (text.split('\n', 1)[0] ?? '').trim();
  return line === '' ? '' : showValue(line, 200).slice(1, -1);
}
