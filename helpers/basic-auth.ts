/**
 * Squid Basic authentication helper, against the directory applied in Doorman:
 *
 *   auth_param basic program /path/to/node /path/to/helpers/basic-auth.ts [--config FILE]
 *   auth_param basic children 5 startup=1 idle=1 concurrency=50
 *
 * `doorman squid-conf` writes these lines once a directory is applied.
 */
import { checkBasic } from './basic-auth-check.ts';
import { runDirectoryHelper } from './directory-helper.ts';

await runDirectoryHelper('doorman-basic-auth', checkBasic);
