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

const help = `Usage: doorman api-key create --name NAME
       doorman api-key list
       doorman api-key revoke --name NAME

Keys for the login API (POST {baseUrl}api/login/ and api/logout/).
  create   make a key and print it once: only its hash is kept, it cannot be shown again
  list     names, creation, last use (to the minute) and revocation of every key (never the keys)
  revoke   stop a key at once; the next request with it gets 401

Options:
  -n, --name NAME     the key's name (1-64 characters: letters, digits, space, . _ @ -)
${CONFIG_HELP}`;

export const apiKeyCommand: Command = {
  name: 'api-key',
  summary: 'create, list and revoke login-API keys',
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: { ...CONFIG_OPTION, name: { type: 'string', short: 'n' } },
      allowPositionals: true,
    });
    if (values.help) return (out(help), EXIT.ok);
    const { action } = actionOf('api-key', positionals, ['create', 'list', 'revoke']);
    if (action !== 'list' && values.name === undefined)
      throw new UsageError(`api-key ${action}: --name is required`);
    const stores = await openStores(configFrom(values.config));
    const { apiKeys, audit } = stores.store;
    try {
      if (action === 'create') {
        const { key, info } = await apiKeys.create(values.name as string);
        await audit.record({ kind: 'api-key.created', actor: CLI_ACTOR, detail: { name: info.name } });
        process.stderr.write(`API key "${info.name}" created. It is shown once; store it now:\n`);
        out(key);
      } else if (action === 'revoke') {
        const info = await apiKeys.revoke(values.name as string);
        await audit.record({ kind: 'api-key.revoked', actor: CLI_ACTOR, detail: { name: info.name } });
        out(`revoked "${info.name}" at ${iso(info.revokedAt)}`);
      } else {
        out(['NAME', 'CREATED', 'LAST USED', 'REVOKED'].join('\t'));
        for (const k of apiKeys.list()) {
          out([k.name, iso(k.createdAt), iso(k.lastUsedAt), iso(k.revokedAt)].join('\t'));
        }
      }
    } finally {
      await stores.close();
    }
    return EXIT.ok;
  },
};
