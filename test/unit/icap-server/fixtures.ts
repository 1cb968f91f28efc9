/**
 * ICAP requests as Squid 5 and c-icap-client write them (shapes copied from what the lab's stub logged), built
 * by functions so each test states only what differs. CRLF everywhere.
 */
const CRLF = '\r\n';

export function options(extra: readonly string[] = []): string {
  return [
    'OPTIONS icap://127.0.0.1:1344/reqmod ICAP/1.0',
    'Host: 127.0.0.1:1344',
    'Allow: 206, trailers',
    ...extra,
    '',
    '',
  ].join(CRLF);
}

export interface ReqmodShape {
  url?: string;
  method?: string;
  service?: string;
  /** ICAP header lines beyond Host, Encapsulated. Default: Squid's (Preview: 0, Allow: 204, trailers, X-Client-IP). */
  icapHeaders?: readonly string[];
  httpHeaders?: readonly string[];
  /** Body bytes as chunks (already chunk-encoded by `chunks`), or undefined for null-body. */
  body?: string;
}

export const SQUID_ICAP_HEADERS = ['Preview: 0', 'Allow: 204, trailers', 'X-Client-IP: 10.91.0.2'];

/** The encapsulated HTTP request head. */
export function httpHead(shape: ReqmodShape = {}): string {
  const url = shape.url ?? 'http://10.92.0.2/page?a=1';
  const headers = shape.httpHeaders ?? ['Host: 10.92.0.2', 'User-Agent: curl/7.88.1', 'Accept: */*'];
  return [`${shape.method ?? 'GET'} ${url} HTTP/1.1`, ...headers, '', ''].join(CRLF);
}

export function reqmod(shape: ReqmodShape = {}): string {
  const head = httpHead(shape);
  const encapsulated =
    shape.body === undefined ? `req-hdr=0, null-body=${head.length}` : `req-hdr=0, req-body=${head.length}`;
  return (
    [
      `REQMOD icap://127.0.0.1:1344${shape.service ?? '/reqmod'} ICAP/1.0`,
      'Host: 127.0.0.1:1344',
      `Encapsulated: ${encapsulated}`,
      ...(shape.icapHeaders ?? SQUID_ICAP_HEADERS),
      '',
      '',
    ].join(CRLF) +
    head +
    (shape.body ?? '')
  );
}

/** Chunk-encode pieces; `last` is the last-chunk line ("0", "0; ieof"). */
export function chunks(pieces: readonly string[], last = '0'): string {
  return (
    pieces.map((p) => `${Buffer.byteLength(p, 'latin1').toString(16)}${CRLF}${p}${CRLF}`).join('') +
    `${last}${CRLF}${CRLF}`
  );
}

/** Every way of cutting the stream in two, and the stream one byte at a time. */
export function* everySplit(stream: Buffer): Generator<Buffer[]> {
  for (let i = 0; i <= stream.length; i++) yield [stream.subarray(0, i), stream.subarray(i)];
  const bytes: Buffer[] = [];
  for (let i = 0; i < stream.length; i++) bytes.push(stream.subarray(i, i + 1));
  yield bytes;
}
