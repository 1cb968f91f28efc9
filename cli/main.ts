/**
 * doorman: the command line. Each command prints its own --help; errors go to stderr with exit code 1,
 * command-line mistakes with 2.
 */
import { DirectoryError } from '../lib/directory/errors.ts';
import { DoormanError } from '../lib/errors.ts';
import { isBusy } from '../lib/store/busy.ts';
import { DEFAULT_BUSY_TIMEOUT_MS } from '../lib/store/database.ts';
import { EXIT, UsageError, type Command } from './command.ts';
import { adminCommand } from './commands/admin.ts';
import { apiKeyCommand } from './commands/api-key.ts';
import { authdCommand } from './commands/authd.ts';
import { deviceGroupCommand } from './commands/device-group.ts';
import { directoryCommand } from './commands/directory.ts';
import { explainCommand } from './commands/explain.ts';
import { portalCommand } from './commands/portal.ts';
import { seamlessCommand } from './commands/seamless.ts';
import { serveCommand } from './commands/serve.ts';
import { sessionsCommand } from './commands/sessions.ts';
import { squidConfCommand } from './commands/squid-conf.ts';
import { storeCommand } from './commands/store.ts';

const commands: readonly Command[] = [
  serveCommand,
  authdCommand,
  squidConfCommand,
  apiKeyCommand,
  sessionsCommand,
  explainCommand,
  directoryCommand,
  adminCommand,
  portalCommand,
  deviceGroupCommand,
  seamlessCommand,
  storeCommand,
];

const usage = `Usage: doorman COMMAND [OPTIONS]

Doorman tells Squid who is behind each request.

Commands:
${commands.map((c) => `  ${c.name.padEnd(14)}${c.summary}`).join('\n')}

Run "doorman COMMAND --help" for a command's options.`;

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage}\n`);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const command = commands.find((c) => c.name === name);
  if (command === undefined) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
  return command.run(rest);
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`doorman: ${error.message}\nRun "doorman --help".\n`);
    process.exitCode = EXIT.usage;
  } else if (isBusy(error) && !(error instanceof DoormanError)) {
    // SQLite's busy timeout ran out: say what it means rather than print "database is locked" and a stack.
    process.stderr.write(
      `doorman: the session database is locked by another process (waited ${DEFAULT_BUSY_TIMEOUT_MS / 1000} s); try again\n`,
    );
    process.exitCode = EXIT.failed;
  } else if (error instanceof DoormanError || error instanceof DirectoryError) {
    process.stderr.write(`doorman: ${error.message}\n`);
    process.exitCode = EXIT.failed;
  } else {
    process.stderr.write(`doorman: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = EXIT.failed;
  }
}
