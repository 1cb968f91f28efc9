import { describe, expect, it } from 'vitest';
import type { IcapProtocolError } from '../../../icap-server/errors.ts';
import { type IcapErrorCode } from '../../../icap-server/errors.ts';
import { IcapParser, type IcapRequest, type ParserLimits } from '../../../icap-server/parser.ts';
import { chunks, everySplit, httpHead, options, reqmod } from './fixtures.ts';

/** What a test compares of a request: plain data, no class instances. */
function summary(request: IcapRequest) {
  const base = { method: request.method, service: request.service, allow204: request.allow204 };
  if (request.method === 'OPTIONS') return base;
  const body = request.body;
  return {
    ...base,
    target: request.http.target,
    httpMethod: request.http.method,
    clientIp: request.headers.get('x-client-ip'),
    body:
      body.kind === 'none'
        ? 'none'
        : body.kind === 'preview'
          ? `preview${body.complete ? ' (complete)' : ''}: ${body.data.toString('latin1')}`
          : `full ${body.length}: ${body.data?.toString('latin1') ?? '(not kept)'}`,
  };
}

interface Outcome {
  requests: ReturnType<typeof summary>[];
  error: { code: IcapErrorCode; message: string } | undefined;
  maxBuffered: number;
}

/** Push the pieces in turn, taking every event after each; then end the stream. */
function parse(pieces: readonly Buffer[], limits: Partial<ParserLimits> = {}): Outcome {
  const parser = new IcapParser(limits);
  const requests: Outcome['requests'] = [];
  let error: IcapProtocolError | undefined;
  let maxBuffered = 0;
  for (const piece of pieces) {
    parser.push(piece);
    maxBuffered = Math.max(maxBuffered, parser.buffered);
    for (let event = parser.next(); event.kind !== 'need-more'; event = parser.next()) {
      if (event.kind === 'error') {
        error = event.error;
        break;
      }
      requests.push(summary(event.request));
    }
    if (error) break;
  }
  error ??= parser.end();
  return { requests, error: error && { code: error.code, message: error.message }, maxBuffered };
}

const bytes = (text: string) => Buffer.from(text, 'latin1');
const whole = (text: string, limits?: Partial<ParserLimits>) => parse([bytes(text)], limits);

describe('golden exchanges, split at every byte boundary', () => {
  const golden: Array<[name: string, stream: string, expected: ReturnType<typeof summary>[]]> = [
    [
      "Squid's OPTIONS (no Encapsulated header)",
      options(),
      [{ method: 'OPTIONS', service: '/reqmod', allow204: false }],
    ],
    [
      "Squid's REQMOD of a GET (null-body, Preview: 0)",
      reqmod(),
      [
        {
          method: 'REQMOD',
          service: '/reqmod',
          allow204: true,
          target: 'http://10.92.0.2/page?a=1',
          httpMethod: 'GET',
          clientIp: '10.91.0.2',
          body: 'none',
        },
      ],
    ],
    [
      'a POST with Preview: 0: the empty preview ends the message',
      reqmod({ method: 'POST', body: chunks([]) }),
      [
        {
          method: 'REQMOD',
          service: '/reqmod',
          allow204: true,
          target: 'http://10.92.0.2/page?a=1',
          httpMethod: 'POST',
          clientIp: '10.91.0.2',
          body: 'preview: ',
        },
      ],
    ],
    [
      'a preview holding the whole body (ieof), with an extension and a trailer',
      reqmod({
        method: 'POST',
        icapHeaders: ['Preview: 10', 'X-Client-IP: 10.0.0.7'],
        body: '4;name=x\r\nabcd\r\n3\r\nefg\r\n0; ieof\r\nX-Trailer: 1\r\n\r\n',
      }),
      [
        {
          method: 'REQMOD',
          service: '/reqmod',
          allow204: true,
          target: 'http://10.92.0.2/page?a=1',
          httpMethod: 'POST',
          clientIp: '10.0.0.7',
          body: 'preview (complete): abcdefg',
        },
      ],
    ],
    [
      'a whole body without preview or Allow: 204 (kept, it must go back)',
      reqmod({ method: 'PUT', icapHeaders: [], body: chunks(['hello ', 'world']) }),
      [
        {
          method: 'REQMOD',
          service: '/reqmod',
          allow204: false,
          target: 'http://10.92.0.2/page?a=1',
          httpMethod: 'PUT',
          clientIp: undefined,
          body: 'full 11: hello world',
        },
      ],
    ],
    [
      'a whole body with Allow: 204 (counted, not kept)',
      reqmod({ method: 'PUT', icapHeaders: ['allow: 204'], body: chunks(['A'.repeat(300)]) }),
      [
        {
          method: 'REQMOD',
          service: '/reqmod',
          allow204: true,
          target: 'http://10.92.0.2/page?a=1',
          httpMethod: 'PUT',
          clientIp: undefined,
          body: 'full 300: (not kept)',
        },
      ],
    ],
  ];

  for (const [name, stream, expected] of golden) {
    it(name, () => {
      const buffer = bytes(stream);
      for (const pieces of everySplit(buffer)) {
        const outcome = parse(pieces);
        expect(outcome.error, `cut into ${pieces.map((p) => p.length).join('+')}`).toBeUndefined();
        expect(outcome.requests).toEqual(expected);
      }
    });
  }

  it('several requests on one connection (pipelined), split at every byte boundary', () => {
    const stream = bytes(
      options() + reqmod() + reqmod({ url: 'http://b.example/', body: chunks([]) }) + options(),
    );
    for (const pieces of everySplit(stream)) {
      const { requests, error } = parse(pieces);
      expect(error).toBeUndefined();
      expect(requests.map((r) => ('target' in r ? `${r.method} ${r.target}` : r.method))).toEqual([
        'OPTIONS',
        'REQMOD http://10.92.0.2/page?a=1',
        'REQMOD http://b.example/',
        'OPTIONS',
      ]);
    }
  });

  it('gives one request per next(), so pipelined ones wait as bytes until asked for', () => {
    const parser = new IcapParser();
    parser.push(bytes(reqmod() + reqmod({ url: 'http://second.example/' })));
    const first = parser.next();
    expect(first.kind === 'request' && first.request.method === 'REQMOD' && first.request.http.target).toBe(
      'http://10.92.0.2/page?a=1',
    );
    expect(parser.buffered).toBe(reqmod({ url: 'http://second.example/' }).length);
    const second = parser.next();
    expect(
      second.kind === 'request' && second.request.method === 'REQMOD' && second.request.http.target,
    ).toBe('http://second.example/');
    expect(parser.next()).toEqual({ kind: 'need-more' });
  });

  it('reads header names case-insensitively and keeps the HTTP head as it came', () => {
    const parser = new IcapParser();
    parser.push(bytes(reqmod({ icapHeaders: ['x-CLIENT-ip: 10.1.1.1', 'ALLOW: 204'] })));
    const event = parser.next();
    if (event.kind !== 'request' || event.request.method !== 'REQMOD') throw new Error(`got ${event.kind}`);
    expect(event.request.headers.get('X-Client-IP')).toBe('10.1.1.1');
    expect(event.request.allow204).toBe(true);
    expect(event.request.http.raw.toString('latin1')).toBe(httpHead());
    expect(event.request.http.headers.get('user-agent')).toBe('curl/7.88.1');
  });
});

describe('incomplete is not malformed', () => {
  it('says "need more" at every cut of a valid message, and reports truncation only at the end', () => {
    const stream = bytes(
      reqmod({ method: 'POST', icapHeaders: ['Preview: 4'], body: chunks(['abcd'], '0; ieof') }),
    );
    for (let cut = 1; cut < stream.length; cut++) {
      const parser = new IcapParser();
      parser.push(stream.subarray(0, cut));
      expect(parser.next(), `cut at ${cut}`).toEqual({ kind: 'need-more' });
      const error = parser.end();
      expect(error?.code, `cut at ${cut}`).toBe('TRUNCATED');
    }
  });

  it('reports no truncation between messages', () => {
    expect(whole(options() + options()).error).toBeUndefined();
  });

  it('goes from idle to head to body and back', () => {
    const parser = new IcapParser();
    expect(parser.phase).toBe('idle');
    const stream = reqmod({ method: 'POST', icapHeaders: ['Allow: 204'], body: chunks(['ab']) });
    const bodyAt = stream.indexOf('2\r\nab');
    parser.push(bytes(stream.slice(0, 1)));
    expect(parser.next().kind).toBe('need-more');
    expect(parser.phase).toBe('head');
    parser.push(bytes(stream.slice(1, bodyAt + 1)));
    expect(parser.next().kind).toBe('need-more');
    expect(parser.phase).toBe('body');
    parser.push(bytes(stream.slice(bodyAt + 1)));
    expect(parser.next().kind).toBe('request');
    expect(parser.phase).toBe('idle');
  });
});

describe('malformed messages: a typed error naming the field and value', () => {
  const head = httpHead();
  const icap = (lines: readonly string[]) => [...lines, '', ''].join('\r\n');
  const cases: Array<[name: string, stream: string, code: IcapErrorCode, message: string | RegExp]> = [
    [
      'a request line with two spaces',
      'OPTIONS  icap://h/reqmod ICAP/1.0\r\n\r\n',
      'MALFORMED',
      'three parts',
    ],
    [
      'an HTTP request sent to the ICAP port',
      'GET / HTTP/1.1\r\nHost: x\r\n\r\n',
      'MALFORMED',
      'version "HTTP/1.1"',
    ],
    ['ICAP/1.1', 'OPTIONS icap://h/reqmod ICAP/1.1\r\n\r\n', 'VERSION_NOT_SUPPORTED', 'only ICAP/1.0'],
    [
      'RESPMOD',
      'RESPMOD icap://h/reqmod ICAP/1.0\r\nEncapsulated: req-hdr=0, res-hdr=10, res-body=20\r\n\r\n',
      'METHOD_NOT_ALLOWED',
      'REQMOD only',
    ],
    ['an unknown method', 'LOG icap://h/reqmod ICAP/1.0\r\n\r\n', 'METHOD_NOT_IMPLEMENTED', 'method "LOG"'],
    [
      'a URI of another scheme',
      'OPTIONS http://h/reqmod ICAP/1.0\r\n\r\n',
      'MALFORMED',
      'URI "http://h/reqmod"',
    ],
    [
      'a header line without a colon',
      icap(['OPTIONS icap://h/reqmod ICAP/1.0', 'Host h']),
      'MALFORMED',
      'ICAP header line "Host h"',
    ],
    [
      'a folded header line',
      icap(['OPTIONS icap://h/reqmod ICAP/1.0', 'Host: h', ' more']),
      'MALFORMED',
      'folded',
    ],
    [
      'a bare LF in the head',
      'OPTIONS icap://h/reqmod ICAP/1.0\nHost: h\r\n\r\n',
      'MALFORMED',
      'bare CR or LF',
    ],
    [
      'two Encapsulated headers',
      icap(['REQMOD icap://h/reqmod ICAP/1.0', 'Encapsulated: null-body=0', 'Encapsulated: null-body=0']),
      'MALFORMED',
      'Encapsulated: appears more than once',
    ],
    [
      'a REQMOD without Encapsulated',
      icap(['REQMOD icap://h/reqmod ICAP/1.0', 'Host: h']),
      'MALFORMED',
      'Encapsulated: missing',
    ],
    [
      'offsets that go down',
      icap(['REQMOD icap://h/reqmod ICAP/1.0', 'Encapsulated: req-hdr=50, null-body=10']),
      'MALFORMED',
      'offsets must increase',
    ],
    [
      'a non-numeric offset',
      icap(['REQMOD icap://h/reqmod ICAP/1.0', 'Encapsulated: req-hdr=0, null-body=1e3']),
      'MALFORMED',
      '"null-body=1e3"',
    ],
    [
      'a REQMOD carrying a response',
      icap(['REQMOD icap://h/reqmod ICAP/1.0', 'Encapsulated: res-hdr=0, res-body=40']),
      'MALFORMED',
      'a REQMOD takes',
    ],
    [
      'req-hdr not at 0',
      icap(['REQMOD icap://h/reqmod ICAP/1.0', 'Encapsulated: req-hdr=4, null-body=40']),
      'MALFORMED',
      'req-hdr=4: must be 0',
    ],
    [
      'an OPTIONS with a body',
      icap(['OPTIONS icap://h/reqmod ICAP/1.0', 'Encapsulated: opt-body=0']),
      'MALFORMED',
      'OPTIONS request takes',
    ],
    [
      'a Preview that is no number',
      icap(['OPTIONS icap://h/reqmod ICAP/1.0', 'Preview: -1']),
      'MALFORMED',
      'Preview: "-1"',
    ],
    [
      'an HTTP head shorter than Encapsulated says',
      icap(['REQMOD icap://h/reqmod ICAP/1.0', `Encapsulated: req-hdr=0, null-body=${head.length + 2}`]) +
        head +
        'XX',
      'MALFORMED',
      `ends at byte ${head.length}`,
    ],
    [
      'an HTTP head longer than Encapsulated says',
      icap(['REQMOD icap://h/reqmod ICAP/1.0', `Encapsulated: req-hdr=0, null-body=${head.length - 2}`]) +
        head,
      'MALFORMED',
      'does not end in an empty line',
    ],
    [
      'a bad HTTP request line',
      reqmod({ url: 'http://a b/' }),
      'MALFORMED',
      'HTTP request line "GET http://a b/ HTTP/1.1"',
    ],
    [
      'a bad HTTP header',
      reqmod({ httpHeaders: ['Bad Name: x'] }),
      'MALFORMED',
      'HTTP header line "Bad Name: x"',
    ],
    [
      'a chunk size that is not hex',
      reqmod({ body: 'zz\r\nab\r\n0\r\n\r\n' }),
      'MALFORMED',
      'chunk size line "zz"',
    ],
    [
      'chunk data longer than its size',
      reqmod({ icapHeaders: ['Allow: 204'], body: '2\r\nabc\r\n0\r\n\r\n' }),
      'MALFORMED',
      'expected CRLF',
    ],
    ['a preview longer than announced', reqmod({ body: chunks(['ab']) }), 'MALFORMED', 'Preview says 0'],
    ['a bad chunk extension', reqmod({ body: '0; =x\r\n\r\n' }), 'MALFORMED', 'bad extension'],
  ];
  for (const [name, stream, code, message] of cases) {
    it(`${name}: ${code}`, () => {
      const { error, requests } = whole(stream);
      expect(requests).toEqual([]);
      expect(error?.code).toBe(code);
      expect(error?.message).toMatch(message instanceof RegExp ? message : new RegExp(escape(message)));
    });
  }

  it('stays failed: later bytes are ignored and the same error comes back', () => {
    const parser = new IcapParser();
    parser.push(bytes('LOG icap://h/reqmod ICAP/1.0\r\n\r\n'));
    const first = parser.next();
    parser.push(bytes(options()));
    expect(parser.next()).toEqual(first);
    expect(parser.buffered).toBe(0);
  });

  it('keeps the requests before a malformed one', () => {
    const { requests, error } = whole(options() + 'LOG icap://h/reqmod ICAP/1.0\r\n\r\n');
    expect(requests.map((r) => r.method)).toEqual(['OPTIONS']);
    expect(error?.code).toBe('METHOD_NOT_IMPLEMENTED');
  });
});

describe('caps', () => {
  const tooLarge = (stream: string, limits: Partial<ParserLimits>, message: string) => {
    for (const pieces of [[bytes(stream)], [...everySplit(bytes(stream))].at(-1) ?? []]) {
      const { error, maxBuffered } = parse(pieces, limits);
      expect(error?.code).toBe('TOO_LARGE');
      expect(error?.message).toContain(message);
      // Fed byte by byte, an endless head is refused once past the cap, not buffered further.
      if (pieces.length > 1) expect(maxBuffered).toBeLessThanOrEqual(stream.length);
    }
  };

  it('an ICAP head with no end is refused once past the cap, without waiting for the end', () => {
    const parser = new IcapParser({ maxIcapHeadBytes: 100 });
    parser.push(bytes(`OPTIONS icap://h/reqmod ICAP/1.0\r\nX-Long: ${'a'.repeat(100)}`));
    const event = parser.next();
    expect(event.kind === 'error' && [event.error.code, event.error.message]).toEqual([
      'TOO_LARGE',
      'ICAP head: over 100 bytes without an empty line',
    ]);
  });

  it('an ICAP head over the cap', () => {
    tooLarge(options([`X-Long: ${'a'.repeat(200)}`]), { maxIcapHeadBytes: 200 }, 'ICAP head');
  });

  it('too many ICAP header fields', () => {
    tooLarge(options(['A: 1', 'B: 2']), { maxIcapFields: 3 }, 'ICAP headers: 4 fields, at most 3 allowed');
  });

  it('an HTTP head over the cap, refused from its announced size before it arrives', () => {
    const stream = reqmod({ httpHeaders: [`Cookie: ${'c'.repeat(500)}`] });
    const icapOnly = stream.slice(0, stream.indexOf('GET '));
    expect(whole(icapOnly, { maxHttpHeadBytes: 300 }).error?.message).toMatch(
      /HTTP head of \d+ bytes, at most 300/,
    );
  });

  it('too many HTTP header fields', () => {
    tooLarge(reqmod(), { maxHttpFields: 2 }, 'HTTP headers: 3 fields, at most 2 allowed');
  });

  it('a chunk over the chunk cap', () => {
    tooLarge(
      reqmod({ icapHeaders: ['Allow: 204'], body: '1001\r\n' }),
      { maxChunkBytes: 4096 },
      'chunk size "1001": at most 4096',
    );
  });

  it('a chunk size of 17 hex digits, however small its value', () => {
    expect(whole(reqmod({ icapHeaders: ['Allow: 204'], body: `${'0'.repeat(16)}1\r\n` })).error?.code).toBe(
      'MALFORMED',
    );
  });

  it('a chunk size line over its cap, with or without its CRLF', () => {
    tooLarge(
      reqmod({ icapHeaders: ['Allow: 204'], body: `1;${'x'.repeat(100)}` }),
      { maxChunkLineBytes: 50 },
      'chunk size line',
    );
    tooLarge(
      reqmod({ icapHeaders: ['Allow: 204'], body: `1;${'x'.repeat(100)}\r\n` }),
      { maxChunkLineBytes: 50 },
      'chunk size line',
    );
  });

  it('a body that would have to be kept, over the kept-body cap', () => {
    tooLarge(
      reqmod({ icapHeaders: [], body: chunks(['a'.repeat(60), 'b'.repeat(60)]) }),
      { maxBodyBytes: 100 },
      'req-body: over 100 bytes',
    );
  });

  it('a body not kept (Allow: 204) is not held to the kept-body cap', () => {
    const { error, requests } = whole(
      reqmod({ icapHeaders: ['Allow: 204'], body: chunks(['a'.repeat(500)]) }),
      { maxBodyBytes: 100 },
    );
    expect(error).toBeUndefined();
    expect(requests).toHaveLength(1);
  });

  it('a Preview over the kept-body cap', () => {
    tooLarge(
      reqmod({ icapHeaders: ['Preview: 101'], body: chunks([]) }),
      { maxBodyBytes: 100 },
      'Preview: 101: at most 100',
    );
  });

  it('trailers over their cap', () => {
    tooLarge(
      reqmod({ icapHeaders: ['Allow: 204'], body: `0\r\nX: ${'t'.repeat(100)}\r\n\r\n` }),
      { maxTrailerBytes: 50 },
      'chunk trailer',
    );
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
