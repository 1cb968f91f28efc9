/**
 * Squid Basic authentication helper, against the directory applied in Doorman:
 *
 *   auth_param basic program /path/to/node /path/to/helpers/basic-auth.ts [--config FILE]
 *   auth_param basic children 5 startup=1 idle=1 concurrency=50
 *
 * The same check as authd's basic.sock (helpers/authd/directory-service.ts), stand-alone: `doorman squid-conf`
 * writes the shim instead, once a directory is applied; this runs without authd (tests, benches).
 */
import { checkBasic } from './basic-auth-check.ts';
import { runDirectoryHelper } from './directory-helper.ts';

await runDirectoryHelper('doorman-basic-auth', checkBasic);
