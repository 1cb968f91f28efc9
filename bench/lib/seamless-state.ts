/**
 * bench/lib/seamless-state.ts CONFIG STATE_DIR KEYTAB KRB5_CONF: a Doorman that "joined" a test realm, for the
 * seamless benches: the config file, then test/harness/joined-state.ts (the keytab and krb5.conf where Enable
 * leaves them, the replay cache directory, and the joined state saved in the session DB).
 */
import { writeFileSync } from 'node:fs';
import { seamlessPaths } from '../../lib/seamless/paths.ts';
import { recordJoined } from '../../test/harness/joined-state.ts';

const [configFile, stateDir, keytab, krb5Conf] = process.argv.slice(2);
if (configFile === undefined || stateDir === undefined || keytab === undefined || krb5Conf === undefined) {
  console.error('usage: seamless-state.ts CONFIG STATE_DIR KEYTAB KRB5_CONF');
  process.exit(2);
}
writeFileSync(configFile, JSON.stringify({ stateDir }, null, 2), { mode: 0o644 });
recordJoined(stateDir, { keytab, krb5Conf });
console.log(`joined state saved; keytab ${seamlessPaths({ stateDir: stateDir, sambaDir: null }).keytab}`);
