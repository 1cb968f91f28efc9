import { showValue } from '../../lib/errors.ts';
import { normaliseIp } from '../../lib/net/address.ts';
import {
  actionOf,
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  iso,
  noExtra,
  openStores,
  CLI_ACTOR,
  out,
  parse,
  UsageError,
} from '../command.ts';

const help = `Usage: doorman sessions list
       doorman sessions end IP
       doorman sessions clear

  list    live sessions: key, user, source, created, last seen, idle limit, when it runs out as of
          last seen (- for none), hard expiry (- for none)
  end     end the session on one IP address (IPv4 or IPv6)
  clear   end every session

Squid caches each answer for its ttl (see doorman squid-conf): an ended session is refused after at most that.
Last seen is written by Squid's helpers every lastSeenFlushSeconds, so IDLE UNTIL may be that much early;
a session past it is listed until its hard expiry or the next login on its address, but refused.

Options:
${CONFIG_HELP}`;

export const sessionsCommand: Command = {
  name: 'sessions',
  summary: 'list, end and clear sessions',
  help,
  async run(argv) {
    const { values, positionals } = parse({ args: argv, options: CONFIG_OPTION, allowPositionals: true });
    if (values.help) return (out(help), EXIT.ok);
    const { action, args } = actionOf('sessions', positionals, ['list', 'end', 'clear'], 1);
    const [arg] = args;
    let ip: string | undefined;
    if (action === 'end') {
      ip = normaliseIp(arg ?? '');
      if (ip === undefined) {
        throw new UsageError(
          `sessions end: ${arg === undefined ? 'an IP address is required' : `${showValue(arg)} is not an IP address`}`,
        );
      }
    } else {
      noExtra(args);
    }
    const stores = await openStores(configFrom(values.config));
    const { sessions } = stores.store;
    try {
      if (ip !== undefined) {
        const ended = await sessions.end({ kind: 'ip', value: ip }, (session) =>
          session === undefined
            ? undefined
            : { kind: 'session.ended', actor: CLI_ACTOR, user: session.username, address: ip },
        );
        if (ended === undefined) {
          process.stderr.write(`no session on ${ip}\n`);
          return EXIT.failed;
        }
        out(`ended the session of ${ended.username} on ${ip}`);
      } else if (action === 'clear') {
        out(
          `ended ${await sessions.clear({ kind: 'sessions.cleared', actor: CLI_ACTOR, detail: { all: true } })} session(s)`,
        );
      } else {
        const header = [
          'KEY',
          'USER',
          'SOURCE',
          'CREATED',
          'LAST SEEN',
          'IDLE LIMIT',
          'IDLE UNTIL',
          'EXPIRES',
        ];
        out(header.join('\t'));
        for (const s of sessions.list()) {
          const idle = s.idleTimeoutMs;
          out(
            [
              s.key.value,
              s.username,
              s.source,
              iso(s.createdAt),
              iso(s.lastSeen),
              idle === undefined ? '-' : `${idle / 1000}s`,
              iso(idle === undefined ? undefined : s.lastSeen + idle),
              iso(s.expiresAt),
            ].join('\t'),
          );
        }
      }
    } finally {
      await stores.close();
    }
    return EXIT.ok;
  },
};
