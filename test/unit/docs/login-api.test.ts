import { afterEach, describe, expect, it } from 'vitest';
import { ApiErrorCodes } from '../../../portal/errors.ts';
import { readDoc } from '../../support/markdown.ts';
import { FORM, startPortal, type Portal, type Reply } from '../portal/harness.ts';

/**
 * docs/login-api.md promises every answer of the login API: each refusal's status and code, and the words of
 * the ones a script's author will see most. Here the real app (on a socket, in-memory DB) is asked each way the
 * page names, and the page must agree with what it answers.
 */
const page = readDoc('docs/login-api.md');
const rows = page
  .split('\n')
  .filter((line) => /^\| [0-9]{3} \|/.test(line))
  .map((line) => {
    const [status = '', code = ''] = line
      .split('|')
      .map((cell) => cell.trim().replaceAll('`', ''))
      .slice(1);
    return { status: Number(status), code, line };
  });

// The splash page's own refusal (a form that did not come from it), never the API's.
const apiCodes = Object.entries(ApiErrorCodes).filter(([code]) => code !== 'forbidden');

describe('docs/login-api.md, every answer', () => {
  it.each(apiCodes)('has a row for %s (%i)', (code, status) => {
    expect(rows.filter((row) => row.code === code).map((row) => row.status)).toContain(status);
  });

  it('gives each code the status the code has', () => {
    const wrong = rows.filter(
      (row) =>
        row.code in ApiErrorCodes && ApiErrorCodes[row.code as keyof typeof ApiErrorCodes] !== row.status,
    );
    expect(wrong.map((row) => row.line)).toEqual([]);
    expect(rows.find((row) => row.code === 'server_error')?.status).toBe(500);
  });
});

describe('docs/login-api.md agrees with what the API answers', () => {
  let portal: Portal | undefined;
  afterEach(async () => {
    await portal?.close();
    portal = undefined;
  });

  /** The row for `code` whose words hold `when`, and that the reply's status, code and message are in it. */
  function documented(reply: Reply, code: string, when: string, exactMessage = true): void {
    const row = rows.find((r) => r.code === code && r.line.includes(when));
    expect(row, `a ${code} row about ${when}`).toBeDefined();
    expect(reply.status).toBe(row?.status);
    const body = reply.json as { error: string; message: string };
    expect(body.error).toBe(code);
    if (exactMessage) expect(row?.line).toContain(`"message":${JSON.stringify(body.message)}`);
  }

  it('logs in and out with the bodies shown', async () => {
    const p = (portal = await startPortal());
    const login = await p.post('/api/login/', { api_key: p.key, username: 'alice' });
    expect(page).toContain(JSON.stringify(login.json).replace('127.0.0.1', '10.0.0.5'));
    const logout = await p.post('/api/logout', { api_key: p.key });
    expect(page).toContain(JSON.stringify(logout.json).replace('127.0.0.1', '10.0.0.5'));
  });

  it('refuses a missing field, a repeated one, a wrong key, another path and another method as written', async () => {
    const p = (portal = await startPortal());
    documented(await p.post('/api/login/', { api_key: p.key }), 'invalid_request', 'missing or empty');
    documented(
      await p.post('/api/logout/', `api_key=${p.key}&api_key=${p.key}`),
      'invalid_request',
      'more than once',
      false,
    );
    documented(
      await p.post('/api/login/', { api_key: 'dm.x.y', username: 'a' }),
      'invalid_api_key',
      'revoked',
    );
    documented(await p.post('/api/nope', { api_key: p.key }), 'not_found', 'another path');
    const get = await p.send({ path: '/api/login/' });
    documented(get, 'method_not_allowed', 'another method');
    expect(get.headers.allow).toBe('POST');
  });

  it('refuses a bad timeout, a big body and another type as written', async () => {
    const p = (portal = await startPortal());
    documented(
      await p.post('/api/login/', { api_key: p.key, username: 'a', timeout: '1e3' }),
      'invalid_request',
      'a `timeout`',
      false,
    );
    documented(
      await p.post('/api/login/', `api_key=${p.key}&username=${'a'.repeat(5000)}`),
      'payload_too_large',
      'api.maxBodyBytes',
    );
    const text = await p.send({
      method: 'POST',
      path: '/api/login/',
      headers: { 'Content-Type': 'text/plain' },
      body: 'x',
    });
    documented(text, 'unsupported_media_type', 'Content-Type', false);
    expect(page).toContain(`send ${FORM} (as curl -d does)`);
  });

  it('refuses a trusted proxy without the key, and a script over its wrong keys, as written', async () => {
    const p = (portal = await startPortal({ trustedProxies: ['127.0.0.1'], api: { maxKeyFailures: 1 } }));
    documented(
      await p.post('/api/login/', { api_key: p.key, username: 'a' }),
      'unproven_client',
      'without the proxy key',
      false,
    );
    const direct = await startPortal({ api: { maxKeyFailures: 1 } });
    try {
      await direct.post('/api/login/', { api_key: 'dm.x.y', username: 'a' });
      const limited = await direct.post('/api/login/', { api_key: 'dm.x.y', username: 'a' });
      documented(limited, 'too_many_requests', 'api.maxKeyFailures', false);
      expect(limited.headers['retry-after']).toMatch(/^[0-9]+$/);
    } finally {
      await direct.close();
    }
  });
});
