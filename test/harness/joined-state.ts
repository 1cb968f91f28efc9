import { chmodSync, chownSync, copyFileSync, mkdirSync } from 'node:fs';
import { parseConfig } from '../../lib/config/load.ts';
import { seamlessPaths } from '../../lib/seamless/paths.ts';
import { openStoresKeepingRoot } from '../../lib/seamless/stores.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { joinedState } from '../support/seamless-state.ts';

/**
 * A Doorman that "joined" the test realm EXAMPLE.TEST with no domain join (Kerberos against an MIT KDC, the
 * seamless benches): `keytab` and `krb5Conf` copied where Enable leaves them (lib/seamless/paths.ts, the keytab
 * root:<helper group> 0640), the replay cache directory the helper user's, and the joined state
 * (test/support/seamless-state.ts) saved in the session DB, as Enable saves it. Makes stateDir as `doorman
 * serve` would when it is not there yet.
 */
export function recordJoined(stateDir: string, files: { keytab: string; krb5Conf: string }): void {
  const config = parseConfig({ stateDir }, 'the test');
  const paths = seamlessPaths(config);
  const helper = lookupUser(config.serviceUser);
  const stores = openStoresKeepingRoot(config);
  try {
    mkdirSync(paths.sambaDir, { recursive: true, mode: 0o755 });
    copyFileSync(files.keytab, paths.keytab);
    chownSync(paths.keytab, 0, helper.gid);
    chmodSync(paths.keytab, 0o640);
    copyFileSync(files.krb5Conf, paths.krb5Conf);
    mkdirSync(paths.rcacheDir, { recursive: true, mode: 0o700 });
    chownSync(paths.rcacheDir, helper.uid, helper.gid);
    stores.seamless.save(joinedState(Date.now()));
  } finally {
    stores.close();
  }
}
