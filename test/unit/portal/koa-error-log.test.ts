import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../../lib/clock.ts';
import { configSchema } from '../../../lib/config/schema.ts';
import { oneLine } from '../../../lib/log.ts';
import { openDatabase } from '../../../lib/store/database.ts';
import { openSqliteStore } from '../../../lib/store/sqlite-store.ts';
import { createApp } from '../../../portal/app.ts';
import { koaErrorLog } from '../../../portal/middleware/request-log.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

describe("Koa's own errors", () => {
  it('go to the log as one line, not to stderr as a stack trace', async () => {
    const db = openDatabase(':memory:');
    const clock = new ManualClock();
    const store = openSqliteStore(db, { passwordFile: '/nonexistent/directory-bind-password', clock });
    const logs: string[] = [];
    const app = createApp({
      config: configSchema.parse({}),
      sessions: store.sessions,
      apiKeys: store.apiKeys,
      clock,
      log: (l) => logs.push(l),
    });
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    // callback() is where Koa adds its own printing listener when the app has none.
    app.callback();
    app.emit('error', new Error('the response stream failed'));
    db.close();
    expect(printed).not.toHaveBeenCalled();
    const line = logs.at(-1) ?? '';
    expect(line).toMatch(/^portal: error: Error: the response stream failed \| at /);
    expect(line).not.toContain('\n');
  });

  it('leave out errors meant for the client, as Koa does', () => {
    const logs: string[] = [];
    const log = koaErrorLog((l) => logs.push(l));
    log(Object.assign(new Error('gone'), { status: 404 }));
    log(Object.assign(new Error('bad'), { status: 400, expose: true }));
    expect(logs).toEqual([]);
  });
});

describe('oneLine', () => {
  it('joins lines with " | ", trimming each, and leaves a single line alone', () => {
    expect(oneLine('Error: x\n    at f (a.ts:1:1)\r\n    at g (b.ts:2:2)')).toBe(
      'Error: x | at f (a.ts:1:1) | at g (b.ts:2:2)',
    );
    expect(oneLine('  one line  ')).toBe('  one line  ');
  });
});
