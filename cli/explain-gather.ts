import { askAuthd, type AskResult } from '../helpers/authd/ask.ts';
import { formatExplainLookup } from '../lib/helper-protocol/explain-lookup.ts';
import { decidePortal } from '../icap-server/decision.ts';
import type { Clock } from '../lib/clock.ts';
import { dbPath } from '../lib/config/load.ts';
import type { Config } from '../lib/config/schema.ts';
import { Directory } from '../lib/directory/directory.ts';
import { matchesGroup } from '../lib/directory/groups.ts';
import type {
  AuthdFact,
  ExplainFacts,
  GroupLookup,
  IcapFact,
  MacFact,
  SeamlessFact,
} from '../lib/explain/facts.ts';
import type { ExplainInput } from '../lib/explain/input.ts';
import { identifiedUser } from '../lib/explain/steps.ts';
import { parseReply } from '../lib/helper-protocol/message.ts';
import { formatSeamlessQuery, parseSeamlessAnswer } from '../lib/helper-protocol/seamless-query.ts';
import type { Log } from '../lib/log.ts';
import { findMac } from '../lib/net/find-mac.ts';
import type { MacLookup } from '../lib/net/mac-lookup.ts';
import { isLive } from '../lib/portal/portal-sessions.ts';
import { helperSocket } from '../lib/seamless/paths.ts';
import { openDatabase } from '../lib/store/database.ts';
import { SeamlessSettingsStore } from '../lib/store/seamless-settings-store.ts';
import type { Store } from '../lib/store/store.ts';

/**
 * The I/O around lib/explain: reads what `doorman explain` judges, for the CLI (cli/commands/explain.ts) and
 * the admin screen Explain (given to it by serve). Every outside party is asked with a deadline and its
 * failure becomes a fact ("authd does not answer"), never an exception. Nothing is written: the ICAP decision
 * is asked with a registration check that binds no address, and the seamless query touches no session. The
 * session lookup is Squid's own after the word explain-lookup, which authd answers without marking the
 * session seen (lib/helper-protocol/explain-lookup.ts): looking never keeps an idle session alive.
 */
export interface GatherDeps {
  config: Config;
  store: Pick<Store, 'sessions' | 'portal' | 'directory'>;
  clock: Clock;
  log: Log;
  /** The realm this box is joined to for seamless sign-on, or undefined; localSeamlessRealm by default. */
  seamlessRealm?: () => string | undefined;
  /**
   * The MAC of the device at an address; lib/net/find-mac.ts (the neighbour table, as the portal) by default.
   */
  findMac?: (ip: string) => Promise<MacLookup>;
  /** How one line is asked of authd; askAuthd by default (tests may point it elsewhere). */
  ask?: (socket: string, line: string, deadlineMs: number) => Promise<AskResult>;
  /** Each outside party (authd, the directory) gets this long; default 2 s. */
  deadlineMs?: number;
}

const DEFAULT_DEADLINE_MS = 2000;
/** The page load the ICAP decision is asked about: what a browser sends first. */
const PAGE_LOAD = { method: 'GET', target: 'http://example.com/', host: 'example.com', accept: 'text/html' };

export async function gatherFacts(input: ExplainInput, deps: GatherDeps): Promise<ExplainFacts> {
  const { config, store, clock } = deps;
  const deadlineMs = deps.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const ask = deps.ask ?? askAuthd;
  const { ip } = input;
  const mac = await macFact(input, deps.findMac ?? ((address) => findMac(address)));
  const clientMac = mac.kind === 'none' ? undefined : mac.mac;
  const now = clock.now();
  const session = store.sessions.find({ kind: 'ip', value: ip });
  const registration =
    clientMac === undefined ? undefined : store.sessions.find({ kind: 'mac', value: clientMac });
  const settings = store.portal.load();
  /**
   * The directory in force, read once for both steps that need it, when first needed: a bind password this
   * user cannot read fails the step that asks, as before.
   */
  let loaded: { applied: ReturnType<typeof store.directory.load> } | undefined;
  const directory = () => (loaded ??= { applied: store.directory.load() }).applied;
  const socket = helperSocket(config.stateDir, 'session');
  const realm = readRealm(deps.seamlessRealm ?? (() => localSeamlessRealm(config, clock)));
  const [authd, seamless] = await Promise.all([
    authdFact(ask, socket, ip, clientMac, deadlineMs),
    seamlessFact(ask, socket, ip, realm, deadlineMs),
  ]);
  const user = identifiedUser({ authd, seamless });
  const allow = config.squid.groups.allow;
  const groups = {
    allow,
    lookup:
      user === undefined || allow.length === 0
        ? ({ kind: 'not-asked' } as const)
        : await groupLookup(directory(), user, allow, deps, deadlineMs),
  };
  const icap = await icapFact(config, store, settings, directory, ip, { now, registration }, deps.log);
  return {
    ip,
    now,
    baseUrl: config.baseUrl,
    mac,
    session,
    registration,
    portal: { mode: settings.mode, registrationClearDate: settings.registrationClearDate },
    authd,
    groups,
    squid: {
      ttl: config.squid.ttl,
      negativeTtl: config.squid.negativeTtl,
      groupsTtl: config.squid.groups.ttl,
      groupsNegativeTtl: config.squid.groups.negativeTtl,
    },
    icap,
    seamless,
  };
}

async function macFact(input: ExplainInput, find: (ip: string) => Promise<MacLookup>): Promise<MacFact> {
  if (input.mac !== undefined) return { kind: 'given', mac: input.mac };
  const found = await find(input.ip);
  return found.ok
    ? { kind: 'found', mac: found.mac, source: found.source }
    : { kind: 'none', reason: found.reason, message: found.message };
}

/**
 * The lookup Squid sends (`%SRC %>eui`): the address, and the MAC as Squid gives it, only for an IPv4 client
 * (Squid's %>eui for IPv6 is never the MAC, see helpers/session-lookup.ts).
 */
async function authdFact(
  ask: NonNullable<GatherDeps['ask']>,
  socket: string,
  ip: string,
  mac: string | undefined,
  deadlineMs: number,
): Promise<AuthdFact> {
  const asked = `${ip} ${mac !== undefined && !ip.includes(':') ? mac : '-'}`;
  const answer = await ask(socket, formatExplainLookup('0', asked), deadlineMs);
  if (!answer.ok) return { kind: 'unreachable', reason: answer.reason, detail: answer.detail, socket };
  const reply = parseReply(answer.answer, true);
  if (reply === undefined)
    return {
      kind: 'unreachable',
      reason: 'closed',
      detail: `not a helper reply: ${JSON.stringify(answer.answer.slice(0, 80))}`,
      socket,
    };
  return {
    kind: 'answered',
    asked,
    result: reply.result,
    user: reply.pairs.get('user'),
    message: reply.pairs.get('message'),
    ms: answer.ms,
    socket,
  };
}

async function seamlessFact(
  ask: NonNullable<GatherDeps['ask']>,
  socket: string,
  ip: string,
  realm: string | undefined | Error,
  deadlineMs: number,
): Promise<SeamlessFact> {
  if (realm instanceof Error) return { kind: 'unknown', detail: realm.message };
  if (realm === undefined) return { kind: 'not-enabled' };
  const answer = await ask(socket, formatSeamlessQuery('0', ip), deadlineMs);
  return {
    kind: 'enabled',
    realm,
    last: answer.ok ? parseSeamlessAnswer(answer.answer) : { kind: 'unreachable', detail: answer.detail },
  };
}

/**
 * The user's groups from the directory in force (a connection of its own, closed after), within the deadline.
 */
async function groupLookup(
  applied: ReturnType<GatherDeps['store']['directory']['load']>,
  user: string,
  allow: readonly string[],
  deps: GatherDeps,
  deadlineMs: number,
): Promise<GroupLookup> {
  if (applied === undefined) return { kind: 'no-directory', user };
  const directory = new Directory(applied.settings, applied.password, {
    clock: deps.clock,
    log: deps.log,
    searchConnections: 1,
    bindConnections: 1,
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), deadlineMs)));
  try {
    const groups = await Promise.race([directory.groupsOf(user), late]);
    if (groups === 'late') return { kind: 'failed', user, detail: `no answer within ${deadlineMs} ms` };
    if (groups === undefined) return { kind: 'unknown-user', user };
    return {
      kind: 'groups',
      user,
      groups: groups.map((g) => g.name),
      member: allow.some((wanted) => matchesGroup(groups, wanted)),
    };
  } catch (error) {
    return { kind: 'failed', user, detail: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
    // Its connections end now; a close stuck on a dead server is not waited for.
    void directory.close().catch(() => {});
  }
}

/**
 * icap-server/decision.ts, the function the ICAP service runs, for a page load from the client. Whether the
 * client is identified is judged as the service does (lib/portal/portal-sessions.ts isLive on the address's
 * session); a registered device counts as the service would count it, without the address binding it writes.
 */
async function icapFact(
  config: Config,
  store: GatherDeps['store'],
  settings: ReturnType<GatherDeps['store']['portal']['load']>,
  directory: () => ReturnType<GatherDeps['store']['directory']['load']>,
  ip: string,
  known: { now: number; registration: ExplainFacts['registration'] },
  log: Log,
): Promise<IcapFact> {
  if (settings.mode === 'off') return { kind: 'off' };
  try {
    const applied = directory()?.settings;
    const decision = await decidePortal({
      settings,
      request: { clientIp: ip, clientUsername: undefined, proxyKey: undefined, ...PAGE_LOAD },
      baseUrl: config.baseUrl,
      directoryHosts:
        applied === undefined
          ? []
          : [applied.host, ...(applied.address === undefined ? [] : [applied.address])],
      isIdentified: (address) => {
        const found = store.sessions.find({ kind: 'ip', value: address });
        return found !== undefined && isLive(found, known.now);
      },
      isRegisteredDevice: () =>
        Promise.resolve(known.registration !== undefined && isLive(known.registration, known.now)),
      // Without Squid's key no URL is signed: the Location is the splash page itself.
      portalUrls: { sign: () => '' },
      proxyKey: { matches: () => false },
    });
    if (decision.kind === 'no-change') return { kind: 'decided', status: 'no-change', location: undefined };
    return { kind: 'decided', status: decision.status, location: decision.headers?.Location };
  } catch (error) {
    log(`explain: the ICAP decision failed: ${error instanceof Error ? error.message : String(error)}`);
    return { kind: 'failed', detail: error instanceof Error ? error.message : String(error) };
  }
}

function readRealm(read: () => string | undefined): string | undefined | Error {
  try {
    return read();
  } catch (error) {
    return new Error(
      `the seamless settings could not be read: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/**
 * This box's seamless sign-on realm, from its own session DB (seamless state is per box); undefined when not
 * joined. `busyTimeoutMs`: how long a lock held by another process is waited for (the web app's is 0).
 */
export function localSeamlessRealm(config: Config, clock: Clock, busyTimeoutMs = 1000): string | undefined {
  const db = openDatabase(dbPath(config), {
    mustExist: true,
    busyTimeoutMs,
    openBusyTimeoutMs: busyTimeoutMs,
  });
  try {
    return new SeamlessSettingsStore(db, { clock }).current()?.realm;
  } finally {
    db.close();
  }
}
