import { z } from 'zod';
import { ipAddress, port, seconds } from './fields.ts';
import { hasPasswordParameter, hasUserinfoPassword } from './postgres-url.ts';
import { squidSchema } from './squid-schema.ts';

/** The longest session lifetime anything may set: one year (365 days). */
export const MAX_SESSION_SECONDS = 31_536_000;
/** A session lifetime, seconds; null (the default): no limit. 0 is refused: "none" or "at once"? */
const sessionSeconds = z
  .number()
  .int()
  .min(1, 'must be 1 or more seconds (null for no limit)')
  .max(MAX_SESSION_SECONDS, `must be at most ${MAX_SESSION_SECONDS} seconds (one year)`)
  .nullable()
  .default(null);

/** At most `maxFailures` wrong attempts per key in `windowSeconds`, a window starting at the first. */
const failureLimit = (maxFailures: number, windowSeconds: number) =>
  z
    .object({
      maxFailures: z.number().int().min(1).max(10_000).default(maxFailures),
      windowSeconds: z.number().int().min(1).max(86_400).default(windowSeconds),
    })
    .strict()
    .prefault({});

const baseUrl = z
  .string()
  // abort: the refinements below call new URL(), which throws on a string that is not a URL.
  .url({ abort: true })
  .refine((u) => /^https?:$/.test(new URL(u).protocol), 'must be an http:// or https:// URL')
  // The string itself, not the parsed pathname: "http://host" has pathname "/" but {baseUrl}api/ would be wrong.
  .refine(
    (u) => u.endsWith('/') && new URL(u).pathname.endsWith('/'),
    'must end with "/" (the API is at {baseUrl}api/login/)',
  )
  .refine((u) => new URL(u).search === '' && new URL(u).hash === '', 'must not have a query or fragment');

/**
 * A PostgreSQL connection URL (libpq's form: several hosts, target_session_attrs), without a password: a
 * config file is read by more than the service user's processes, and a URL lands in logs and error messages.
 */
const postgresUrl = z
  .string()
  .max(2048, 'must be at most 2048 characters')
  .regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql://')
  .refine((url) => !hasUserinfoPassword(url), {
    message:
      'must not hold a password: put it in store.passwordFile (0600) or PGPASSWORD (an @ after the hosts is written %40)',
  })
  .refine((url) => !hasPasswordParameter(url), {
    message: 'must not have a password parameter: put it in store.passwordFile (0600) or PGPASSWORD',
  });

/**
 * The one configuration document. Every field has a documented default (docs/configuration.md), so a
 * Doorman with no file runs on loopback; a value that is present but wrong is an error, never replaced by
 * the default, and an unknown key is an error too (a typo must not pass as "unset").
 */
export const configSchema = z
  .object({
    /** Where clients reach Doorman: the API is {baseUrl}api/login/. */
    baseUrl: baseUrl.default('http://127.0.0.1:8180/'),
    /**
     * Connections the web app keeps open at once, over all its addresses and per client address (an IPv6
     * client: per /64). Over either, a new connection is closed at once: a flood of idle sockets costs a fixed
     * amount of memory instead of growing the process. trustedProxies (Squid, carrying many clients' requests)
     * are held only to the total.
     */
    server: z
      .object({
        maxConnections: z.number().int().min(1).max(100_000).default(1024),
        maxConnectionsPerAddress: z.number().int().min(1).max(100_000).default(64),
      })
      .strict()
      .prefault({}),
    /** Addresses the web app listens on. */
    listen: z
      .array(z.object({ host: ipAddress, port }).strict())
      .min(1)
      .default([{ host: '127.0.0.1', port: 8180 }]),
    /**
     * Peers whose X-Forwarded-For is believed (Squid, a reverse proxy). Anyone else's header is ignored:
     * the session is for the TCP peer.
     */
    trustedProxies: z.array(ipAddress).default(['127.0.0.1', '::1']),
    /** Directory of the session DB; readable by serviceUser and nobody else. */
    stateDir: z.string().startsWith('/', 'must be an absolute path').default('/var/lib/doorman'),
    /**
     * Seamless authentication's root-owned directory: smb.conf, krb5.conf, the HTTP/ keytab and Samba's own
     * state. Outside stateDir, which the service user owns: root acts here, and only in a directory that it
     * and every directory above it are root's alone. null: beside stateDir, `<stateDir>-samba`
     * (/var/lib/doorman-samba).
     */
    sambaDir: z
      .string()
      .regex(/^\/[^\s"'\\#]{0,4095}$/, 'must be an absolute path without spaces, quotes, backslashes or "#"')
      .nullable()
      .default(null),
    /** The SQLite session DB: a file name in stateDir (which alone is made private to serviceUser). */
    dbFile: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be a plain file name in stateDir, e.g. doorman.db')
      .default('doorman.db'),
    /**
     * Where sessions and settings live. sqlite (the default): the file dbFile in stateDir, for one box.
     * postgres: a database every box of a site shares (docs/several-proxies.md); the password comes from
     * passwordFile (0600, the service user's) or PGPASSWORD in the environment, never the URL.
     */
    store: z
      .discriminatedUnion('kind', [
        z.object({ kind: z.literal('sqlite') }).strict(),
        z
          .object({
            kind: z.literal('postgres'),
            url: postgresUrl,
            passwordFile: z.string().startsWith('/', 'must be an absolute path').nullable().default(null),
          })
          .strict(),
      ])
      .default({ kind: 'sqlite' }),
    /**
     * The user Squid runs helpers as (Debian: proxy). Started as root, Doorman gives the state dir to this
     * user and runs as it, so Squid's helpers and the web app share one DB. Ignored when not root.
     */
    serviceUser: z
      .string()
      .regex(/^[a-z_][a-z0-9_-]{0,31}$/, 'must be a system user name')
      .default('proxy'),
    api: z
      .object({
        /** Largest accepted form body, bytes. */
        maxBodyBytes: z.number().int().min(256).max(65_536).default(4096),
        /** Failed API-key attempts allowed from one address per window, then 429 until the window ends. */
        maxKeyFailures: z.number().int().min(1).max(10_000).default(10),
        keyFailureWindowSeconds: seconds.min(1).default(300),
        /**
         * Sessions made by the login API end after this long without traffic (sessionIdleSeconds) and this
         * long after the login at the latest (sessionMaxSeconds; the login's `timeout` field overrides it).
         * Stored with each session at login, so a change applies to later logins only.
         */
        sessionIdleSeconds: sessionSeconds,
        sessionMaxSeconds: sessionSeconds,
      })
      .strict()
      .prefault({}),
    /**
     * Wrong directory passwords, counted in the session DB for the splash page and the proxy's own prompt
     * (Basic) together: past either limit the password is refused without asking the directory. `account`
     * does not apply from an address group the account has signed in from before; keep it under the
     * directory's own lockout threshold (AD) so that guessing never locks an account out there.
     */
    passwordGuessing: z
      .object({
        account: failureLimit(5, 900),
        address: failureLimit(10, 300),
      })
      .strict()
      .prefault({}),
    /**
     * The audit trail (docs/audit.md): who logged in where and when, and what the admins did. Kept in the store
     * retentionDays (serve purges it hourly); also shipped as JSON lines to `file` (appended, created 0640,
     * reopened when logrotate moves it) and/or to syslog (`syslog: true`: /dev/log, authpriv.info, tag
     * doorman-audit). `box`: this box's name in every event; null: the host name.
     */
    audit: z
      .object({
        box: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be a host-like name: letters, digits, . _ -')
          .nullable()
          .default(null),
        retentionDays: z.number().int().min(1).max(3650).default(180),
        file: z
          .string()
          .regex(/^\/[^\0]{0,4095}$/, 'must be an absolute path')
          .nullable()
          .default(null),
        syslog: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    squid: squidSchema,
    /**
     * The captive portal's ICAP service, run by `doorman serve`; Squid reaches it at icap://host:port/reqmod.
     * Loopback by default: Squid normally runs on the same machine.
     */
    icap: z
      .object({
        host: ipAddress.default('127.0.0.1'),
        port: port.default(1344),
        /** Connections open at once, from all addresses; one more gets 503. */
        maxConnections: z.number().int().min(1).max(10_000).default(100),
        /**
         * Connections open at once from one address (IPv6: one /64), advertised to Squid as Max-Connections
         * (Squid then stays within it); one more gets 503. Absent: half of maxConnections, so one other
         * address can never take the places Squid was told it may use. A connection that has carried Squid's
         * key counts in maxConnections only (icap-server/slots.ts).
         */
        maxConnectionsPerAddress: z.number().int().min(1).max(10_000).optional(),
        /** Seconds a request (its heads and body) may take to arrive, however slowly it trickles; then 408. */
        requestTimeoutSeconds: z.number().int().min(1).max(3600).default(30),
        /**
         * Worker threads answering ICAP, all on host:port (SO_REUSEPORT); 0 (the default): serve's own
         * thread (icap-server/workers.ts says why).
         */
        workers: z.number().int().min(0).max(64).optional(),
      })
      .strict()
      .superRefine(({ maxConnectionsPerAddress: perAddress, maxConnections }, ctx) => {
        if (perAddress !== undefined && perAddress > maxConnections)
          ctx.addIssue({
            code: 'custom',
            path: ['maxConnectionsPerAddress'],
            message: `${perAddress} is more than icap.maxConnections (${maxConnections}): must be at most that`,
          });
      })
      .prefault({}),
    /**
     * Prometheus metrics of the whole box (docs/metrics.md). listen: a listener of serve's own answering GET
     * /metrics (keep it on loopback or a management address); null (the default): none. tokenFile: a bearer
     * token (the file's first line; 0600, the service user's) every scrape must carry, on either listener; set,
     * the metrics are also served on the web app's own listeners at {baseUrl}metrics. Both null: no metrics.
     */
    metrics: z
      .object({
        listen: z.object({ host: ipAddress, port }).strict().nullable().default(null),
        tokenFile: z.string().startsWith('/', 'must be an absolute path').nullable().default(null),
      })
      .strict()
      .prefault({}),
    /** How often a session helper writes "last seen" times, seconds. */
    lastSeenFlushSeconds: z.number().int().min(1).max(3600).default(30),
  })
  .strict()
  .superRefine((config, ctx) => {
    // A helper learns of a session's traffic late: Squid asks it only once its cached answer is older than
    // ttl, and another helper's "last seen" counts only once flushed. A limit shorter than that lag could end
    // a session in use.
    const idle = config.api.sessionIdleSeconds;
    const least = leastIdleSeconds(config);
    // idle < 1 is reported by its own bounds already.
    if (idle !== null && idle >= 1 && idle < least) {
      ctx.addIssue({
        code: 'custom',
        path: ['api', 'sessionIdleSeconds'],
        message: `must be at least 2 × lastSeenFlushSeconds + squid.ttl (${least} seconds), or null`,
      });
    }
    // Two listeners on one port would fail at start with EADDRINUSE: said here, naming both fields.
    const metrics = config.metrics.listen;
    if (metrics !== null) {
      const taken = [
        ...config.listen.map((l, i) => ({ ...l, field: `listen[${i}]` })),
        { host: config.icap.host, port: config.icap.port, field: 'icap' },
      ].find(
        (l) =>
          l.port === metrics.port &&
          (l.host === metrics.host || isWildcard(l.host) || isWildcard(metrics.host)),
      );
      if (taken !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['metrics', 'listen', 'port'],
          message: `${metrics.port} is ${taken.field}'s port already: choose another port`,
        });
    }
    // HTTPS interception only delivers the portal: without the HTTP one there is no ICAP service to ask.
    const { httpPort, httpsPort } = config.squid.intercept;
    if (httpsPort !== null && httpPort === null) {
      ctx.addIssue({
        code: 'custom',
        path: ['squid', 'intercept', 'httpsPort'],
        message: `${httpsPort} needs squid.intercept.httpPort set too (the captive portal), or null`,
      });
    }
    if (httpsPort !== null && httpsPort === httpPort) {
      ctx.addIssue({
        code: 'custom',
        path: ['squid', 'intercept', 'httpsPort'],
        message: `${httpsPort} is squid.intercept.httpPort already: choose another port`,
      });
    }
  });

/** 0.0.0.0 or ::, which take a port on every address. */
function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;

/**
 * The shortest idle limit a session may have under this configuration, in seconds: a helper learns of a
 * session's traffic late (Squid asks it only once its cached answer is older than squid.ttl, and another helper
 * child's "last seen" counts only once flushed), so a shorter limit could end a session in use.
 */
export function leastIdleSeconds(config: { lastSeenFlushSeconds: number; squid: { ttl: number } }): number {
  return 2 * config.lastSeenFlushSeconds + config.squid.ttl;
}
