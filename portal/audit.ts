import type { ParameterizedContext } from 'koa';
import type { AuditInput, AuditKind } from '../lib/audit/event.ts';
import { showValue } from '../lib/errors.ts';
import { normaliseIp } from '../lib/net/address.ts';
import type { Replaced, SessionSource } from '../lib/store/session.ts';
import type { AuditRepository } from '../lib/store/store.ts';
import type { PortalState } from './state.ts';

type Ctx = ParameterizedContext<PortalState>;

/** Where a request came from: the proven client (when clientIp ran), else the TCP peer. */
export const requestAddress = (ctx: Ctx): string => ctx.state.clientIp ?? normaliseIp(ctx.ip) ?? ctx.ip;

/** The actor of a login API call: the API key's name (requireApiKey). */
export const apiActor = (ctx: Ctx): string => `api-key:${ctx.state.apiKey ?? '-'}`;

/**
 * Whom a new session on a key replaced, for its event's detail: another user's live session there (the same
 * user again is a renewal, not a replacement). `{replaced: user, source}`, or undefined.
 */
export function replacementOf(
  username: string,
  previous: Replaced | undefined,
): { replaced: string; source: SessionSource } | undefined {
  return previous === undefined || previous.username === username
    ? undefined
    : { replaced: previous.username, source: previous.source };
}

/**
 * A splash session's replacements as its event's detail: `replaced`/`source` for its key, and for the IPv6
 * address a registration binds, `addressReplaced`/`addressSource`; undefined when it replaced no one.
 */
export function replacementDetail(
  username: string,
  previous: Replaced | undefined,
  onAddress: Replaced | undefined,
): Record<string, string> | undefined {
  const onKey = replacementOf(username, previous);
  const onBinding = replacementOf(username, onAddress);
  if (onKey === undefined && onBinding === undefined) return undefined;
  return {
    ...onKey,
    ...(onBinding === undefined
      ? {}
      : { addressReplaced: onBinding.replaced, addressSource: onBinding.source }),
  };
}

/** The actor of an admin screen's request: the signed-in administrator. */
export const adminActor = (ctx: Ctx): string => `admin:${ctx.state.admin?.session.userName ?? '-'}`;

/**
 * The web app's way to the audit trail. Identity events go with their session write (SessionRepository's
 * `audit` argument, built with the helpers above); an admin's action is one line after it is done:
 *
 *     await audit.admin(ctx, 'api-key.created', { name });
 *
 * which records who (the signed-in admin), from where (the request's address), on this box (the store's) and
 * when. It never fails the request, whose change has been made: a failed write is logged.
 */
export interface RequestAudit {
  admin(ctx: Ctx, kind: AuditKind, detail?: Record<string, unknown>): Promise<void>;
  /** Any event, with the same never-fail rule (the admin sign-in, whose actor is not signed in yet). */
  record(input: AuditInput): Promise<void>;
}

export function requestAudit(
  audit: Pick<AuditRepository, 'record'> | undefined,
  log: (line: string) => void,
): RequestAudit {
  const record = async (input: AuditInput) => {
    if (audit === undefined) return;
    try {
      await audit.record(input);
    } catch (error) {
      log(`audit: ${input.kind} by ${showValue(input.actor)} not recorded: ${(error as Error).message}`);
    }
  };
  return {
    admin: (ctx, kind, detail) =>
      record({
        kind,
        actor: adminActor(ctx),
        address: requestAddress(ctx),
        ...(detail === undefined ? {} : { detail }),
      }),
    record,
  };
}
