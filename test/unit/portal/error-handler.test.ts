import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { DoormanError } from '../../../lib/errors.ts';
import { StoreBusyError } from '../../../lib/store/busy.ts';
import { errorHandler } from '../../../portal/middleware/error-handler.ts';
import { startServer, type RunningServer } from '../../../portal/server.ts';
import type { PortalState } from '../../../portal/state.ts';

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** An app whose only route throws `error`; the admin screens' HTML page when `page` is set. */
async function answerTo(error: unknown, page = false) {
  const logs: string[] = [];
  const app = new Koa<PortalState>();
  app.use(errorHandler((line) => logs.push(line)));
  app.use((ctx) => {
    if (page) ctx.state.errorPage = (status, message) => `<p>${status}: ${message ?? 'see the log'}</p>`;
    throw error;
  });
  server = await startServer(app, [{ host: '127.0.0.1', port: 0 }]);
  const res = await fetch(`http://127.0.0.1:${server.addresses[0]?.port}/api/login/`);
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text(), logs };
}

const sqliteBusy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
const REASON = 'the session database is locked by another process; try again in 5 seconds';

describe('the error handler and a locked session DB', () => {
  it('answers a write given up (StoreBusyError) with a JSON 503, Retry-After and the reason', async () => {
    const res = await answerTo(new StoreBusyError(5000));
    expect(res.status).toBe(503);
    expect(res.retryAfter).toBe('5');
    expect(JSON.parse(res.body)).toEqual({ ok: false, error: 'service_unavailable', message: REASON });
    expect(res.logs).toEqual(['portal: GET /api/login/: the session DB is locked by another process: 503']);
  });

  it('answers a statement that met SQLITE_BUSY (or _SNAPSHOT) the same way, never 500', async () => {
    for (const error of [sqliteBusy(), Object.assign(sqliteBusy(), { code: 'SQLITE_BUSY_SNAPSHOT' })]) {
      const res = await answerTo(error);
      expect(res.status).toBe(503);
      expect(JSON.parse(res.body)).toMatchObject({ error: 'service_unavailable', message: REASON });
      await server?.close();
      server = undefined;
    }
  });

  it('shows the admin screens a 503 page with the reason', async () => {
    const res = await answerTo(sqliteBusy(), true);
    expect(res.status).toBe(503);
    expect(res.retryAfter).toBe('5');
    expect(res.body).toBe(`<p>503: ${REASON}</p>`);
  });

  it('answers a store that cannot be reached (PostgreSQL away) with a 503 and Retry-After', async () => {
    const res = await answerTo(
      new DoormanError('STORE_UNAVAILABLE', 'PostgreSQL store: connect ECONNREFUSED'),
    );
    expect(res.status).toBe(503);
    expect(res.retryAfter).toBe('5');
    expect(JSON.parse(res.body)).toEqual({
      ok: false,
      error: 'service_unavailable',
      message: 'the session store cannot be reached; try again in 5 seconds',
    });
    expect(res.logs).toEqual(['portal: GET /api/login/: PostgreSQL store: connect ECONNREFUSED: 503']);
  });

  it('still answers other errors with a bare 500', async () => {
    const res = await answerTo(Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' }));
    expect(res.status).toBe(500);
    expect(JSON.parse(res.body)).toEqual({ ok: false, error: 'server_error' });
  });
});
