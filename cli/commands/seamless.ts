import { createInterface } from 'node:readline/promises';
import { resolve } from 'node:path';
import { renderDoctorText } from '../../lib/seamless/doctor/report.ts';
import type { SeamlessControl, SeamlessStep } from '../../lib/seamless/control.ts';
import { openLocalSeamless, type SquidTarget } from '../../lib/seamless/local.ts';
import {
  MAX_ADMIN_PASSWORD_LENGTH,
  parseAdminUser,
  parseSeamlessSettings,
} from '../../lib/seamless/settings.ts';
import { showValue } from '../../lib/errors.ts';
import { promptHidden, readFirstLine, type TtyInput } from '../read-secret.ts';
import {
  actionOf,
  CLI_ACTOR,
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  out,
  parse,
  recordAudit,
  UsageError,
} from '../command.ts';

const help = `Usage: doorman seamless enable --domain DOMAIN --server-version V --admin USER [options]
       doorman seamless disable (--admin USER | --local) [options]
       doorman seamless status [--json]
       doorman seamless doctor [--json]
       doorman seamless resume

Seamless authentication: Windows clients of the domain reach the web through Squid without typing a password
(Kerberos, or NTLM), as the user they logged on as. "enable" joins this proxy to the Windows domain applied on
the Directory service settings (which must be of the active-directory kind and work), registers its HTTP/
service principals, writes their keys to <sambaDir>/http.keytab (root:<serviceUser> 0640; sambaDir is
/var/lib/doorman-samba by default, root's alone), starts
winbindd, checks the trust and the keys, and saves the settings; it prints a line per step. On a joined proxy
it repairs: the join is kept while it works, the rest is done again. "disable" leaves the domain (deleting the
computer account), stops winbindd and deletes the keytab and Samba's state; with --local it leaves the
computer account in the domain. "doctor" checks every prerequisite (DNS A and PTR, the clock, the DC's ports,
the keytab's keys and key version, who may read it, winbind) and names the fix of each problem. "resume"
starts winbindd again on a joined proxy where it is not running (after a reboot) and gives its privileged pipe
to Squid's helper user: "doorman serve" started as root does it at every start; run it from a boot script or an
ExecStartPre= otherwise. It does nothing when winbindd runs or the proxy is not joined.

The administrator's password is read from standard input (a terminal: without echo), never from the command
line; it is used for the join (or the leave) and then forgotten: it is never stored or logged.
Run as root.

Options for enable:
      --domain DOMAIN        the domain's DNS name, e.g. example.test
      --server-version V     the domain controllers' Windows Server version: 2003, 2008 or 2012 (later: 2012)
      --netbios NAME         the domain's NetBIOS name (default: the domain's first label, upper-cased)
      --admin USER           a Domain Admin: user, DOMAIN\\user or user@REALM
      --host-name NAME       this proxy's host name; its first label is the computer name (default: the
                             system's host name). The proxy is then NAME.DOMAIN to clients and Kerberos.
Options for enable and disable:
      --squid-include FILE   rewrite Squid's include FILE (doorman squid-conf) and run squid -k reconfigure
      --squid-conf FILE      the squid.conf for squid -k reconfigure -f FILE
      --squid PATH           the Squid binary (default: squid)
Options for disable:
      --admin USER           the Domain Admin who deletes the computer account (password on stdin)
      --local                do not contact the domain: the computer account stays there
Options for status and doctor:
      --json                 print JSON (the doctor: {ok, counts, checks: [{id, ok, status, title, detail, fix}]})
${CONFIG_HELP}`;

const MARK: Record<SeamlessStep['status'], string> = {
  running: '....',
  ok: 'ok  ',
  fail: 'FAIL',
  skipped: 'skip',
};

/** One line per finished step (and its fix on the next); "running" is not printed, the next line follows it. */
export function stepLines(step: SeamlessStep): string[] {
  if (step.status === 'running') return [];
  const lines = [
    `[${MARK[step.status]}] ${step.title}${step.detail === undefined ? '' : `: ${step.detail}`}`,
  ];
  if (step.fix !== undefined) lines.push(`       Fix: ${step.fix}`);
  return lines;
}

async function readPassword(what: string): Promise<Buffer> {
  const stdin = process.stdin as TtyInput;
  const text =
    stdin.isTTY === true
      ? await promptHidden(stdin, process.stderr, `${what}: `, MAX_ADMIN_PASSWORD_LENGTH)
      : await readFirstLine(process.stdin, MAX_ADMIN_PASSWORD_LENGTH * 4);
  return Buffer.from(text, 'utf8');
}

/** A field from its option, else asked on a terminal, else a usage error naming the option. */
async function field(value: string | undefined, option: string, question: string): Promise<string> {
  if (value !== undefined) return value;
  if (process.stdin.isTTY !== true) throw new UsageError(`enable: --${option} is required`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(`${question}: `)).trim();
  } finally {
    rl.close();
  }
}

export const seamlessCommand: Command = {
  name: 'seamless',
  summary: 'seamless authentication (Kerberos/NTLM): enable, disable, status, doctor, resume',
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: {
        ...CONFIG_OPTION,
        domain: { type: 'string' },
        'server-version': { type: 'string' },
        netbios: { type: 'string' },
        admin: { type: 'string' },
        'host-name': { type: 'string' },
        'squid-include': { type: 'string' },
        'squid-conf': { type: 'string' },
        squid: { type: 'string' },
        local: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
      allowPositionals: true,
    });
    if (values.help) return (out(help), EXIT.ok);
    const { action } = actionOf('seamless', positionals, ['enable', 'disable', 'status', 'doctor', 'resume']);
    const loaded = configFrom(values.config);
    const squid: SquidTarget | undefined =
      values['squid-include'] === undefined
        ? undefined
        : {
            include: resolve(values['squid-include']),
            ...(values['squid-conf'] === undefined ? {} : { squidConf: resolve(values['squid-conf']) }),
            ...(values.squid === undefined ? {} : { squid: values.squid }),
          };
    if (squid === undefined && (values['squid-conf'] !== undefined || values.squid !== undefined)) {
      throw new UsageError('--squid-conf and --squid need --squid-include');
    }

    if (action === 'disable' && values.local === (values.admin !== undefined)) {
      throw new UsageError('disable: give either --admin USER (the password on stdin) or --local');
    }
    if (process.getuid?.() !== 0 && (action === 'enable' || action === 'disable' || action === 'resume')) {
      process.stderr.write(
        `doorman: seamless ${action} must run as root (${action === 'resume' ? 'it starts' : 'it joins the domain and starts'} winbindd)\n`,
      );
      return EXIT.failed;
    }
    // Everything from the user first (the password included), before anything is changed.
    let enableInput: { settings: Record<string, unknown>; password: Buffer } | undefined;
    let disableAdmin: { user: string; password: Buffer } | undefined;
    if (action === 'enable') {
      const fields = {
        domain: await field(values.domain, 'domain', "The domain's DNS name (e.g. example.test)"),
        serverVersion: await field(
          values['server-version'],
          'server-version',
          'Windows Server version of the domain controllers (2003, 2008, 2012)',
        ),
        ...(values.netbios === undefined ? {} : { netbiosDomain: values.netbios }),
        adminUser: await field(values.admin, 'admin', 'Domain Admin (user, DOMAIN\\user or user@REALM)'),
      };
      // Refused before the prompt: a name like adm%Secret would put a password on net's command line.
      adminUserOrThrow(fields.adminUser);
      const password = await readPassword(`Password of ${fields.adminUser}`);
      enableInput = { settings: fields, password };
    } else if (action === 'disable') {
      if (values.admin !== undefined) {
        adminUserOrThrow(values.admin);
        disableAdmin = { user: values.admin, password: await readPassword(`Password of ${values.admin}`) };
      }
    }

    const local = openLocalSeamless(loaded.config, {
      ...(loaded.path === undefined ? {} : { configFile: resolve(loaded.path) }),
      ...(squid === undefined ? {} : { squid }),
      ...(values['host-name'] === undefined ? {} : { hostName: values['host-name'] }),
    });
    let code: number;
    try {
      code = await runAction(local.control, action, { enableInput, disableAdmin, json: values.json });
    } finally {
      enableInput?.password.fill(0);
      disableAdmin?.password.fill(0);
      local.close();
    }
    if (action === 'enable' || action === 'disable') {
      const kind = action === 'enable' ? 'seamless.enabled' : 'seamless.disabled';
      await recordAudit(loaded, { kind, actor: CLI_ACTOR, detail: { ok: code === EXIT.ok } });
    }
    return code;
  },
};

async function runAction(
  control: SeamlessControl,
  action: 'enable' | 'disable' | 'status' | 'doctor' | 'resume',
  input: {
    enableInput: { settings: Record<string, unknown>; password: Buffer } | undefined;
    disableAdmin: { user: string; password: Buffer } | undefined;
    json: boolean;
  },
): Promise<number> {
  const print = (step: SeamlessStep) => {
    for (const line of stepLines(step)) out(line);
  };
  switch (action) {
    case 'enable': {
      const given = input.enableInput;
      if (given === undefined) return EXIT.failed;
      // The password goes in as text only inside parseSeamlessSettings, which hands it back as a Buffer.
      const checked = parseSeamlessSettings({
        ...given.settings,
        adminPassword: given.password.toString('utf8'),
      });
      given.password.fill(0);
      if (!checked.ok) {
        process.stderr.write(
          `not enabled:\n${checked.problems.map((p) => `${p.field}: ${p.message}`).join('\n')}\n`,
        );
        return EXIT.failed;
      }
      const result = await control.enable(checked.settings, checked.password, print);
      if (result.doctor !== undefined) {
        out('');
        process.stdout.write(renderDoctorText(result.doctor));
      }
      return result.ok ? EXIT.ok : EXIT.failed;
    }
    case 'disable': {
      const result = await control.disable(input.disableAdmin, print);
      return result.ok ? EXIT.ok : EXIT.failed;
    }
    case 'status': {
      const status = await control.status();
      if (input.json) {
        out(JSON.stringify(status, null, 2));
        return EXIT.ok;
      }
      if (status.state === undefined) {
        out(
          `seamless authentication is disabled${status.availability.ok ? '' : ` (and cannot be enabled: ${status.availability.reason})`}`,
        );
        return EXIT.ok;
      }
      const s = status.state;
      out(
        `seamless authentication is enabled: ${s.machineName}$ (${s.proxyFqdn}) in ${s.realm} (NetBIOS ${s.netbios}), Windows Server ${s.serverVersion}`,
      );
      out(`joined by ${s.adminUser} at ${new Date(s.joinedAt).toISOString()}`);
      out(`winbindd ${status.winbind ?? 'stopped'}, trust ${status.trust ?? 'fail'}`);
      return EXIT.ok;
    }
    case 'resume': {
      const outcome = await control.resume();
      print({
        id: 'winbindd',
        title: 'Start winbindd',
        status: outcome.ok ? (outcome.skipped === true ? 'skipped' : 'ok') : 'fail',
        detail: outcome.detail,
        ...(outcome.ok ? {} : { fix: outcome.fix }),
      });
      return outcome.ok ? EXIT.ok : EXIT.failed;
    }
    case 'doctor': {
      const report = await control.doctor();
      if (input.json) out(JSON.stringify(report, null, 2));
      else if (report.checks.length === 0)
        out('seamless authentication is not enabled, and no Windows domain is applied: nothing to check');
      else process.stdout.write(renderDoctorText(report));
      return report.ok ? EXIT.ok : EXIT.failed;
    }
  }
}

/** `--admin`'s value, refused with the reason (before any password is asked for) when net could misread it. */
function adminUserOrThrow(text: string): void {
  const parsed = parseAdminUser(text);
  if (typeof parsed === 'string') throw new UsageError(`--admin: ${showValue(text)} ${parsed}`);
}
