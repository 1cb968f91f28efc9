/**
 * Squid external ACL helper for directory groups (nested ones included):
 *
 *   external_acl_type doorman_group ttl=60 concurrency=50 %un /path/to/node /path/to/helpers/group-acl.ts
 *   acl staff external doorman_group "Staff Users"
 *
 * `doorman squid-conf` writes the external_acl_type line once a directory is applied.
 */
import { runDirectoryHelper } from './directory-helper.ts';
import { checkGroups } from './group-check.ts';

await runDirectoryHelper('doorman-group-acl', checkGroups);
