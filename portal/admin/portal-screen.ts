import type { Middleware, ParameterizedContext } from 'koa';
import { deviceGroupChange, settingsChanges } from '../../lib/audit/changes.ts';
import type { Clock } from '../../lib/clock.ts';
import { DoormanError, showValue } from '../../lib/errors.ts';
import { DEFAULT_PORTAL_SETTINGS, localDate } from '../../lib/portal/settings.ts';
import { DeviceGroupInputError } from '../../lib/store/device-group-store.ts';
import { PORTAL_SESSION_SOURCES } from '../../lib/store/portal-settings-store.ts';
import { adminActor, requestAddress, type RequestAudit } from '../audit.ts';
import { ApiError } from '../errors.ts';
import type { AddRoute } from '../middleware/allow-methods.ts';
import { formBody } from '../middleware/form-body.ts';
import { paramsOf, type PortalState } from '../state.ts';
import { checkSessionCsrf, CSRF_FIELD } from './csrf.ts';
import {
  DEVICE_GROUP_FIELDS,
  EMPTY_GROUP_FORM,
  groupFormProblems,
  groupToForm,
  readDeviceGroupForm,
} from './device-group-form.ts';
import type { AdminPaths } from './paths.ts';
import type { PortalAdmin } from './portal-admin.ts';
import { PORTAL_FIELDS, portalFormProblems, portalSettingsToForm, readPortalForm } from './portal-form.ts';
import { adminOf } from './session.ts';
import { deviceGroupPage } from './views/device-group.ts';
import { describeChanges, portalPage, type PortalView } from './views/portal.ts';
import { countEndedByAdmin } from '../../lib/metrics/sessions.ts';

type Ctx = ParameterizedContext<PortalState>;

export interface ScreenContext {
  paths: AdminPaths;
  clock: Clock;
  log: (line: string) => void;
  /** Loads the admin session (loadAdminSession) and refuses a visitor who is not signed in (requireAdmin). */
  signedIn: Middleware<PortalState>[];
  /** The audit trail (portal/audit.ts): one line per action done. */
  audit: RequestAudit;
}

/**
 * The settings form: a policy of 20,000 characters, 4 UTF-8 bytes each and percent-encoded, is 240 kB; the
 * walled garden's 200 host names and 500 networks, one a line, fit in the rest.
 */
const SETTINGS_MAX_BYTES = 512 * 1024;
/** A group's 1,000 networks of up to 49 characters, one a line, percent-encoded. */
const GROUP_MAX_BYTES = 256 * 1024;
const BUTTON_MAX_BYTES = 1024;

/**
 * The captive portal screen under {base}admin/portal: the settings form, the number of current portal
 * sessions with Clear current sessions, and the Device Groups (list, add, edit, remove). Every POST is
 * signed in, capped and CSRF-checked before its handler runs; each answers with the page it leaves the admin
 * on (200 done, 400 with every problem next to its field and the form as typed, nothing written).
 */
export function portalScreen(route: AddRoute, context: ScreenContext, admin: PortalAdmin): void {
  const { paths, signedIn, log } = context;
  const post = (maxBytes: number, fields: readonly string[], handler: Middleware<PortalState>) => [
    ...signedIn,
    formBody({ maxBytes, fields: [CSRF_FIELD, ...fields] }),
    checkSessionCsrf,
    handler,
  ];
  const page = portalPageRenderer(context, admin);
  const who = (ctx: Ctx) => showValue(adminOf(ctx).session.userName);

  route('/admin/portal', {
    GET: [...signedIn, (ctx) => page(ctx, 200, {})],
    POST: [
      ...post(SETTINGS_MAX_BYTES, PORTAL_FIELDS, async function saveSettings(ctx) {
        const form = readPortalForm(paramsOf(ctx));
        const result = await admin.settings.save(form.input);
        if (!result.ok) {
          return page(ctx, 400, {
            values: form.values,
            outcome: { kind: 'problems', problems: portalFormProblems(form, result.problems) },
          });
        }
        log(
          `admin: ${who(ctx)} saved the portal settings (changed: ${result.changed.join(', ') || 'nothing'})`,
        );
        await context.audit.admin(ctx, 'settings.saved', {
          settings: 'portal',
          changes: settingsChanges(result.previous, result.settings),
        });
        page(ctx, 200, {
          values: portalSettingsToForm(result.settings),
          outcome: {
            kind: 'saved',
            changes: describeChanges(result.previous, result.settings, result.changed),
          },
        });
      }),
    ],
  });
  route('/admin/portal/clear-sessions', {
    POST: post(BUTTON_MAX_BYTES, [], async function clearSessions(ctx) {
      // The store waits on timers while a helper's "last seen" flush holds the lock (serve never waits in SQLite).
      const ended = await admin.sessions.endBySource(PORTAL_SESSION_SOURCES, {
        kind: 'sessions.cleared',
        actor: adminActor(ctx),
        address: requestAddress(ctx),
        detail: { sources: PORTAL_SESSION_SOURCES },
      });
      countEndedByAdmin(ended);
      log(`admin: ${who(ctx)} cleared the current portal sessions: ${ended} ended`);
      page(ctx, 200, { outcome: { kind: 'cleared', ended } });
    }),
  });
  route('/admin/portal/groups', {
    POST: post(GROUP_MAX_BYTES, DEVICE_GROUP_FIELDS, async function addGroup(ctx) {
      const form = readDeviceGroupForm(paramsOf(ctx));
      try {
        const group = await admin.deviceGroups.create(form.input);
        log(`admin: ${who(ctx)} added the Device Group ${showValue(group.name)}`);
        await context.audit.admin(ctx, 'settings.saved', deviceGroupChange('added', undefined, group));
        page(ctx, 200, { outcome: { kind: 'group-added', name: group.name } });
      } catch (error) {
        if (!(error instanceof DeviceGroupInputError)) throw error;
        page(ctx, 400, {
          newGroup: form.values,
          outcome: { kind: 'group-problems', problems: groupFormProblems(form, error.problems) },
        });
      }
    }),
  });
  route('/admin/portal/groups/:id', {
    GET: [
      ...signedIn,
      function showGroup(ctx) {
        const group = existing(admin, groupIdOf(ctx));
        groupPage(ctx, 200, { id: group.id, name: group.name, values: groupToForm(group) });
      },
    ],
    POST: post(GROUP_MAX_BYTES, DEVICE_GROUP_FIELDS, async function saveGroup(ctx) {
      const id = groupIdOf(ctx);
      const form = readDeviceGroupForm(paramsOf(ctx));
      try {
        const before = admin.deviceGroups.get(id);
        const group = await admin.deviceGroups.update(id, form.input);
        log(`admin: ${who(ctx)} changed the Device Group ${showValue(group.name)}`);
        await context.audit.admin(ctx, 'settings.saved', deviceGroupChange('changed', before, group));
        page(ctx, 200, {
          outcome: { kind: 'group-saved', name: group.name, endedSessions: group.endedSessions },
        });
      } catch (error) {
        if (isNotFound(error)) throw noSuchGroup(id);
        if (!(error instanceof DeviceGroupInputError)) throw error;
        const { name } = existing(admin, id);
        groupPage(ctx, 400, {
          id,
          name,
          values: form.values,
          problems: groupFormProblems(form, error.problems),
        });
      }
    }),
  });
  route('/admin/portal/groups/:id/remove', {
    POST: post(BUTTON_MAX_BYTES, [], async function removeGroup(ctx) {
      const id = groupIdOf(ctx);
      const before = admin.deviceGroups.get(id);
      const group = await admin.deviceGroups.remove(id).catch((error: unknown) => {
        throw isNotFound(error) ? noSuchGroup(id) : error;
      });
      log(`admin: ${who(ctx)} removed the Device Group ${showValue(group.name)}`);
      await context.audit.admin(
        ctx,
        'settings.saved',
        deviceGroupChange('removed', before ?? group, undefined),
      );
      page(ctx, 200, {
        outcome: { kind: 'group-removed', name: group.name, endedSessions: group.endedSessions },
      });
    }),
  });

  function groupPage(
    ctx: Ctx,
    status: number,
    view: Omit<Parameters<typeof deviceGroupPage>[0], 'paths' | 'user' | 'csrf'>,
  ): void {
    const { session } = adminOf(ctx);
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = deviceGroupPage({ paths, user: session.userName, csrf: session.csrfToken, ...view });
  }
}

type PageParts = Partial<Pick<PortalView, 'values' | 'newGroup' | 'outcome'>>;

/**
 * The portal page as it is now: the settings in force (unless the form is shown as typed), the groups, the
 * count of sessions the portal made. Stored settings that cannot be read are not a 500: the page says why
 * and shows the defaults, so the admin can save again.
 */
function portalPageRenderer(context: ScreenContext, admin: PortalAdmin) {
  const timeZone = admin.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  return (ctx: Ctx, status: number, parts: PageParts): void => {
    const { session } = adminOf(ctx);
    let values = parts.values;
    let unreadable: string | undefined;
    if (values === undefined) {
      try {
        values = portalSettingsToForm(admin.settings.load());
      } catch (error) {
        if (!(error instanceof DoormanError)) throw error;
        values = portalSettingsToForm(DEFAULT_PORTAL_SETTINGS);
        unreadable = error.message;
      }
    }
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = portalPage({
      paths: context.paths,
      user: session.userName,
      csrf: session.csrfToken,
      values,
      timeZone,
      today: localDate(context.clock.now()),
      leastIdleMinutes: admin.leastIdleMinutes ?? 1,
      portalSessions: admin.sessions.countBySource(PORTAL_SESSION_SOURCES),
      groups: admin.deviceGroups.list(),
      newGroup: parts.newGroup ?? EMPTY_GROUP_FORM,
      unreadable,
      ...(parts.outcome === undefined ? {} : { outcome: parts.outcome }),
    });
  };
}

const ID = /^[1-9]\d{0,9}$/;

/** The `:id` of the path: a group id, or a 404 (as for a group that does not exist). */
function groupIdOf(ctx: Ctx & { params?: Record<string, string | undefined> }): number {
  const text = ctx.params?.id ?? '';
  if (!ID.test(text)) throw new ApiError('not_found', `there is no Device Group ${showValue(text)}`);
  return Number(text);
}

function existing(admin: PortalAdmin, id: number) {
  const group = admin.deviceGroups.get(id);
  if (group === undefined) throw noSuchGroup(id);
  return group;
}

const noSuchGroup = (id: number) =>
  new ApiError('not_found', `there is no Device Group with id ${id}: it may have been removed meanwhile`);

const isNotFound = (error: unknown) => error instanceof DoormanError && error.code === 'NOT_FOUND';
