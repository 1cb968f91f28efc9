import { describe, expect, it } from 'vitest';
import {
  errorResponse,
  httpResponse,
  noContentResponse,
  optionsResponse,
  unchangedRequest,
} from '../../../icap-server/serializer.ts';

const stamp = { istag: 'dm-1', now: Date.UTC(2026, 0, 2, 3, 4, 5) };
const DATE = 'Date: Fri, 02 Jan 2026 03:04:05 GMT';
const text = (b: Buffer) => b.toString('latin1');
const lines = (...l: string[]) => l.join('\r\n');

describe('the serializer', () => {
  it('writes the OPTIONS answer', () => {
    expect(text(optionsResponse(stamp, { service: 'Doorman', maxConnections: 50, optionsTtl: 300 }))).toBe(
      lines(
        'ICAP/1.0 200 OK',
        'ISTag: "dm-1"',
        DATE,
        'Methods: REQMOD',
        'Service: Doorman',
        'Max-Connections: 50',
        'Options-TTL: 300',
        'Allow: 204',
        'Preview: 0',
        'Transfer-Preview: *',
        'Encapsulated: null-body=0',
        '',
        '',
      ),
    );
  });

  it('writes 204 No Content with the ISTag', () => {
    expect(text(noContentResponse(stamp))).toBe(
      lines('ICAP/1.0 204 No Content', 'ISTag: "dm-1"', DATE, 'Encapsulated: null-body=0', '', ''),
    );
  });

  it("writes a 302 as res-hdr with null-body at the HTTP head's length", () => {
    const http = lines(
      'HTTP/1.1 302 Found',
      'Location: http://portal.example/?u=a%20b',
      'Content-Length: 0',
      '',
      '',
    );
    expect(
      text(httpResponse(stamp, { status: 302, headers: { Location: 'http://portal.example/?u=a%20b' } })),
    ).toBe(
      lines(
        'ICAP/1.0 200 OK',
        'ISTag: "dm-1"',
        DATE,
        `Encapsulated: res-hdr=0, null-body=${http.length}`,
        '',
        '',
      ) + http,
    );
  });

  it("writes a 511 with its body chunked, res-body at the HTTP head's length", () => {
    const html = '<!doctype html><title>Sign in</title>é';
    const body = Buffer.from(html);
    const http = lines(
      'HTTP/1.1 511 Network Authentication Required',
      'Content-Type: text/html; charset=utf-8',
      `Content-Length: ${body.length}`,
      '',
      '',
    );
    const out = httpResponse(stamp, {
      status: 511,
      headers: { 'Content-Type': 'text/html; charset=utf-8' },
      body: html,
    });
    expect(out).toEqual(
      Buffer.concat([
        Buffer.from(
          lines(
            'ICAP/1.0 200 OK',
            'ISTag: "dm-1"',
            DATE,
            `Encapsulated: res-hdr=0, res-body=${http.length}`,
            '',
            '',
          ) +
            http +
            `${body.length.toString(16)}\r\n`,
          'latin1',
        ),
        body,
        Buffer.from('\r\n0\r\n\r\n', 'latin1'),
      ]),
    );
  });

  it('keeps a Content-Length the decision gave', () => {
    expect(text(httpResponse(stamp, { status: 204, headers: { 'content-length': '0' } }))).not.toContain(
      'Content-Length',
    );
  });

  it('sends the request back unchanged, with and without a body', () => {
    const head = Buffer.from(lines('GET http://a/ HTTP/1.1', 'Host: a', '', ''));
    expect(text(unchangedRequest(stamp, head, undefined))).toBe(
      lines(
        'ICAP/1.0 200 OK',
        'ISTag: "dm-1"',
        DATE,
        `Encapsulated: req-hdr=0, null-body=${head.length}`,
        '',
        '',
      ) + text(head),
    );
    expect(text(unchangedRequest(stamp, head, Buffer.from('hello')))).toBe(
      lines(
        'ICAP/1.0 200 OK',
        'ISTag: "dm-1"',
        DATE,
        `Encapsulated: req-hdr=0, req-body=${head.length}`,
        '',
        '',
      ) +
        text(head) +
        '5\r\nhello\r\n0\r\n\r\n',
    );
    expect(text(unchangedRequest(stamp, head, Buffer.alloc(0)))).toMatch(
      /req-body=\d+\r\n\r\n.*\r\n\r\n0\r\n\r\n$/s,
    );
  });

  it('writes error answers, with Connection: close when the connection ends', () => {
    expect(text(errorResponse(stamp, 400, true))).toBe(
      lines(
        'ICAP/1.0 400 Bad Request',
        'ISTag: "dm-1"',
        DATE,
        'Encapsulated: null-body=0',
        'Connection: close',
        '',
        '',
      ),
    );
    expect(text(errorResponse(stamp, 404, false))).toBe(
      lines(
        'ICAP/1.0 404 ICAP Service Not Found',
        'ISTag: "dm-1"',
        DATE,
        'Encapsulated: null-body=0',
        '',
        '',
      ),
    );
  });

  it('refuses what would break the framing or the grammar: our bugs, thrown as TypeError', () => {
    expect(() =>
      httpResponse(stamp, { status: 302, headers: { Location: 'http://a/\r\nSet-Cookie: x=1' } }),
    ).toThrow(/header Location: value .* has a control character/);
    expect(() => httpResponse(stamp, { status: 302, headers: { 'Bad Name': 'x' } })).toThrow(
      /header name "Bad Name"/,
    );
    expect(() => httpResponse(stamp, { status: 302, headers: { Location: 'http://a/é✓' } })).toThrow(
      /not Latin-1/,
    );
    expect(() => httpResponse(stamp, { status: 99 })).toThrow(/HTTP status 99/);
    expect(() => noContentResponse({ ...stamp, istag: 'a"b' })).toThrow(/ISTag "a\\"b"/);
    expect(() => noContentResponse({ ...stamp, istag: 'x'.repeat(33) })).toThrow(/1 to 32/);
    expect(() => errorResponse(stamp, 418, true)).toThrow(/ICAP status 418/);
  });
});
