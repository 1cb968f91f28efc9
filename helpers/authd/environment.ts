import type { Config } from '../../lib/config/schema.ts';
import { seamlessPaths } from '../../lib/seamless/paths.ts';

/**
 * The environment authd runs in: the Kerberos acceptor reads these once (lib/seamless/kerberos-acceptor.ts).
 * GSS_MECH_CONFIG=/dev/null keeps a system-wide gss-ntlmssp out of the acceptor (lab §6.2) unless the caller's
 * own environment says otherwise (tests select gss-ntlmssp that way); UV_THREADPOOL_SIZE bounds the threads
 * that GSSAPI and the DB's file work run on.
 */
export function authdEnvironment(config: Config, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const paths = seamlessPaths(config);
  return {
    ...env,
    KRB5_KTNAME: `FILE:${paths.keytab}`,
    KRB5_CONFIG: paths.krb5Conf,
    KRB5RCACHEDIR: paths.rcacheDir,
    GSS_MECH_CONFIG: env.GSS_MECH_CONFIG ?? '/dev/null',
    UV_THREADPOOL_SIZE: env.UV_THREADPOOL_SIZE ?? '4',
  };
}
