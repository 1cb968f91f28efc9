import { systemClock } from '../../lib/clock.ts';
import { InvalidInputError } from '../../lib/errors.ts';
import { EXPLAIN_EXIT, explain, type Explanation } from '../../lib/explain/explain.ts';
import { parseExplainInput, type ExplainInput } from '../../lib/explain/input.ts';
import { stderrLog } from '../../lib/log.ts';
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
  UsageError,
} from '../command.ts';
import { gatherFacts } from '../explain-gather.ts';

const help = `Usage: doorman explain IP [--mac MAC] [--json]

Why the client at IP is or is not identified now, step by step (docs/explain.md):
  1. its session (source, user, since when, last seen, idle and hard ends)
  2. a Device Registration for its MAC (given with --mac, else found in the neighbour table as the portal
     does) and the registrations' clear date
  3. what authd answers Squid now (the very lookup Squid's helper sends, on authd's session socket)
  4. the group rule (squid.groups.allow) and the user's groups in the directory
  5. how long Squid may still be answering from an earlier answer (squid.ttl, squid.negativeTtl)
  6. what the ICAP service decides for an intercepted page load from it
  7. seamless sign-on: the last Negotiate or NTLM result authd saw from that address
Each step says ok, fails, not-applicable or unknown, what was found, and, for the step that fails, what to
do. Step 3 asks authd Squid's own lookup after the word explain-lookup: Squid's answer, and nothing
recorded (the session is not marked as seen).

Options:
  --mac MAC           the client's MAC (aa:bb:cc:dd:ee:ff or aa-bb-...), if the neighbour table lacks it
  --json              the explanation as JSON (fields in docs/explain.md)
${CONFIG_HELP}

Exit status: 0 identified, 1 not identified, 2 could not tell, or the command line was wrong.`;

export const explainCommand: Command = {
  name: 'explain',
  summary: 'why a client is or is not identified now',
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: { ...CONFIG_OPTION, mac: { type: 'string' }, json: { type: 'boolean', default: false } },
      allowPositionals: true,
    });
    if (values.help) return (out(help), EXIT.ok);
    const [ip, ...extra] = positionals;
    noExtra(extra);
    let input: ExplainInput;
    try {
      input = parseExplainInput(ip, values.mac);
    } catch (error) {
      if (error instanceof InvalidInputError) throw new UsageError(`explain: ${error.message}`);
      throw error;
    }
    const loaded = configFrom(values.config);
    const stores = await openStores(loaded);
    let explanation: Explanation;
    try {
      const facts = await gatherFacts(input, {
        config: loaded.config,
        store: stores.store,
        clock: systemClock,
        log: stderrLog('doorman explain'),
      });
      explanation = explain(facts);
    } finally {
      await stores.close();
    }
    out(values.json ? JSON.stringify(explanation, null, 2) : explanationText(explanation));
    return EXPLAIN_EXIT[explanation.verdict];
  },
};

/** The explanation for a terminal: the summary, then each step with what was found and what to do. */
export function explanationText(e: Explanation): string {
  const lines = [e.summary, ''];
  e.steps.forEach((s, i) => {
    lines.push(`${i + 1}. ${s.title}: ${s.status}`);
    lines.push(`   ${s.found}`);
    if (s.advice !== null && (s.status === 'fails' || s.status === 'unknown'))
      lines.push(`   To do: ${s.advice}`);
  });
  return lines.join('\n');
}
