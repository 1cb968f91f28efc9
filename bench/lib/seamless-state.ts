/**
 * bench/lib/seamless-state.ts CONFIG STATE_DIR KEYTAB KRB5_CONF: a Doorman that "joined" a test realm, for the
 * seamless benches: the config file, the keytab and krb5.conf where Enable leaves them (lib/seamless/paths.ts,
 * keytab root:<helper group> 0640), the replay cache directory, and the joined state saved in the session DB.
 */
import { chmodSync, chownSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { parseConfig } from '../../lib/config/load.ts';
import { seamlessPaths } from '../../lib/seamless/paths.ts';
import { openStoresKeepingRoot } from '../../lib/seamless/stores.ts';
import { lookupUser } from '../../lib/system/service-user.ts';

const [configFile, stateDir, keytab, krb5Conf] = process.argv.slice(2);
if (configFile === undefined || stateDir === undefined || keytab === undefined || krb5Conf === undefined) {
  console.error('usage: seamless-state.ts CONFIG STATE_DIR KEYTAB KRB5_CONF');
  process.exit(2);
}
writeFileSync(configFile, JSON.stringify({ stateDir }, null, 2), { mode: 0o644 });
const config = parseConfig({ stateDir }, configFile);
const paths = seamlessPaths(stateDir);
const helper = lookupUser(config.serviceUser);
// First: it makes stateDir as `doorman serve` would, the helper user's.
const stores = openStoresKeepingRoot(config);
mkdirSync(paths.sambaDir, { recursive: true, mode: 0o755 });
copyFileSync(keytab, paths.keytab);
chownSync(paths.keytab, 0, helper.gid);
chmodSync(paths.keytab, 0o640);
copyFileSync(krb5Conf, paths.krb5Conf);
mkdirSync(paths.rcacheDir, { recursive: true, mode: 0o700 });
chownSync(paths.rcacheDir, helper.uid, helper.gid);
try {
  stores.seamless.save({
    serverVersion: '2012',
    domain: 'example.test',
    realm: 'EXAMPLE.TEST',
    netbios: 'EXAMPLE',
    adminUser: 'Administrator',
    proxyFqdn: 'proxy.example.test',
    machineName: 'PROXY',
    joinedAt: Date.now(),
  });
} finally {
  stores.close();
}
console.log(`joined state saved; keytab ${paths.keytab}`);
