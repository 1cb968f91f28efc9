import type { Readable, Writable } from 'node:stream';
import { systemClock, type Clock } from '../../lib/clock.ts';
import type { StatefulScheme } from '../../lib/helper-protocol/negotiate.ts';
import type { Log } from '../../lib/log.ts';
import { createHandshake, type Handshake, type KerberosAcceptor } from '../../lib/seamless/handshake.ts';
import { createKerberosAcceptor } from '../../lib/seamless/kerberos-acceptor.ts';
import { proxyService, type ProxyService } from '../../lib/seamless/proxy-service.ts';
import { seamlessPaths } from '../../lib/seamless/paths.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { SeamlessSettingsStore, type SeamlessState } from '../../lib/store/seamless-settings-store.ts';
import { Reopening } from '../reopening.ts';
import { createNtlmPool, type NtlmPool } from './ntlm-pool.ts';
import { serveStatefulConnection } from './stateful-service.ts';

/**
 * authd's Negotiate and NTLM connections (one Squid child each, one Handshake each: stateful-service.ts),
 * against the joined domain in the session DB. Loaded by main.ts on the first such connection, so the Kerberos
 * library and ntlm_auth cost nothing where seamless authentication is not used.
 *
 * The store's version is read for every new handshake (one indexed read): Enable, Disable and a repair are
 * picked up without a restart. Disabled (no state): every line is answered BH, and the ntlm_auth pool, if
 * one was started, is stopped.
 */
export interface SeamlessService {
  /** Serve one connection until its input ends. */
  serve(scheme: StatefulScheme, input: Readable, output: Writable): Promise<void>;
  close(): Promise<void>;
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
}

/**
 * ntlm_auth processes at most, per protocol (docs/seamless-design.md §1: about 16 MB each, so 8 of them keep 20 + 20 children and authd under 300 MB; raw NTLM is the
 * common case, NTLM inside SPNEGO the rare one). One of each stays warm; the rest stop after NTLM_IDLE_MS.
 */
const MAX_NTLMSSP = 6;
const MAX_SPNEGO = 2;
const NTLM_IDLE_MS = 60_000;
/** A handshake's ntlm_auth lease with no line for this long is released (the client went away mid-NTLM). */
const LEASE_IDLE_MS = 30_000;

export function createSeamlessService(options: SeamlessServiceOptions): SeamlessService {
  const { log } = options;
  const clock = options.clock ?? systemClock;
  const paths = seamlessPaths(options);
  const store = new Reopening(
    'seamless settings',
    () => {
      const db = openDatabase(options.dbPath, { mustExist: true, busyTimeoutMs: 0 });
      return { db, settings: new SeamlessSettingsStore(db, { clock }) };
    },
    log,
    (opened) => opened.db.close(),
  );
  let version = -1;
  let state: SeamlessState | undefined;
  let kerberos: KerberosAcceptor | undefined;
  let pool: NtlmPool | undefined;

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
          maxNtlmssp: MAX_NTLMSSP,
          maxSpnego: MAX_SPNEGO,
          idleMs: NTLM_IDLE_MS,
          log,
        }))
    )(paths.smbConf);
    return createHandshake({
      scheme,
      names: { realm: joined.realm, netbios: joined.netbios },
      kerberos,
      ntlm: pool,
      clock,
      leaseIdleMs: LEASE_IDLE_MS,
    });
  };

  return {
    serve: (scheme, input, output) =>
      serveStatefulConnection({ input, output, scheme, handshake: () => handshake(scheme), log }),
    async close() {
      await pool?.close();
      store.get()?.db.close();
    },
  };
}
