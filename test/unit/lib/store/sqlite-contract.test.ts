import { describe } from 'vitest';
import { useSqliteSite } from '../../../harness/sqlite-site.ts';
import { describeAdmins } from './contract/admins.ts';
import { describeAudit } from './contract/audit.ts';
import { describeApiKeys } from './contract/api-keys.ts';
import { describeDeviceGroups } from './contract/device-groups.ts';
import { describeDirectorySettings } from './contract/directory-settings.ts';
import { describePortalSettings } from './contract/portal-settings.ts';
import { describePortalSessions } from './contract/sessions-portal.ts';
import { describeSessionSearch } from './contract/sessions-search.ts';
import { describeSessions } from './contract/sessions.ts';

/**
 * Every store contract suite on SQLite: boxes with a handle each on one file, as a box's processes have. What
 * only SQLite has (the lock another process holds, group commit, close) is in sqlite-store.test.ts and the
 * classes' own tests; PostgreSQL runs the same suites in postgres/*.test.ts.
 */
describe('the SQLite store (contract)', () => {
  const { open } = useSqliteSite();
  describeSessions(open);
  describePortalSessions(open);
  describeSessionSearch(open);
  describeApiKeys(open);
  describeAdmins(open);
  describeDeviceGroups(open);
  describePortalSettings(open);
  describeDirectorySettings(open);
  describeAudit(open);
});
