import { directoryChange } from '../../lib/audit/changes.ts';
import { readCapped } from '../../lib/fs/read-capped.ts';
import { testSettings } from '../../lib/directory/directory.ts';
import { type DirectorySettings, settingsWarnings } from '../../lib/directory/settings.ts';
import { DoormanError, showValue } from '../../lib/errors.ts';
import { MAX_BIND_PASSWORD_LENGTH } from '../../lib/store/directory-settings-store.ts';
import { readFirstLine } from '../read-secret.ts';
import {
  actionOf,
  CLI_ACTOR,
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  openStores,
  out,
  parse,
  type Stores,
  UsageError,
} from '../command.ts';

const help = `Usage: doorman directory show
       doorman directory test
       doorman directory set --kind KIND --host FQDN --base-dn DN --bind-dn DN [--password-stdin] [options]

The directory (Active Directory or OpenLDAP / Open Directory) that Basic authentication, groups and the portal
use. "set" is Save & apply: it checks every field, connects, binds as the bind account and counts the user
groups with the NEW settings, and only if all that works makes them the settings in force ("Found N user
groups"); otherwise it says what is wrong and the previous settings stay in force. "test" does the same
check on the settings in force. "show" prints them (never the password).

The bind password is read from standard input with --password-stdin (never from the command line, where
other users could read it); without it, "set" keeps the stored password. It is kept in clear text in
<stateDir>/directory-bind-password, mode 0600, readable only by the service user.

Options for set:
      --kind KIND            active-directory (Windows domain) or open-directory (OpenLDAP, Open Directory)
      --host FQDN            the directory server's fully-qualified name (an IP only for open-directory)
      --base-dn DN           LDAP search base in domain components, e.g. DC=example,DC=test
      --bind-dn DN           the account to search as, a full DN, e.g. "CN=Squid Proxy,CN=Users,DC=example,DC=test"
      --password-stdin       read the bind password from the first line of standard input
      --transport T          ldaps (default), starttls, or plain (passwords in clear: avoid)
      --port N               default 636 for ldaps, 389 otherwise
      --ca-file FILE         PEM file of the CA that signed the server's certificate
      --address IP           connect to this address instead of resolving --host (TLS still checks --host)
      --connect-timeout MS   default 5000
      --timeout MS           default 10000
      --password-cache S     seconds a successful password check is remembered (salted hash; default 60;
                             a changed password or a disabled account is still seen at once)
      --group-cache S        seconds a user's groups are remembered (default 60)
${CONFIG_HELP}`;

const integer = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`--${name}: ${showValue(value)} is not a whole number`);
  return Number(value);
};

export const directoryCommand: Command = {
  name: 'directory',
  summary: 'apply, test and show the directory settings (LDAP)',
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: {
        ...CONFIG_OPTION,
        kind: { type: 'string' },
        host: { type: 'string' },
        'base-dn': { type: 'string' },
        'bind-dn': { type: 'string' },
        'password-stdin': { type: 'boolean', default: false },
        transport: { type: 'string' },
        port: { type: 'string' },
        'ca-file': { type: 'string' },
        address: { type: 'string' },
        'connect-timeout': { type: 'string' },
        timeout: { type: 'string' },
        'password-cache': { type: 'string' },
        'group-cache': { type: 'string' },
      },
      allowPositionals: true,
    });
    if (values.help) return (out(help), EXIT.ok);
    const { action } = actionOf('directory', positionals, ['set', 'test', 'show']);
    // Read everything the user gave before dropping privileges (the CA file may be readable by root only).
    const input: Record<string, unknown> | undefined =
      action === 'set'
        ? Object.fromEntries(
            Object.entries({
              kind: values.kind,
              host: values.host,
              baseDn: values['base-dn'],
              bindDn: values['bind-dn'],
              transport: values.transport,
              port: integer('port', values.port),
              caCertificate: values['ca-file'] === undefined ? undefined : readCa(values['ca-file']),
              address: values.address,
              connectTimeoutMs: integer('connect-timeout', values['connect-timeout']),
              timeoutMs: integer('timeout', values.timeout),
              passwordCacheSeconds: integer('password-cache', values['password-cache']),
              groupCacheSeconds: integer('group-cache', values['group-cache']),
            }).filter(([, v]) => v !== undefined),
          )
        : undefined;
    const password = values['password-stdin']
      ? await readFirstLine(process.stdin, MAX_BIND_PASSWORD_LENGTH * 4)
      : undefined;

    const loaded = configFrom(values.config);
    const stores = await openStores(loaded);
    const store = stores.store.directory;
    try {
      if (action === 'show') {
        const current = store.load();
        if (current === undefined) {
          process.stderr.write('no directory applied\n');
          return EXIT.failed;
        }
        out(JSON.stringify(current.settings, null, 2));
        return EXIT.ok;
      }
      if (action === 'test') {
        const current = store.load();
        if (current === undefined) {
          process.stderr.write('no directory applied\n');
          return EXIT.failed;
        }
        const tested = await testSettings(current.settings, current.password);
        if (!tested.ok) {
          process.stderr.write(`${tested.error.message}\n`);
          return EXIT.failed;
        }
        out(`Found ${tested.groupCount} user group${tested.groupCount === 1 ? '' : 's'}`);
        return EXIT.ok;
      }
      const before = settingsInForce(store);
      const result = await store.apply(input, password, { test: (s, p) => testSettings(s, p) });
      if (!result.ok) {
        process.stderr.write(`not applied, the previous settings stay in force:\n${result.message}\n`);
        return EXIT.failed;
      }
      await stores.store.audit.record({
        kind: 'settings.saved',
        actor: CLI_ACTOR,
        detail: directoryChange(before, result.settings, password !== undefined),
      });
      for (const warning of settingsWarnings(result.settings)) process.stderr.write(`warning: ${warning}\n`);
      out(result.message);
      return EXIT.ok;
    } finally {
      await stores.close();
    }
  },
};

/** The settings applied before this set, for the trail's "from"; none when they cannot be read (set repairs that). */
function settingsInForce(store: Stores['store']['directory']): DirectorySettings | undefined {
  try {
    return store.load()?.settings;
  } catch (error) {
    if (error instanceof DoormanError) return undefined;
    throw error;
  }
}

function readCa(file: string): string {
  try {
    // The schema allows 64 KiB of PEM; a bigger file is not a CA certificate.
    return readCapped(file, 64 * 1024);
  } catch (error) {
    const reason =
      error instanceof DoormanError
        ? 'larger than 64 KiB'
        : ((error as NodeJS.ErrnoException).code ?? 'error');
    throw new UsageError(`--ca-file: cannot use ${showValue(file)}: ${reason}`);
  }
}
