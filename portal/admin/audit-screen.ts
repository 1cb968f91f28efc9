import type { Middleware } from 'koa';
import type { AuditRepository } from '../../lib/store/store.ts';
import type { AddRoute } from '../middleware/allow-methods.ts';
import type { PortalState } from '../state.ts';
import { AUDIT_PAGE_SIZE, readAuditFilters } from './audit-filters.ts';
import type { AdminPaths } from './paths.ts';
import { chromeOf, sendPage } from './screen.ts';
import { auditPage } from './views/audit.ts';

export interface AuditScreenContext {
  paths: AdminPaths;
  /** Loads the admin session (loadAdminSession) and refuses a visitor who is not signed in (requireAdmin). */
  signedIn: Middleware<PortalState>[];
  /** What the page says the events are kept for (config audit.retentionDays). */
  retentionDays: number;
}

/**
 * The Audit screen under {base}admin/audit: GET only (filters in the query string, pages by cursor), signed
 * in. A filter with a problem is a 400 with the problem at its field and no events; the read is the store's
 * (async: PostgreSQL reads the database itself, the trail is not replicated).
 */
export function auditScreen(
  route: AddRoute,
  context: AuditScreenContext,
  audit: Pick<AuditRepository, 'list'>,
): void {
  route('/admin/audit', {
    GET: [
      ...context.signedIn,
      async function showAudit(ctx) {
        const { values, query, problems } = readAuditFilters(new URLSearchParams(ctx.querystring));
        const page = problems.length > 0 ? undefined : await audit.list({ ...query, limit: AUDIT_PAGE_SIZE });
        sendPage(
          ctx,
          problems.length > 0 ? 400 : 200,
          auditPage({
            paths: context.paths,
            ...chromeOf(ctx),
            values,
            problems,
            page,
            older: query.before !== undefined,
            retentionDays: context.retentionDays,
          }),
        );
      },
    ],
  });
}
