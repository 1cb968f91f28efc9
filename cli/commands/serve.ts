import type { RequestListener } from 'node:http';
import { systemClock } from '../../lib/clock.ts';
import { bufferedStderrLog } from '../../lib/log.ts';
import { testSettings } from '../../lib/directory/directory.ts';
import { directoryAdminFrom } from '../../portal/admin/directory-admin.ts';
import { createApp } from '../../portal/app.ts';
import { startServer } from '../../portal/server.ts';
import {
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  noExtra,
  openStores,
  out,
  parse,
} from '../command.ts';

const help = `Usage: doorman serve

Run the web app: the login API ({baseUrl}api/login/, api/logout/) and the admin screens ({baseUrl}admin/,
sign in with an account made by "doorman admin passwd"). Listens on the configured addresses first,
then (when started as root) runs as the service user, who owns the session DB. Stops on SIGTERM or SIGINT.

Options:
${CONFIG_HELP}`;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the web app (login API, admin screens)',
  help,
  async run(argv) {
    const { values, positionals } = parse({ args: argv, options: CONFIG_OPTION, allowPositionals: true });
    if (values.help) return (out(help), EXIT.ok);
    noExtra(positionals);
    const loaded = configFrom(values.config);
    const log = bufferedStderrLog('doorman');
    // Bind first (ports below 1024 need root), then give up root before the DB is opened or a request read.
    // A request that arrives on the first address while the others are still being bound gets a 503.
    const app: { handle?: RequestListener } = {};
    const late = {
      callback: (): RequestListener => (req, res) => {
        if (app.handle) app.handle(req, res);
        else res.writeHead(503, { 'retry-after': '1', 'cache-control': 'no-store' }).end();
      },
    };
    const server = await startServer(late, loaded.config.listen);
    const stores = openStores(loaded);
    app.handle = createApp({
      config: loaded.config,
      sessions: stores.sessions,
      commits: stores.commits,
      apiKeys: stores.apiKeys,
      clock: systemClock,
      log,
      admin: {
        store: stores.admins,
        directory: directoryAdminFrom(stores.directory, {
          test: (s, password) => testSettings(s, password, { log }),
        }),
      },
    }).callback();
    const where = server.addresses.map((a) =>
      a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`,
    );
    log(
      `listening on ${where.join(', ')}; base URL ${loaded.config.baseUrl}; config ${loaded.path ?? '(embedded default)'}`,
    );
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log(`${signal}: stopping`);
        resolve();
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    await server.close();
    stores.close();
    log.flush();
    return EXIT.ok;
  },
};
