import type { Readable, Writable } from 'node:stream';
import { systemClock, type Clock } from '../../lib/clock.ts';
import type { StatefulScheme } from '../../lib/helper-protocol/negotiate.ts';
import type { Log } from '../../lib/log.ts';
import type { KerberosAcceptor } from '../../lib/seamless/acceptors.ts';
import { createHandshake, type Handshake } from '../../lib/seamless/handshake.ts';
import { createKerberosAcceptor } from '../../lib/seamless/kerberos-acceptor.ts';
import type { LastSeamlessResults } from '../../lib/seamless/last-results.ts';
import { proxyService, type ProxyService } from '../../lib/seamless/proxy-service.ts';
import { recordedHandshake } from '../../lib/seamless/recorded-handshake.ts';
import { seamlessPaths } from '../../lib/seamless/paths.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { NtlmClientStore } from '../../lib/store/ntlm-client-store.ts';
import { NtlmClientTally } from '../../lib/seamless/ntlm-clients.ts';
import { MAX_SEAMLESS_CHILDREN } from '../../lib/config/squid-schema.ts';
import { SeamlessSettingsStore, type SeamlessState } from '../../lib/store/seamless-settings-store.ts';
import { Reopening } from '../reopening.ts';
import { createNtlmPool, type NtlmPool } from './ntlm-pool.ts';
import {
  globalTimers,
  serveStatefulConnection,
  type StatefulCounts,
  type Timers,
} from './stateful-service.ts';

/**
 * authd's Negotiate and NTLM connections (one Squid child each, one Handshake each: stateful-service.ts),
 * against the joined domain in the session DB. Loaded by main.ts on the first such connection, so the Kerberos
 * library and ntlm_auth cost nothing where seamless authentication is not used.
 *
 * The store's version is read for every new handshake (one indexed read): Enable, Disable and a repair are
 * picked up without a restart. Disabled (no state): every line is answered BH, and the ntlm_auth pool, if
 * one was started, is stopped.
 *
 * The client addresses of NTLM handshakes (Squid's `key_extras "%>a"`) are counted in memory and written to
 * the session DB's ntlm_clients table at most once a minute (and at close), for the doctor: never per request.
 */
export interface SeamlessService {
  /** Serve one connection until its input ends. */
  serve(scheme: StatefulScheme, input: Readable, output: Writable): Promise<void>;
  /** What the service holds now: for tests, and the log at close. */
  counts(): SeamlessCounts;
  close(): Promise<void>;
}

export interface SeamlessCounts extends StatefulCounts {
  /** ntlm_auth processes leased to a handshake, and running; handshakes waiting for one. */
  leases: number;
  processes: number;
  waiting: number;
}

export interface SeamlessServiceOptions {
  stateDir: string;
  sambaDir: string | null;
  dbPath: string;
  log: Log;
  clock?: Clock;
  /**
   * The Kerberos acceptor for the joined proxy's HTTP/ names; the `kerberos` package on the keytab the
   * environment names by default. Made again when the joined state changes.
   */
  kerberos?: (service: ProxyService) => KerberosAcceptor;
  /** The ntlm_auth pool for the member's smb.conf; K's createNtlmPool by default. */
  ntlmPool?: (smbConf: string) => NtlmPool;
  /**
   * Squid's children per scheme (squid.seamless.negotiateChildren, ntlmChildren): the ntlm_auth pool is sized
   * to what they can ask for at once. The configuration's defaults when not given.
   */
  children?: { negotiate: number; ntlm: number };
  /** Timers for lease deadlines and the NTLM clients' flush; the global ones (unref'd) by default. */
  timers?: Timers;
  /** Where each client address's last result is kept for `doorman explain`; none by default. */
  results?: LastSeamlessResults;
}

/**
 * ntlm_auth processes at most, per protocol: as many as Squid's children can ask for at once, since each
 * connection is one Squid child and holds at most one lease: ntlmChildren + negotiateChildren for raw
 * NTLMSSP (both schemes carry it), negotiateChildren for NTLM inside SPNEGO. A pool smaller than the children
 * let a few silent clients starve everyone else (issue 14); one bounded by the configuration, not by the
 * connections, keeps anything else that reaches the socket from starting hundreds. Processes start on demand
 * (~13 MB private each, docs/seamless-design.md §1), one of each kind stays warm, the rest stop after
 * NTLM_IDLE_MS without a lease.
 */
const DEFAULT_CHILDREN = { negotiate: 20, ntlm: 20 } as const;
const NTLM_IDLE_MS = 60_000;
/**
 * A lease is held at most this long from its YR (type-1) to the final answer (after type-3): a real client's
 * handshake through Squid takes milliseconds, so a client that sends type-1 and goes silent frees its
 * ntlm_auth within seconds.
 */
export const LEASE_MAX_MS = 5000;
/** NTLM clients counted in memory are written to the DB this long after the first one since the last write. */
const FLUSH_EVERY_MS = 60_000;
/** Addresses counted between two writes; beyond, handshakes count under '-' (a bounded Map under a flood). */
const MAX_TALLIED_ADDRESSES = 1024;

export function createSeamlessService(options: SeamlessServiceOptions): SeamlessService {
  const { log } = options;
  const clock = options.clock ?? systemClock;
  const paths = seamlessPaths(options);
  const store = new Reopening(
    'seamless settings',
    () => {
      const db = openDatabase(options.dbPath, { mustExist: true, busyTimeoutMs: 0 });
      return { db, settings: new SeamlessSettingsStore(db, { clock }), ntlmClients: new NtlmClientStore(db) };
    },
    log,
    (opened) => opened.db.close(),
  );
  let version = -1;
  let state: SeamlessState | undefined;
  let kerberos: KerberosAcceptor | undefined;
  let pool: NtlmPool | undefined;
  const timers = options.timers ?? globalTimers;
  const children = options.children ?? DEFAULT_CHILDREN;
  const counts: StatefulCounts = { connections: 0, handshakes: 0, timers: 0 };

  const tally = new NtlmClientTally(MAX_TALLIED_ADDRESSES);
  let flushTimer: unknown;
  /** Write what was counted; on a failure (the DB busy or being reopened) keep it for the next time. */
  const flush = () => {
    if (flushTimer !== undefined) timers.clearTimeout(flushTimer);
    flushTimer = undefined;
    if (tally.size === 0) return;
    const taken = tally.take();
    try {
      const opened = store.get();
      if (opened === undefined) throw new Error('the session DB cannot be opened');
      opened.ntlmClients.add(taken, clock.now());
    } catch (error) {
      tally.restore(taken);
      log(
        `NTLM clients: not written (${error instanceof Error ? error.message : String(error)}); retried later`,
      );
      armFlush();
    }
  };
  const armFlush = () => {
    flushTimer ??= timers.setTimeout(flush, FLUSH_EVERY_MS);
  };
  const onNtlm = ({ address }: { address: string | undefined }) => {
    tally.add(address, clock.now());
    armFlush();
  };

  /** The joined state, re-read only when its version moved; throws when the DB cannot be read (BH, retried). */
  const current = (): SeamlessState | undefined => {
    const opened = store.get();
    if (opened === undefined) throw new Error('the session DB cannot be opened, see the log');
    try {
      const now = opened.settings.version();
      if (now !== version) {
        state = opened.settings.current();
        version = now;
        // The proxy's names may have changed with the state (a re-join under another name).
        kerberos = undefined;
        log(
          state === undefined
            ? 'seamless authentication: not enabled'
            : `seamless authentication: ${state.realm}`,
        );
        if (state === undefined && pool !== undefined) {
          const stopped = pool;
          pool = undefined;
          void stopped.close().catch(() => {});
        }
      }
    } catch (error) {
      store.fail(error);
      throw error;
    }
    return state;
  };

  const handshake = (scheme: StatefulScheme): Handshake | undefined => {
    const joined = current();
    if (joined === undefined) return undefined;
    kerberos ??= (options.kerberos ?? ((service) => createKerberosAcceptor({ log, service })))(
      proxyService(joined.realm, [joined.proxyFqdn, joined.machineName]),
    );
    pool ??= (
      options.ntlmPool ??
      ((smbConf) =>
        createNtlmPool({
          smbConf,
          maxNtlmssp: Math.min(children.negotiate + children.ntlm, 2 * MAX_SEAMLESS_CHILDREN),
          maxSpnego: Math.min(children.negotiate, MAX_SEAMLESS_CHILDREN),
          idleMs: NTLM_IDLE_MS,
          log,
        }))
    )(paths.smbConf);
    const made = createHandshake({
      scheme,
      names: { realm: joined.realm, netbios: joined.netbios },
      kerberos,
      ntlm: pool,
      clock,
      leaseMaxMs: LEASE_MAX_MS,
      onNtlm,
    });
    return options.results === undefined ? made : recordedHandshake(made, scheme, options.results, clock);
  };

  return {
    serve: (scheme, input, output) =>
      serveStatefulConnection({
        input,
        output,
        scheme,
        handshake: () => handshake(scheme),
        log,
        clock,
        timers,
        counts,
      }),
    counts: () => ({
      ...counts,
      leases: pool?.leased() ?? 0,
      processes: pool?.size() ?? 0,
      waiting: pool?.waiting() ?? 0,
    }),
    async close() {
      flush();
      await pool?.close();
      store.get()?.db.close();
    },
  };
}
