import { z } from 'zod';
import { helperChildren, helperConcurrency, port, seconds, squidPath } from './fields.ts';

/** Squid children per seamless scheme at most (squid.seamless.*Children); authd's ntlm_auth pool follows it. */
export const MAX_SEAMLESS_CHILDREN = 256;

/**
 * The configuration's `squid` section: what `doorman squid-conf` writes into squid.conf (the helpers, their
 * caches and children, the intercept ports) and where Set, Enable and Disable find Squid.
 */
export const squidSchema = z
  .object({
    /**
     * Seconds Squid caches a positive answer. A logout or a user switch on an IP shows in access.log only
     * after this; the helper answers in microseconds, so a short TTL costs almost nothing.
     */
    ttl: seconds.default(5),
    /** Seconds Squid caches "not identified": a fresh login shows only after this. */
    negativeTtl: seconds.default(0),
    /** Lookups a helper process is sent at once (Squid's concurrency=). */
    concurrency: helperConcurrency.default(100),
    childrenMax: helperChildren.default(2),
    /** Basic authentication against the directory (written only once a directory is applied). */
    basicAuth: z
      .object({
        realm: z
          .string()
          .regex(/^[A-Za-z0-9 ._-]{1,64}$/, 'must be 1-64 letters, digits, spaces or . _ -')
          .default('Doorman'),
        /** Seconds Squid trusts checked credentials before asking the helper again. */
        credentialsTtl: z.number().int().min(1).max(86_400).default(300),
        children: helperChildren.default(5),
        concurrency: helperConcurrency.default(50),
      })
      .strict()
      .prefault({}),
    /**
     * Seamless authentication's Negotiate and NTLM helpers (written only once the proxy has joined the
     * domain). Each child holds one client's handshake at a time (no concurrency) and costs about 1 MB
     * (a shim); Squid starts one and adds children as handshakes overlap, up to this many.
     */
    seamless: z
      .object({
        negotiateChildren: z.number().int().min(1).max(MAX_SEAMLESS_CHILDREN).default(20),
        ntlmChildren: z.number().int().min(1).max(MAX_SEAMLESS_CHILDREN).default(20),
        /**
         * Where this Squid includes `doorman squid-conf`'s output (/etc/squid/conf.d/doorman.conf). Set,
         * Enable and Disable (the admin screen's and the CLI's) rewrite it and run `squid -k reconfigure`;
         * null: they say which commands to run.
         */
        squidInclude: squidPath.nullable().default(null),
        /** The squid.conf to reconfigure (`squid -k reconfigure -f`); null: Squid's own. */
        squidConf: squidPath.nullable().default(null),
      })
      .strict()
      .prefault({}),
    /** The group external ACL (doorman_group): `acl staff external doorman_group "Staff Users"`. */
    groups: z
      .object({
        ttl: seconds.default(60),
        negativeTtl: seconds.default(60),
        childrenMax: helperChildren.default(2),
        concurrency: helperConcurrency.default(50),
        /**
         * Authenticated users pass only if in one of these groups; empty: any authenticated user passes.
         * Written into squid.conf as quoted strings, so no quotes or backslashes.
         */
        allow: z
          .array(
            z
              .string()
              .regex(
                /^[^"\\\p{Cc}]{1,256}$/u,
                'must be 1-256 characters without quotes, backslashes or control characters',
              ),
          )
          .default([]),
      })
      .strict()
      .prefault({}),
    intercept: z
      .object({
        /**
         * The captive portal's intercept port (the `http_port … intercept` the REDIRECT rules send port 80
         * to). null: `doorman squid-conf` writes no intercept, ICAP or adaptation line.
         */
        httpPort: port.nullable().default(null),
        /**
         * Opt-in HTTPS interception (the `https_port … intercept ssl-bump` the REDIRECT rules send port
         * 443 to). Needs Squid built with OpenSSL (Debian package squid-openssl; the GnuTLS build, package
         * squid, cannot parse it) and httpPort. null: port 443 is not intercepted by Squid.
         */
        httpsPort: port.nullable().default(null),
        /** What the HTTPS intercept port does with unidentified clients (identified ones are spliced). */
        tls: z
          .object({
            /**
             * bump: decrypt, so the splash redirect can be delivered (clients must trust the CA);
             * refuse: close their TLS handshake at once (no CA trust needed, no splash over HTTPS).
             */
            mode: z.enum(['bump', 'refuse']).default('bump'),
            /**
             * The signing CA, key and certificate in one PEM file (read by Squid as root). null: Doorman's
             * own, <stateDir>-tls/ssl-bump-ca.pem (root's alone), made by `doorman squid-conf --init-tls`.
             */
            caFile: squidPath.nullable().default(null),
            /** Squid's store of minted certificates (bump). null: <stateDir>/ssl-bump-db. */
            certDb: squidPath.nullable().default(null),
            /** The certificate helper of squid-openssl. */
            certgen: squidPath.default('/usr/lib/squid/security_file_certgen'),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .prefault({});
