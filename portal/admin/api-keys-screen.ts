import type { ParameterizedContext } from 'koa';
import { DoormanError, showValue } from '../../lib/errors.ts';
import type { ApiKeyRepository } from '../../lib/store/store.ts';
import type { AddRoute } from '../middleware/allow-methods.ts';
import { paramsOf, type PortalState } from '../state.ts';
import type { ScreenContext } from './portal-screen.ts';
import { BUTTON_MAX_BYTES, chromeOf, postSteps, sendPage, whoOf } from './screen.ts';
import { apiKeysPage, type ApiKeysView } from './views/api-keys.ts';

type Ctx = ParameterizedContext<PortalState>;

export type ApiKeysAdmin = Pick<ApiKeyRepository, 'create' | 'list' | 'revoke'>;

/**
 * The API keys screen under {base}admin/api-keys: the keys with when each was made and last used, Make a key
 * (the key is on the page answering that POST and nowhere else: every admin answer is no-store, and it is
 * never logged), Revoke. A name refused, taken or unknown is a 400, 409 or 404 naming it, nothing changed.
 */
export function apiKeysScreen(route: AddRoute, context: ScreenContext, keys: ApiKeysAdmin): void {
  const { paths, log } = context;
  const page = (ctx: Ctx, status: number, parts: Pick<ApiKeysView, 'name' | 'outcome'> = {}) =>
    sendPage(ctx, status, apiKeysPage({ paths, ...chromeOf(ctx), keys: keys.list(), ...parts }));
  const refused = (ctx: Ctx, error: unknown, name: string) => {
    if (!(error instanceof DoormanError)) throw error;
    const status = { INVALID_INPUT: 400, CONFLICT: 409, NOT_FOUND: 404 }[error.code as string];
    if (status === undefined) throw error;
    // The store's message starts with the field ("name: ..."): the page names it once, as a link.
    const message = error.message.replace(/^name: /, '');
    page(ctx, status, {
      name,
      outcome: { kind: 'problem', field: 'name', message: `${message}; nothing was changed` },
    });
  };

  route('/admin/api-keys', {
    GET: [...context.signedIn, (ctx) => page(ctx, 200)],
    POST: postSteps(context, BUTTON_MAX_BYTES, ['name'], async function createApiKey(ctx) {
      const name = (paramsOf(ctx).get('name') ?? '').trim();
      try {
        const { key, info } = await keys.create(name);
        log(`admin: ${whoOf(ctx)} made the API key ${showValue(info.name)}`);
        await context.audit.admin(ctx, 'api-key.created', { name: info.name });
        page(ctx, 200, { outcome: { kind: 'created', name: info.name, key } });
      } catch (error) {
        refused(ctx, error, name);
      }
    }),
  });
  route('/admin/api-keys/revoke', {
    POST: postSteps(context, BUTTON_MAX_BYTES, ['name'], async function revokeApiKey(ctx) {
      const name = paramsOf(ctx).get('name') ?? '';
      const before = keys.list().find((k) => k.name === name);
      try {
        const info = await keys.revoke(name);
        log(`admin: ${whoOf(ctx)} revoked the API key ${showValue(info.name)}`);
        await context.audit.admin(ctx, 'api-key.revoked', { name: info.name });
        page(ctx, 200, {
          outcome: { kind: 'revoked', name: info.name, already: before?.revokedAt !== undefined },
        });
      } catch (error) {
        refused(ctx, error, '');
      }
    }),
  });
}
