import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FORM, startPortal, type Portal } from './harness.ts';

let portal: Portal;
beforeEach(async () => {
  portal = await startPortal({ api: { maxBodyBytes: 512 } });
});
afterEach(async () => {
  await portal.close();
});

const login = (headers: Record<string, string>, body: string | Buffer) =>
  portal.send({ method: 'POST', path: '/api/login/', headers, body });

describe('form bodies', () => {
  it('accepts urlencoded with or without a UTF-8 charset, in any case, quoted or not', async () => {
    const body = `api_key=${portal.key}&username=alice`;
    for (const type of [
      FORM,
      `${FORM}; charset=utf-8`,
      'Application/X-WWW-Form-URLEncoded;Charset="UTF-8"',
    ]) {
      const reply = await login({ 'Content-Type': type }, body);
      expect(reply.status, type).toBe(200);
    }
  });

  it('refuses other types, charsets and codings with 415 before reading', async () => {
    const body = `api_key=${portal.key}&username=alice`;
    const cases: [Record<string, string>, string][] = [
      [{}, 'Content-Type is missing; send application/x-www-form-urlencoded (as curl -d does)'],
      [
        { 'Content-Type': 'application/json' },
        'Content-Type "application/json" is not supported; send application/x-www-form-urlencoded (as curl -d does)',
      ],
      [
        { 'Content-Type': 'multipart/form-data; boundary=x' },
        'Content-Type "multipart/form-data" is not supported; send application/x-www-form-urlencoded (as curl -d does)',
      ],
      [
        { 'Content-Type': `${FORM}; charset=iso-8859-1` },
        'charset "iso-8859-1" is not supported, only utf-8; send application/x-www-form-urlencoded (as curl -d does)',
      ],
      [{ 'Content-Type': FORM, 'Content-Encoding': 'gzip' }, 'Content-Encoding "gzip" is not supported'],
    ];
    for (const [headers, message] of cases) {
      const reply = await login(headers, body);
      expect(reply.status).toBe(415);
      expect(reply.json).toEqual({ ok: false, error: 'unsupported_media_type', message });
    }
    expect(portal.sessions.list()).toEqual([]);
  });

  it('refuses a JSON body with 415', async () => {
    const reply = await login(
      { 'Content-Type': 'application/json' },
      JSON.stringify({ api_key: portal.key, username: 'alice' }),
    );
    expect(reply.status).toBe(415);
    expect(reply.json).toMatchObject({ ok: false, error: 'unsupported_media_type' });
  });

  it('decodes + and percent-escapes as UTF-8', async () => {
    const reply = await login({ 'Content-Type': FORM }, `api_key=${portal.key}&username=Ana+Mar%C3%ADa`);
    expect(reply.json).toEqual({ ok: true, username: 'Ana María', ip: '127.0.0.1' });
  });

  it('refuses a value that is not UTF-8, escaped or raw', async () => {
    const escaped = await login({ 'Content-Type': FORM }, `api_key=${portal.key}&username=caf%E9`);
    expect(escaped.status).toBe(400);
    expect(escaped.json).toEqual({
      ok: false,
      error: 'invalid_request',
      field: 'username',
      message: 'username: is not valid UTF-8',
    });
    const raw = Buffer.concat([Buffer.from(`api_key=${portal.key}&username=caf`), Buffer.from([0xe9])]);
    expect((await login({ 'Content-Type': FORM }, raw)).json).toMatchObject({ field: 'username' });
  });

  it('refuses a repeated parameter, naming it and never echoing a key', async () => {
    const twiceKey = await portal.post(
      '/api/login/',
      `api_key=${portal.key}&username=alice&api_key=${portal.key}`,
    );
    expect(twiceKey.status).toBe(400);
    expect(twiceKey.json).toEqual({
      ok: false,
      error: 'invalid_request',
      field: 'api_key',
      message: 'api_key: given more than once; send it once',
    });
    const twiceName = await portal.post('/api/login/', `api_key=${portal.key}&username=alice&username=bob`);
    expect(twiceName.status).toBe(400);
    expect(twiceName.json).toMatchObject({ error: 'invalid_request', field: 'username' });
    expect(portal.sessions.list()).toEqual([]);
  });

  it('ignores unknown parameters, repeated or not', async () => {
    const reply = await portal.post('/api/login/', `api_key=${portal.key}&username=alice&x=1&x=2&API_KEY=no`);
    expect(reply.status).toBe(200);
  });

  it('answers 413 for a Content-Length over the cap without waiting for the body', async () => {
    const reply = await login({ 'Content-Type': FORM, 'Content-Length': '100000' }, 'api_key=');
    expect(reply.status).toBe(413);
    expect(reply.json).toEqual({
      ok: false,
      error: 'payload_too_large',
      message: 'the body is larger than 512 bytes',
    });
  });

  it('answers 413 for a chunked body that grows past the cap, and takes one at the cap', async () => {
    const body = (size: number) => {
      const start = `api_key=${portal.key}&username=alice&pad=`;
      return start + 'x'.repeat(size - start.length);
    };
    const chunked = { 'Content-Type': FORM, 'Transfer-Encoding': 'chunked' };
    expect((await login(chunked, body(512))).status).toBe(200);
    const over = await login(chunked, body(513));
    expect(over.status).toBe(413);
    expect(over.json).toMatchObject({ ok: false, error: 'payload_too_large' });
  });

  it('refuses an empty body as a missing parameter', async () => {
    const reply = await login({ 'Content-Type': FORM }, '');
    expect(reply.status).toBe(400);
    expect(reply.json).toMatchObject({ ok: false, error: 'invalid_request', field: 'api_key' });
  });
});
