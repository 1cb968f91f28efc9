import { InvalidInputError } from '../../lib/errors.ts';
import { MAX_PASSWORD_BYTES } from '../../lib/security/password-hash.ts';
import {
  actionOf,
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  iso,
  openStores,
  CLI_ACTOR,
  out,
  parse,
  UsageError,
} from '../command.ts';
import { promptHidden, readFirstLine, type TtyInput } from '../read-secret.ts';

const help = `Usage: doorman admin passwd --user NAME
       doorman admin list
       doorman admin remove --user NAME

Administrators of the web app's admin screens ({baseUrl}admin/).
  passwd   create the admin or set a new password; ends every sign-in of that admin. The password is read
           from stdin: typed at a prompt without echo on a terminal, otherwise the first line
           (printf '%s\\n' "$PASSWORD" | doorman admin passwd --user NAME). It is never taken from the
           command line, which other local users can read.
  list     names, creation and last password change (never a password or hash)
  remove   delete the admin and end their sign-ins

Options:
  -u, --user NAME     the admin's name (1-64 characters: letters, digits, . _ @ -)
${CONFIG_HELP}`;

export const adminCommand: Command = {
  name: 'admin',
  summary: 'set passwords of, list and remove web admins',
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: { ...CONFIG_OPTION, user: { type: 'string', short: 'u' } },
      allowPositionals: true,
    });
    if (values.help) return (out(help), EXIT.ok);
    const { action } = actionOf('admin', positionals, ['passwd', 'list', 'remove']);
    if (action === 'list' && values.user !== undefined)
      throw new UsageError('admin list: --user is not used');
    if (action !== 'list' && values.user === undefined)
      throw new UsageError(`admin ${action}: --user is required`);
    const user = values.user ?? '';
    const loaded = configFrom(values.config);
    // Read the password before opening the DB: a prompt must not hold the DB open while someone types.
    const password = action === 'passwd' ? await readNewPassword(user) : '';
    const stores = await openStores(loaded);
    const { admins, audit } = stores.store;
    try {
      if (action === 'passwd') {
        const { created } = await admins.setPassword(user, password);
        await audit.record({
          kind: created ? 'admin.created' : 'admin.password-reset',
          actor: CLI_ACTOR,
          detail: { name: user },
        });
        out(created ? `created admin "${user}"` : `changed the password of "${user}"; their sign-ins ended`);
      } else if (action === 'remove') {
        await admins.remove(user);
        await audit.record({ kind: 'admin.removed', actor: CLI_ACTOR, detail: { name: user } });
        out(`removed admin "${user}"`);
      } else {
        out(['NAME', 'CREATED', 'PASSWORD CHANGED'].join('\t'));
        for (const a of admins.list()) out([a.name, iso(a.createdAt), iso(a.updatedAt)].join('\t'));
      }
    } finally {
      await stores.close();
    }
    return EXIT.ok;
  },
};

/** From a terminal: typed twice, without echo. Otherwise: stdin's first line. */
async function readNewPassword(user: string): Promise<string> {
  const stdin: TtyInput = process.stdin;
  if (stdin.isTTY !== true) return readFirstLine(process.stdin, 4 * MAX_PASSWORD_BYTES);
  const first = await promptHidden(stdin, process.stderr, `New password for ${user}: `, MAX_PASSWORD_BYTES);
  if (first === '') throw new InvalidInputError('password', 'must not be empty; nothing changed');
  const again = await promptHidden(stdin, process.stderr, 'Again: ', MAX_PASSWORD_BYTES);
  if (again !== first) throw new InvalidInputError('password', 'the two entries differ; nothing changed');
  return first;
}
