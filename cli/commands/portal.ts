import { settingsChanges } from '../../lib/audit/changes.ts';
import { DoormanError, showValue } from '../../lib/errors.ts';
import { readCapped } from '../../lib/fs/read-capped.ts';
import {
  MAX_POLICY_LENGTH,
  MAX_TIMEOUT_MINUTES,
  type PortalProblem,
  type PortalSettings,
} from '../../lib/portal/settings.ts';
import { PORTAL_SESSION_SOURCES, type PortalSettingsPatch } from '../../lib/store/portal-settings-store.ts';
import {
  actionOf,
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  openStores,
  CLI_ACTOR,
  out,
  parse,
  UsageError,
} from '../command.ts';

const help = `Usage: doorman portal show
       doorman portal set [--mode MODE] [--idle-minutes N|none] [--hard-minutes N|none]
                          [--clear-date YYYY-MM-DD|none] [--policy-file FILE]
                          [--walled-host HOST ...] [--walled-cidr CIDR ...]
       doorman portal clear-sessions

The captive portal for intercepted clients: Squid's ICAP service (doorman serve) sends a client nobody has
identified to the splash page ({baseUrl}portal/): there the user accepts the policy or signs in, as the
mode says.
  show             the settings in force (JSON)
  set              change the fields given, keep the others; every problem is listed and nothing is saved
                   if there is one. Prints what changed. New timeouts and a new clear date apply at once
                   to current portal sessions too; "doorman portal clear-sessions" ends them all
  clear-sessions   end every session the portal made (sign-ins, registrations, agreements); sessions from the
                   login API stay

Options for set:
      --mode MODE              off, agreement (Usage Agreement Only: accept the policy; devices in an active
                               Device Group only), authentication (sign in with a directory account) or
                               registration (Device Registration: sign in, the device's MAC is registered);
                               authentication and registration are refused until a directory is applied
                               (doorman directory set)
      --idle-minutes N|none    authentication and agreement: minutes without traffic before the session ends
                               (1-${MAX_TIMEOUT_MINUTES}; default 60)
      --hard-minutes N|none    authentication and agreement: minutes from sign-in at most (1-${MAX_TIMEOUT_MINUTES};
                               default 480)
      --clear-date DATE|none   registration: the day (YYYY-MM-DD, server local time) every registration is
                               cleared, as it begins; must be after today
      --policy-file FILE       the usage policy shown on the splash page: plain UTF-8 text, at most
                               ${MAX_POLICY_LENGTH} characters (required for agreement; an empty file removes it)
      --walled-host HOST       reachable without signing in: a host name, or *.domain for every name below it
                               (not the domain itself); repeat for more; replaces the list; "none" empties it
      --walled-cidr CIDR       reachable without signing in: an address or network (10.0.0.0/8, 2001:db8::/32);
                               repeat for more; replaces the list; "none" empties it
${CONFIG_HELP}`;

/** "none" or a whole number: the number, null, or the text itself for the schema to refuse with the others. */
function minutes(value: string | undefined): unknown {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  return /^\d{1,9}$/.test(value) ? Number(value) : value;
}

/** A repeated list option: undefined when absent, [] for a lone "none". */
function list(values: string[] | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  return values.length === 1 && values[0] === 'none' ? [] : values;
}

export const portalCommand: Command = {
  name: 'portal',
  summary: 'show and change the captive portal settings, end portal sessions',
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: {
        ...CONFIG_OPTION,
        mode: { type: 'string' },
        'idle-minutes': { type: 'string' },
        'hard-minutes': { type: 'string' },
        'clear-date': { type: 'string' },
        'policy-file': { type: 'string' },
        'walled-host': { type: 'string', multiple: true },
        'walled-cidr': { type: 'string', multiple: true },
      },
      allowPositionals: true,
    });
    if (values.help) return (out(help), EXIT.ok);
    const { action } = actionOf('portal', positionals, ['show', 'set', 'clear-sessions']);
    const setOptions = [
      'mode',
      'idle-minutes',
      'hard-minutes',
      'clear-date',
      'policy-file',
      'walled-host',
      'walled-cidr',
    ] as const;
    const given = setOptions.filter((o) => values[o] !== undefined);
    if (action !== 'set' && given.length > 0) {
      throw new UsageError(`portal ${action}: --${given[0]} is an option of "portal set"`);
    }
    let patch: PortalSettingsPatch | undefined;
    if (action === 'set') {
      if (given.length === 0) throw new UsageError(`portal set: nothing to change (see --help)`);
      const walledGarden = {
        hosts: list(values['walled-host']),
        cidrs: list(values['walled-cidr']),
      };
      // Read the policy before dropping privileges (it may be readable by root only).
      const policyFile = values['policy-file'];
      patch = {
        mode: values.mode,
        idleTimeoutMinutes: minutes(values['idle-minutes']),
        hardTimeoutMinutes: minutes(values['hard-minutes']),
        registrationClearDate: values['clear-date'] === 'none' ? null : values['clear-date'],
        policyText: policyFile === undefined ? undefined : readPolicy(policyFile),
        walledGarden,
      };
    }

    const loaded = configFrom(values.config);
    const stores = await openStores(loaded);
    try {
      if (action === 'clear-sessions') {
        const ended = await stores.store.sessions.endBySource(PORTAL_SESSION_SOURCES, {
          kind: 'sessions.cleared',
          actor: CLI_ACTOR,
          detail: { sources: PORTAL_SESSION_SOURCES },
        });
        out(`ended ${ended} portal session(s); sessions from the login API stay`);
        return EXIT.ok;
      }
      const store = stores.store.portal;
      if (action === 'show') {
        out(JSON.stringify(store.load(), null, 2));
        return EXIT.ok;
      }
      const result = await store.update(patch ?? {});
      if (result.ok && result.changed.length > 0) {
        await stores.store.audit.record({
          kind: 'settings.saved',
          actor: CLI_ACTOR,
          detail: { settings: 'portal', changes: settingsChanges(result.previous, result.settings) },
        });
      }
      if (!result.ok) {
        process.stderr.write(`not saved, the settings in force stay:\n${problemLines(result.problems)}\n`);
        return EXIT.failed;
      }
      if (result.changed.length === 0) out('nothing changed');
      for (const field of result.changed) {
        out(`${field}: ${shown(field, result.previous)} -> ${shown(field, result.settings)}`);
      }
      if (result.settings.mode === 'agreement') {
        process.stderr.write(
          'note: in the agreement mode only devices in an active Device Group get access (doorman device-group)\n',
        );
      }
      out(
        `${result.sessionsUpdated} current portal session(s) follow the timeouts and clear date in force; ` +
          '"doorman portal clear-sessions" ends them all.',
      );
      return EXIT.ok;
    } finally {
      await stores.close();
    }
  },
};

/** Command-line names for the problems' fields, so the message says what to type. */
const OPTION_OF: Record<string, string> = {
  mode: '--mode',
  idleTimeoutMinutes: '--idle-minutes',
  hardTimeoutMinutes: '--hard-minutes',
  registrationClearDate: '--clear-date',
  policyText: '--policy-file',
  'walledGarden.hosts': '--walled-host',
  'walledGarden.cidrs': '--walled-cidr',
};

function problemLines(problems: readonly PortalProblem[]): string {
  return problems
    .map((p) => {
      const key = p.field.replace(/\.\d+$/, '');
      const option = OPTION_OF[key];
      return `${option === undefined ? p.field : `${option} (${p.field})`}: ${p.message}`;
    })
    .join('\n');
}

function shown(field: keyof PortalSettings, settings: PortalSettings): string {
  const value = settings[field];
  if (field === 'policyText') {
    const text = value as string;
    return text === '' ? '(none)' : `${[...text].length} characters`;
  }
  if (value === null) return 'none';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function readPolicy(file: string): string {
  try {
    // Four bytes per character at most in UTF-8: anything longer cannot be a valid policy.
    return readCapped(file, MAX_POLICY_LENGTH * 4);
  } catch (error) {
    const reason =
      error instanceof DoormanError
        ? `larger than ${MAX_POLICY_LENGTH * 4} bytes`
        : ((error as NodeJS.ErrnoException).code ?? 'error');
    throw new UsageError(`--policy-file: cannot use ${showValue(file)}: ${reason}`);
  }
}
