import { deviceGroupChange } from '../../lib/audit/changes.ts';
import { showValue } from '../../lib/errors.ts';
import { MAX_GROUP_CIDRS, MAX_GROUP_NAME_LENGTH } from '../../lib/portal/settings.ts';
import { DeviceGroupInputError } from '../../lib/store/device-group-store.ts';
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
  UsageError,
} from '../command.ts';

const help = `Usage: doorman device-group list
       doorman device-group add --name NAME --cidr CIDR [--cidr CIDR ...] [--inactive]
       doorman device-group set --name NAME [--cidr CIDR ...] [--active | --inactive]
       doorman device-group remove --name NAME

Device Groups: named sets of networks, each active or not. In the portal's agreement mode (Usage Agreement
Only) a device gets web access after accepting the policy only if its address is in an active group.
  list     every group: name, active or not, networks
  add      make a group (active unless --inactive)
  set      change a group's networks (--cidr replaces the list) or turn it on or off
  remove   delete a group

Options:
  -n, --name NAME     the group's name: 1-${MAX_GROUP_NAME_LENGTH} characters, no control characters; compared
                      case-insensitively
      --cidr CIDR     an address or network, IPv4 or IPv6 (10.0.0.0/8, 192.168.1.7, 2001:db8::/32);
                      repeat for more (at most ${MAX_GROUP_CIDRS})
      --active        the group counts (set)
      --inactive      the group is kept but does not count (add, set)
${CONFIG_HELP}`;

export const deviceGroupCommand: Command = {
  name: 'device-group',
  summary: 'list, add, change and remove Device Groups (captive portal)',
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: {
        ...CONFIG_OPTION,
        name: { type: 'string', short: 'n' },
        cidr: { type: 'string', multiple: true },
        active: { type: 'boolean' },
        inactive: { type: 'boolean' },
      },
      allowPositionals: true,
    });
    if (values.help) return (out(help), EXIT.ok);
    const { action } = actionOf('device-group', positionals, ['list', 'add', 'set', 'remove']);
    const problems: string[] = [];
    if (action !== 'list' && values.name === undefined) problems.push('--name is required');
    if (action === 'add' && values.cidr === undefined) problems.push('--cidr is required');
    if (values.active === true && values.inactive === true) {
      problems.push('--active and --inactive contradict each other');
    }
    const allowed: Record<typeof action, readonly string[]> = {
      list: [],
      add: ['name', 'cidr', 'inactive'],
      set: ['name', 'cidr', 'active', 'inactive'],
      remove: ['name'],
    };
    for (const option of ['name', 'cidr', 'active', 'inactive'] as const) {
      if (values[option] !== undefined && !allowed[action].includes(option)) {
        problems.push(`--${option} is not an option of "device-group ${action}"`);
      }
    }
    if (
      action === 'set' &&
      values.cidr === undefined &&
      values.active === undefined &&
      values.inactive === undefined
    ) {
      problems.push('nothing to change: give --cidr, --active or --inactive');
    }
    if (problems.length > 0) throw new UsageError(`device-group ${action}: ${problems.join('; ')}`);
    const name = values.name as string;

    const stores = await openStores(configFrom(values.config));
    const store = stores.store.deviceGroups;
    const saved = (detail: Record<string, unknown>) =>
      stores.store.audit.record({ kind: 'settings.saved', actor: CLI_ACTOR, detail });
    try {
      if (action === 'list') {
        out(['NAME', 'ACTIVE', 'CIDRS'].join('\t'));
        for (const g of store.list()) out([g.name, g.active ? 'yes' : 'no', g.cidrs.join(',')].join('\t'));
        return EXIT.ok;
      }
      if (action === 'add') {
        const group = await store.create({ name, cidrs: values.cidr, active: values.inactive !== true });
        await saved(deviceGroupChange('added', undefined, group));
        out(`added ${describe(group)}`);
        return EXIT.ok;
      }
      const group = store.findByName(name);
      if (group === undefined) {
        process.stderr.write(`no Device Group named ${showValue(name)}\n`);
        return EXIT.failed;
      }
      if (action === 'remove') {
        const removed = await store.remove(group.id);
        await saved(deviceGroupChange('removed', group, undefined));
        out(`removed the Device Group ${showValue(group.name)}`);
        out(ended(removed.endedSessions));
        return EXIT.ok;
      }
      const active = values.active === true ? true : values.inactive === true ? false : undefined;
      const changed = await store.update(group.id, {
        ...(values.cidr === undefined ? {} : { cidrs: values.cidr }),
        ...(active === undefined ? {} : { active }),
      });
      await saved(deviceGroupChange('changed', group, changed));
      out(`changed ${describe(changed)}`);
      out(ended(changed.endedSessions));
      return EXIT.ok;
    } catch (error) {
      if (error instanceof DeviceGroupInputError) {
        process.stderr.write(
          `not saved:\n${error.problems.map((p) => `${option(p.field)}: ${p.message}`).join('\n')}\n`,
        );
        return EXIT.failed;
      }
      throw error;
    } finally {
      await stores.close();
    }
  },
};

/** What a change did to the Usage Agreement sessions (their devices meet the splash page again). */
function ended(count: number): string {
  const sessions = count === 1 ? '1 agreement session' : `${count} agreement sessions`;
  return `ended ${sessions} of devices no longer in an active Device Group`;
}

/** The command-line option a Device Group field comes from. */
function option(field: string): string {
  const key = field.replace(/\.\d+$/, '');
  const name =
    key === 'name' ? '--name' : key === 'cidrs' ? '--cidr' : key === 'active' ? '--active' : undefined;
  return name === undefined ? field : `${name} (${field})`;
}

function describe(group: { name: string; active: boolean; cidrs: string[] }): string {
  return `the Device Group ${showValue(group.name)} (${group.active ? 'active' : 'inactive'}): ${group.cidrs.join(', ')}`;
}
