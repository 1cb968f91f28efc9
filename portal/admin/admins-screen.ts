import type { ParameterizedContext } from 'koa';
import { DoormanError, InvalidInputError, showValue } from '../../lib/errors.ts';
import type { AdminRepository } from '../../lib/store/store.ts';
import type { FieldProblem } from '../../lib/validation/problems.ts';
import type { AddRoute } from '../middleware/allow-methods.ts';
import { paramsOf, type PortalState } from '../state.ts';
import type { AdminCookies } from './cookies.ts';
import type { ScreenContext } from './portal-screen.ts';
import { chromeOf, postSteps, sendPage, whoOf } from './screen.ts';
import { adminOf, seeOther } from './session.ts';
import { adminsPage, type AdminsForm, type AdminsView } from './views/admins.ts';

type Ctx = ParameterizedContext<PortalState>;

/** Two passwords of at most 1 KiB each, percent-encoded, and a name. */
const ADMIN_FORM_MAX_BYTES = 8 * 1024;

/**
 * The Admins screen under {base}admin/admins: the administrators; add one; set one's password (which ends
 * their sign-ins: yours other than this one); remove one (ending their sign-ins). Removing yourself needs a
 * ticked box that says what it does, and signs you out; the last administrator is never removed here (no one
 * could sign in again but root on the server).
 */
export function adminsScreen(
  route: AddRoute,
  context: ScreenContext & { cookies: AdminCookies },
  admins: AdminRepository,
): void {
  const { paths, log, cookies } = context;
  const page = (ctx: Ctx, status: number, parts: Pick<AdminsView, 'newName' | 'outcome'> = {}) =>
    sendPage(ctx, status, adminsPage({ paths, ...chromeOf(ctx), admins: admins.list(), ...parts }));
  const problems = (ctx: Ctx, status: number, form: AdminsForm, list: FieldProblem[], newName?: string) =>
    page(ctx, status, {
      ...(newName === undefined ? {} : { newName }),
      outcome: { kind: 'problems', form, problems: list },
    });
  /** The passwords typed twice, the same: the problems if not. */
  const passwordProblems = (params: ReadonlyMap<string, string>): FieldProblem[] => {
    const password = params.get('password') ?? '';
    if (password === '') return [{ field: 'password', message: 'type a password' }];
    if (password !== (params.get('confirm') ?? ''))
      return [{ field: 'confirm', message: 'is not the same as the password above: type both again' }];
    return [];
  };
  /**
   * Set the password typed twice, or answer 400 with why not (typed differently, or the store's refusal of
   * the name or password, INVALID_INPUT naming the field). Whether it was set.
   */
  const savePassword = async (
    ctx: Ctx,
    form: AdminsForm,
    name: string,
    newName?: string,
  ): Promise<boolean> => {
    const params = paramsOf(ctx);
    const typed = passwordProblems(params);
    if (typed.length > 0) {
      problems(ctx, 400, form, typed, newName);
      return false;
    }
    try {
      await admins.setPassword(name, params.get('password') ?? '');
      return true;
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      const message = error.message.slice(error.field.length + 2);
      problems(ctx, 400, form, [{ field: error.field, message }], newName);
      return false;
    }
  };

  route('/admin/admins', {
    GET: [...context.signedIn, (ctx) => page(ctx, 200)],
    POST: postSteps(
      context,
      ADMIN_FORM_MAX_BYTES,
      ['user', 'password', 'confirm'],
      async function addAdmin(ctx) {
        const params = paramsOf(ctx);
        const name = (params.get('user') ?? '').trim();
        const form = { kind: 'add' } as const;
        if (admins.has(name))
          return problems(
            ctx,
            409,
            form,
            [
              {
                field: 'user',
                message: `${showValue(name)} is an administrator already: set their password below instead`,
              },
            ],
            name,
          );
        if (!(await savePassword(ctx, form, name, name))) return;
        log(`admin: ${whoOf(ctx)} added the administrator ${showValue(name)}`);
        await context.audit.admin(ctx, 'admin.created', { name });
        page(ctx, 200, { outcome: { kind: 'added', name } });
      },
    ),
  });
  route('/admin/admins/password', {
    POST: postSteps(
      context,
      ADMIN_FORM_MAX_BYTES,
      ['user', 'password', 'confirm'],
      async function resetAdminPassword(ctx) {
        const params = paramsOf(ctx);
        const name = params.get('user') ?? '';
        if (!admins.has(name)) return noSuchAdmin(ctx, name);
        const form = { kind: 'reset', name } as const;
        if (!(await savePassword(ctx, form, name))) return;
        // The store ended every sign-in of theirs, this one too if it is yours: you go on in a new one.
        if (name === adminOf(ctx).session.userName) {
          const created = await admins.createSession(name);
          cookies.setSession(ctx, created.token, (created.expiresAt - created.createdAt) / 1000);
          ctx.state.admin = { session: created, token: created.token };
        }
        log(`admin: ${whoOf(ctx)} set a new password for the administrator ${showValue(name)}`);
        await context.audit.admin(ctx, 'admin.password-reset', { name });
        page(ctx, 200, { outcome: { kind: 'reset', name } });
      },
    ),
  });
  route('/admin/admins/remove', {
    POST: postSteps(context, ADMIN_FORM_MAX_BYTES, ['user', 'yourself'], async function removeAdmin(ctx) {
      const params = paramsOf(ctx);
      const name = params.get('user') ?? '';
      if (!admins.has(name)) return noSuchAdmin(ctx, name);
      const form = { kind: 'remove', name } as const;
      const self = name === adminOf(ctx).session.userName;
      if (self && params.get('yourself') !== 'on')
        return problems(ctx, 400, form, [
          { field: 'yourself', message: 'tick the box to remove your own account: you will be signed out' },
        ]);
      try {
        await admins.remove(name, { keepOne: true });
      } catch (error) {
        if (error instanceof DoormanError && error.code === 'NOT_FOUND') return noSuchAdmin(ctx, name);
        if (error instanceof DoormanError && error.code === 'CONFLICT')
          return problems(ctx, 409, form, [
            { field: 'user', message: `${showValue(name)} is the only administrator: add another first` },
          ]);
        throw error;
      }
      log(`admin: ${whoOf(ctx)} removed the administrator ${showValue(name)}`);
      await context.audit.admin(ctx, 'admin.removed', { name });
      if (self) {
        cookies.clearSession(ctx);
        return seeOther(ctx, paths.signIn);
      }
      page(ctx, 200, { outcome: { kind: 'removed', name } });
    }),
  });

  function noSuchAdmin(ctx: Ctx, name: string): void {
    page(ctx, 404, {
      outcome: {
        kind: 'problems',
        form: { kind: 'add' },
        problems: [
          {
            field: '',
            message: `There is no administrator named ${showValue(name)} (removed meanwhile?). Nothing was changed.`,
          },
        ],
      },
    });
  }
}
