import { ByteQueue } from './byte-queue.ts';
import { parseChunkSize } from './chunked.ts';
import { parseEncapsulated, type Encapsulated } from './encapsulated.ts';
import { IcapProtocolError, show } from './errors.ts';
import { BARE_CR_OR_LF, Headers, listMembers, parseFields } from './fields.ts';
import { parseHttpHead, type HttpRequestHead } from './http-head.ts';
import { parseRequestLine, type RequestLine } from './request-line.ts';

/**
 * An incremental ICAP request parser (RFC 3507): bytes in with `push`, one event at a time out with `next`.
 * Pure: no sockets, no timers. "Need more bytes" is an event of its own, never an error; an error is final
 * (the stream cannot be framed after it) and carries the ICAP status to answer with.
 *
 *   ICAP message = start-line *( header-field CRLF ) CRLF [ encapsulated ]        (RFC 3507 §4.3.1)
 *   REQMOD       = ICAP head, HTTP request head (req-hdr), then a chunked req-body or nothing (null-body)
 *
 * Requests are parsed lazily, one per `next()`: the caller asks for the next one only once it has answered
 * the previous, so pipelined requests wait as bytes, and what is buffered is bounded by what the caller lets
 * in (the shell stops reading while it answers) plus the caps below.
 *
 * Preview (RFC 3507 §4.5): with "Preview: N" the body sent now is at most N bytes, ending in "0; ieof" (that
 * was all of it) or "0" (the rest would follow a "100 Continue"). The request is complete at that last chunk:
 * this service always answers with a final response (204 or 200), after which the client sends nothing more
 * of the message, so the next bytes are the next request. It never sends "100 Continue": its decisions never
 * need the body. One that did would read the remaining chunks here after sending it.
 */
export interface ParserLimits {
  /** ICAP request line and header fields, final empty line included. */
  maxIcapHeadBytes: number;
  maxIcapFields: number;
  /** The encapsulated HTTP request head (req-hdr), known in advance from the Encapsulated offsets. */
  maxHttpHeadBytes: number;
  maxHttpFields: number;
  /** One chunk's size, and its size line with extensions. */
  maxChunkBytes: number;
  maxChunkLineBytes: number;
  /** Trailer fields after the last chunk, altogether. */
  maxTrailerBytes: number;
  /** Body bytes kept for the answer: a preview, or a whole body to send back when 204 is not allowed. */
  maxBodyBytes: number;
}

export const DEFAULT_LIMITS: ParserLimits = {
  maxIcapHeadBytes: 16 * 1024,
  maxIcapFields: 100,
  // Squid's own default request_header_max_size.
  maxHttpHeadBytes: 64 * 1024,
  maxHttpFields: 200,
  maxChunkBytes: 16 * 1024 * 1024,
  maxChunkLineBytes: 1024,
  maxTrailerBytes: 4096,
  maxBodyBytes: 64 * 1024,
};

export type IcapBody =
  | { kind: 'none' }
  /** The preview: `complete` when it ended in "0; ieof" (it is the whole body). */
  | { kind: 'preview'; data: Buffer; complete: boolean }
  /** A whole body (no preview). Its bytes are kept only when they may have to be sent back (no Allow: 204). */
  | { kind: 'full'; data: Buffer | undefined; length: number };

interface RequestBase {
  uri: string;
  /** The URI's path: "/reqmod". */
  service: string;
  headers: Headers;
  /**
   * The client takes a 204 for this request: it said "Allow: 204", or it sent a preview (RFC 3507 §4.6: a 204
   * answering a preview needs no Allow). Otherwise "no change" means sending the request back.
   */
  allow204: boolean;
}

export interface OptionsRequest extends RequestBase {
  method: 'OPTIONS';
}

export interface ReqmodRequest extends RequestBase {
  method: 'REQMOD';
  http: HttpRequestHead;
  body: IcapBody;
}

export type IcapRequest = OptionsRequest | ReqmodRequest;

export type ParseEvent =
  | { kind: 'need-more' }
  | { kind: 'request'; request: IcapRequest }
  | { kind: 'error'; error: IcapProtocolError };

/** Where the parser stands, for the shell's timers: waiting for a message, inside its head, inside its body. */
export type ParserPhase = 'idle' | 'head' | 'body';

const ICAP_SINGLETONS = ['encapsulated', 'preview', 'host'];
const PREVIEW = /^[0-9]{1,9}$/;

type State =
  | { at: 'icap-head'; scanned: number }
  | { at: 'http-head'; line: RequestLine; headers: Headers; encapsulated: Encapsulated }
  | { at: 'chunk-size' }
  | { at: 'chunk-data'; remaining: number }
  | { at: 'chunk-end' }
  | { at: 'trailer'; seen: number; ieof: boolean }
  | { at: 'failed'; error: IcapProtocolError };

/** The request being read once its heads are parsed, and how its body is read. */
interface Reading {
  request: Omit<ReqmodRequest, 'body'>;
  /** Preview: N, or undefined for a whole body. */
  preview: number | undefined;
  keep: boolean;
  kept: Buffer[];
  length: number;
}

export class IcapParser {
  readonly #limits: ParserLimits;
  readonly #queue = new ByteQueue();
  #state: State = { at: 'icap-head', scanned: 0 };
  #reading: Reading | undefined;
  #lastLine: { text: string; parsed: RequestLine } | undefined;

  constructor(limits: Partial<ParserLimits> = {}) {
    this.#limits = { ...DEFAULT_LIMITS, ...limits };
  }

  push(chunk: Uint8Array): void {
    if (this.#state.at !== 'failed') this.#queue.push(chunk);
  }

  /** Bytes held that no event has used yet. */
  get buffered(): number {
    return this.#queue.length;
  }

  get phase(): ParserPhase {
    const at = this.#state.at;
    if (at === 'icap-head') return this.#queue.length === 0 ? 'idle' : 'head';
    if (at === 'http-head') return 'head';
    return 'body';
  }

  /** The next request, an error, or "need more". */
  next(): ParseEvent {
    if (this.#state.at === 'failed') return { kind: 'error', error: this.#state.error };
    try {
      const request = this.#advance();
      return request === undefined ? { kind: 'need-more' } : { kind: 'request', request };
    } catch (error) {
      if (!(error instanceof IcapProtocolError)) throw error;
      this.#fail(error);
      return { kind: 'error', error };
    }
  }

  /** The stream has ended: an error if it ended inside a message, undefined between messages. */
  end(): IcapProtocolError | undefined {
    if (this.#state.at === 'failed') return this.#state.error;
    if (this.phase === 'idle') return undefined;
    const error = new IcapProtocolError(
      'TRUNCATED',
      `connection closed inside a message (${this.#state.at}, ${this.#queue.length} bytes unparsed)`,
    );
    this.#fail(error);
    return error;
  }

  #fail(error: IcapProtocolError): void {
    this.#state = { at: 'failed', error };
    this.#reading = undefined;
    this.#queue.skip(this.#queue.length);
  }

  #advance(): IcapRequest | undefined {
    for (;;) {
      const state = this.#state;
      switch (state.at) {
        case 'icap-head': {
          const end = this.#queue.indexOf('\r\n\r\n', state.scanned);
          if (end < 0) {
            if (this.#queue.length > this.#limits.maxIcapHeadBytes)
              throw new IcapProtocolError(
                'TOO_LARGE',
                `ICAP head: over ${this.#limits.maxIcapHeadBytes} bytes without an empty line`,
              );
            // The next search starts where a CRLF CRLF cut by this read could begin.
            state.scanned = Math.max(0, this.#queue.length - 3);
            return undefined;
          }
          if (end + 4 > this.#limits.maxIcapHeadBytes)
            throw new IcapProtocolError(
              'TOO_LARGE',
              `ICAP head: ${end + 4} bytes, at most ${this.#limits.maxIcapHeadBytes}`,
            );
          const text = this.#queue.text(end);
          this.#queue.skip(end + 4);
          const request = this.#icapHead(text);
          if (request !== undefined) {
            this.#state = { at: 'icap-head', scanned: 0 };
            return request;
          }
          break;
        }
        case 'http-head': {
          const size = state.encapsulated.requestHeadBytes;
          if (this.#queue.length < size) return undefined;
          const http = parseHttpHead(this.#queue.take(size), this.#limits.maxHttpFields);
          const request = this.#httpHead(state, http);
          if (request !== undefined) return request;
          break;
        }
        case 'chunk-size': {
          const eol = this.#queue.indexOf('\r\n');
          const max = this.#limits.maxChunkLineBytes;
          if (eol > max || (eol < 0 && this.#queue.length > max + 1))
            throw new IcapProtocolError('TOO_LARGE', `chunk size line: over ${max} bytes`);
          if (eol < 0) return undefined;
          const { size, ieof } = parseChunkSize(this.#queue.text(eol), this.#limits.maxChunkBytes);
          this.#queue.skip(eol + 2);
          if (size === 0) this.#state = { at: 'trailer', seen: 0, ieof };
          else {
            this.#count(size);
            this.#state = { at: 'chunk-data', remaining: size };
          }
          break;
        }
        case 'chunk-data': {
          const n = Math.min(state.remaining, this.#queue.length);
          if (n === 0) return undefined;
          const reading = this.#current();
          if (reading.keep) reading.kept.push(this.#queue.take(n));
          else this.#queue.skip(n);
          state.remaining -= n;
          if (state.remaining === 0) this.#state = { at: 'chunk-end' };
          break;
        }
        case 'chunk-end': {
          if (this.#queue.length < 2) return undefined;
          if (this.#queue.text(2) !== '\r\n')
            throw new IcapProtocolError(
              'MALFORMED',
              `chunk: ${show(this.#queue.text(2))} after the chunk data, expected CRLF (is the chunk size right?)`,
            );
          this.#queue.skip(2);
          this.#state = { at: 'chunk-size' };
          break;
        }
        case 'trailer': {
          // trailer-section = *( field-line CRLF ), then CRLF: read (and ignore) lines up to the empty one.
          const eol = this.#queue.indexOf('\r\n');
          if (eol < 0) {
            if (state.seen + this.#queue.length > this.#limits.maxTrailerBytes)
              throw new IcapProtocolError(
                'TOO_LARGE',
                `chunk trailer: over ${this.#limits.maxTrailerBytes} bytes`,
              );
            return undefined;
          }
          state.seen += eol + 2;
          if (state.seen > this.#limits.maxTrailerBytes)
            throw new IcapProtocolError(
              'TOO_LARGE',
              `chunk trailer: over ${this.#limits.maxTrailerBytes} bytes`,
            );
          if (eol > 0) parseFields([this.#queue.text(eol)], 'chunk trailer', 1);
          this.#queue.skip(eol + 2);
          if (eol === 0) return this.#finish(state.ieof);
          break;
        }
        case 'failed':
          throw state.error;
      }
    }
  }

  /** The ICAP head is in: a complete OPTIONS request, or on to the HTTP head. */
  #icapHead(text: string): IcapRequest | undefined {
    const lines = text.split('\r\n');
    const first = lines.shift() ?? '';
    // Split on CRLF, a CR or LF left anywhere is a bare one: one search for the head, the lines only to name it.
    if (BARE_CR_OR_LF.test(text)) {
      for (const line of [first, ...lines]) {
        if (line.includes('\r') || line.includes('\n'))
          throw new IcapProtocolError('MALFORMED', `ICAP head: line ${show(line)} has a bare CR or LF`);
      }
    }
    // A client sends the same request line again and again (Squid: one service URI): parsed once.
    if (first !== this.#lastLine?.text) this.#lastLine = { text: first, parsed: parseRequestLine(first) };
    const line = this.#lastLine.parsed;
    const headers = new Headers(
      parseFields(lines, 'ICAP header', this.#limits.maxIcapFields),
      'ICAP header',
      ICAP_SINGLETONS,
    );
    const encapsulated = parseEncapsulated(headers.get('encapsulated'), line.method);
    const preview = headers.get('preview');
    if (preview !== undefined && !PREVIEW.test(preview))
      throw new IcapProtocolError(
        'MALFORMED',
        `ICAP header Preview: ${show(preview)}: expected a number of bytes`,
      );
    if (line.method === 'OPTIONS') return { method: 'OPTIONS', ...this.#base(line, headers) };
    if (encapsulated.requestHeadBytes > this.#limits.maxHttpHeadBytes)
      throw new IcapProtocolError(
        'TOO_LARGE',
        `ICAP header Encapsulated: HTTP head of ${encapsulated.requestHeadBytes} bytes, at most ${this.#limits.maxHttpHeadBytes}`,
      );
    this.#state = { at: 'http-head', line, headers, encapsulated };
    return undefined;
  }

  /** The HTTP head is in: a complete request (null-body), or on to the chunked body. */
  #httpHead(state: Extract<State, { at: 'http-head' }>, http: HttpRequestHead): IcapRequest | undefined {
    const request = { method: 'REQMOD' as const, ...this.#base(state.line, state.headers), http };
    if (state.encapsulated.body === 'null-body') {
      this.#state = { at: 'icap-head', scanned: 0 };
      return { ...request, body: { kind: 'none' } };
    }
    const previewHeader = state.headers.get('preview');
    const preview = previewHeader === undefined ? undefined : Number(previewHeader);
    if (preview !== undefined && preview > this.#limits.maxBodyBytes)
      throw new IcapProtocolError(
        'TOO_LARGE',
        `ICAP header Preview: ${preview}: at most ${this.#limits.maxBodyBytes} bytes (the service asked for 0)`,
      );
    // A preview is always kept (it is small, capped above); a whole body only when it may have to go back.
    const keep = preview !== undefined || !request.allow204;
    this.#reading = { request, preview, keep, kept: [], length: 0 };
    this.#state = { at: 'chunk-size' };
    return undefined;
  }

  #base(line: RequestLine, headers: Headers): RequestBase {
    const allow = headers.get('allow');
    const allow204 = allow === '204' || headers.has('preview') || listMembers(allow).includes('204');
    return { uri: line.uri, service: line.service, headers, allow204 };
  }

  #current(): Reading {
    if (this.#reading === undefined) throw new Error('ICAP parser: body state without a request');
    return this.#reading;
  }

  /** Count a chunk's bytes against the preview size and the kept-body cap before reading them. */
  #count(size: number): void {
    const reading = this.#current();
    reading.length += size;
    if (reading.preview !== undefined && reading.length > reading.preview)
      throw new IcapProtocolError(
        'MALFORMED',
        `preview: ${reading.length} bytes or more, but Preview says ${reading.preview}`,
      );
    if (reading.keep && reading.length > this.#limits.maxBodyBytes)
      throw new IcapProtocolError(
        'TOO_LARGE',
        `req-body: over ${this.#limits.maxBodyBytes} bytes, without Allow: 204 it would have to be sent back`,
      );
  }

  #finish(ieof: boolean): IcapRequest {
    const reading = this.#current();
    this.#reading = undefined;
    this.#state = { at: 'icap-head', scanned: 0 };
    const data = Buffer.concat(reading.kept);
    const body: IcapBody =
      reading.preview !== undefined
        ? { kind: 'preview', data, complete: ieof }
        : { kind: 'full', data: reading.keep ? data : undefined, length: reading.length };
    return { ...reading.request, body };
  }
}
