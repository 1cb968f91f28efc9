/**
 * Squid external ACL helper for directory groups (nested ones included):
 *
 *   external_acl_type doorman_group ttl=60 concurrency=50 %un /path/to/node /path/to/helpers/group-acl.ts
 *   acl staff external doorman_group "Staff Users"
 *
 * The same check as authd's group.sock (helpers/authd/directory-service.ts), stand-alone: `doorman squid-conf`
 * writes the shim instead, once a directory is applied; this runs without authd (tests, benches).
 */
import { runDirectoryHelper } from './directory-helper.ts';
import { checkGroups } from './group-check.ts';

await runDirectoryHelper('doorman-group-acl', checkGroups);
