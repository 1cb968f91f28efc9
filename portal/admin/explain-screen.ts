import type { ParameterizedContext } from 'koa';
import { InvalidInputError } from '../../lib/errors.ts';
import type { Explanation } from '../../lib/explain/explain.ts';
import { parseExplainInput, type ExplainInput } from '../../lib/explain/input.ts';
import type { FieldProblem } from '../../lib/validation/problems.ts';
import type { AddRoute } from '../middleware/allow-methods.ts';
import type { PortalState } from '../state.ts';
import type { ScreenContext } from './portal-screen.ts';
import { chromeOf, sendPage } from './screen.ts';
import { EXPLAIN_FIELDS, explainPage, type ExplainField, type ExplainView } from './views/explain.ts';

/**
 * Gathers the facts about a client and explains them (cli/explain-gather.ts + lib/explain, given by serve):
 * the same as `doorman explain`. Never rejects for the client's sake; a rejection is our failure (502).
 */
export type Explainer = (input: ExplainInput) => Promise<Explanation>;

type Ctx = ParameterizedContext<PortalState>;

/** A query longer than this is no address and MAC (45 + 17 characters, percent-encoded, and the names). */
const MAX_QUERY = 1024;

/**
 * The Explain screen under {base}admin/explain: a GET form, so an explanation has a URL to share or reload
 * (`?ip=10.0.0.5&mac=`). Looking is all it does: authd answers Squid's own lookup but marks nothing seen
 * (lib/helper-protocol/explain-lookup.ts), so a GET changes no state. Only the form's two fields are taken,
 * each at most once; a bad value is answered 400 with the problem at its field and nothing looked up.
 */
export function explainScreen(
  route: AddRoute,
  context: ScreenContext,
  explainer: Explainer | undefined,
): void {
  const { paths, signedIn, log } = context;
  const render = (ctx: Ctx, status: number, view: Omit<ExplainView, 'paths' | 'user' | 'csrf'>) =>
    sendPage(ctx, status, explainPage({ paths, ...chromeOf(ctx), ...view }));
  route('/admin/explain', {
    GET: [
      ...signedIn,
      async function explainClient(ctx) {
        const query = readQuery(ctx);
        if ('problems' in query) return render(ctx, 400, query);
        const { values } = query;
        if (values.ip === '' && values.mac === '') return render(ctx, 200, { values });
        let input: ExplainInput;
        try {
          input = parseExplainInput(values.ip, values.mac);
        } catch (error) {
          if (!(error instanceof InvalidInputError)) throw error;
          return render(ctx, 400, { values, problems: [problemOf(error)] });
        }
        if (explainer === undefined)
          return render(ctx, 409, {
            values,
            error: 'this web app cannot look clients up: run `doorman explain` on the proxy',
          });
        try {
          return render(ctx, 200, { values, explanation: await explainer(input) });
        } catch (error) {
          log(`admin: explain ${input.ip} failed: ${error instanceof Error ? error.message : String(error)}`);
          return render(ctx, 502, { values, error: 'the facts could not be gathered; see the log' });
        }
      },
    ],
  });
}

/** The form's fields from the query string: only ip and mac, each at most once, the whole query capped. */
function readQuery(
  ctx: Ctx,
):
  | { values: Record<ExplainField, string> }
  | { values: Record<ExplainField, string>; problems: FieldProblem[] } {
  const params = new URLSearchParams(ctx.querystring.length > MAX_QUERY ? '' : ctx.querystring);
  const values = { ip: params.get('ip') ?? '', mac: params.get('mac') ?? '' };
  const problems: FieldProblem[] = [];
  if (ctx.querystring.length > MAX_QUERY)
    problems.push({ field: '', message: `the query is longer than ${MAX_QUERY} characters` });
  for (const name of new Set(params.keys())) {
    if (!(EXPLAIN_FIELDS as readonly string[]).includes(name))
      problems.push({ field: '', message: `unknown field ${JSON.stringify(name.slice(0, 32))}` });
    else if (params.getAll(name).length > 1) problems.push({ field: name, message: 'given more than once' });
  }
  return problems.length === 0 ? { values } : { values, problems };
}

/** "ip: ..." from InvalidInputError as the field's problem, without the field's name again. */
function problemOf(error: InvalidInputError): FieldProblem {
  const prefix = `${error.field}: `;
  return {
    field: error.field,
    message: error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message,
  };
}
