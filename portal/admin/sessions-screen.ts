import type { SessionKey } from '../../lib/store/session.ts';
import { adminActor, requestAddress } from '../audit.ts';
import type { ParameterizedContext } from 'koa';
import { showValue } from '../../lib/errors.ts';
import type { SessionRepository } from '../../lib/store/store.ts';
import { invalidParam } from '../errors.ts';
import type { AddRoute } from '../middleware/allow-methods.ts';
import { paramsOf, type PortalState } from '../state.ts';
import type { ScreenContext } from './portal-screen.ts';
import { BUTTON_MAX_BYTES, chromeOf, postSteps, sendPage, whoOf } from './screen.ts';
import { keyOf, readSearch, SEARCH_FIELDS, type SearchValues } from './sessions-form.ts';
import { sessionsPage, type SessionsOutcome } from './views/sessions.ts';
import { countEndedByAdmin } from '../../lib/metrics/sessions.ts';

type Ctx = ParameterizedContext<PortalState>;

/** What the Sessions screen needs of the store: a page of a search, and the two ways to end sessions. */
export type SessionsAdmin = Pick<SessionRepository, 'search' | 'end' | 'endByUser'>;

/** A user name is at most this long here (the directory's are far shorter). */
const MAX_USERNAME_CHARS = 256;

/**
 * The Sessions screen under {base}admin/sessions: search the live sessions by user, address or MAC, a page at
 * a time (SessionRepository.search, never the whole list); end one; end all of a user. A GET searches (the
 * query string is the form); each End button posts the session's key or the user name with the search it
 * was pressed on, and answers with that search again under what it did.
 */
export function sessionsScreen(route: AddRoute, context: ScreenContext, sessions: SessionsAdmin): void {
  const { paths, log } = context;

  const page = (ctx: Ctx, status: number, params: ReadonlyMap<string, string>, outcome?: SessionsOutcome) => {
    const { values, search, problems } = readSearch(params);
    const found =
      search === undefined ? undefined : { ...sessions.search(search), paged: search.after !== undefined };
    sendPage(
      ctx,
      problems.length > 0 ? 400 : status,
      sessionsPage({
        paths,
        ...chromeOf(ctx),
        values,
        problems,
        ...(found === undefined ? {} : { found }),
        ...(outcome === undefined ? {} : { outcome }),
      }),
    );
  };
  /** The search the End button was pressed on, without its page: what was ended has left that page. */
  const searchOf = (ctx: Ctx) => {
    const params = new Map(paramsOf(ctx));
    params.delete('after');
    return params;
  };
  const searchFields = SEARCH_FIELDS.filter((f) => f !== 'after');

  route('/admin/sessions', {
    GET: [
      ...context.signedIn,
      function searchSessions(ctx) {
        const params = new Map<string, string>();
        for (const field of SEARCH_FIELDS) {
          const value = ctx.query[field];
          if (typeof value === 'string') params.set(field, value);
          // Twice in the query: which one was meant is a guess (the form never sends that).
          else if (value !== undefined) throw invalidParam(field, 'given more than once; send it once');
        }
        page(ctx, 200, params);
      },
    ],
  });
  route('/admin/sessions/end', {
    POST: postSteps(context, BUTTON_MAX_BYTES, ['key', ...searchFields], async function endSession(ctx) {
      const text = paramsOf(ctx).get('key') ?? '';
      const key = keyOf(text);
      if (key === null) return refused(ctx, 'key', text, 'is not a session key (ip:ADDRESS or mac:MAC)');
      // In the transaction that ends it: who ended whose session, from where.
      const ended = await sessions.end(key, (session) =>
        session === undefined
          ? undefined
          : { kind: 'session.ended', actor: adminActor(ctx), user: session.username, ...at(ctx, key) },
      );
      if (ended === undefined) return page(ctx, 404, searchOf(ctx), { kind: 'not-found', key: key.value });
      countEndedByAdmin(1);
      log(`admin: ${whoOf(ctx)} ended the session of ${showValue(ended.username)} on ${key.value}`);
      page(ctx, 200, searchOf(ctx), { kind: 'ended', session: ended });
    }),
  });
  route('/admin/sessions/end-user', {
    POST: postSteps(
      context,
      BUTTON_MAX_BYTES,
      ['username', ...searchFields],
      async function endUserSessions(ctx) {
        const username = paramsOf(ctx).get('username') ?? '';
        if (username === '' || username.length > MAX_USERNAME_CHARS)
          return refused(ctx, 'username', username, `must be 1 to ${MAX_USERNAME_CHARS} characters`);
        const ended = await sessions.endByUser(username, {
          kind: 'session.ended',
          actor: adminActor(ctx),
          user: username,
          address: requestAddress(ctx),
          detail: { allOfUser: true },
        });
        countEndedByAdmin(ended);
        log(`admin: ${whoOf(ctx)} ended the ${ended} sessions of ${showValue(username)}`);
        page(ctx, 200, searchOf(ctx), { kind: 'ended-user', username, ended });
      },
    ),
  });

  /** A button's form that no page of ours makes: 400, the field and value named, nothing ended. */
  function refused(ctx: Ctx, field: string, value: string, why: string): void {
    const { values } = readSearch(searchOf(ctx));
    sendPage(
      ctx,
      400,
      sessionsPage({
        paths,
        ...chromeOf(ctx),
        values: values satisfies SearchValues,
        problems: [{ field, message: `${showValue(value)} ${why}; nothing was ended` }],
      }),
    );
  }
}

/** Where an admin ended a session from, and which session (its key: the client's address, or a MAC). */
function at(
  ctx: Parameters<typeof requestAddress>[0],
  key: SessionKey,
): { address: string; detail: Record<string, string> } {
  return { address: requestAddress(ctx), detail: { [key.kind === 'ip' ? 'ip' : 'mac']: key.value } };
}
