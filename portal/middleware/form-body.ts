import type { Middleware } from 'koa';
import getRawBody from 'raw-body';
import { showValue } from '../../lib/errors.ts';
import { ApiError, invalidParam } from '../errors.ts';
import type { PortalState } from '../state.ts';

const FORM_TYPE = 'application/x-www-form-urlencoded';

export interface FormBodyOptions {
  maxBytes: number;
  /** The endpoint's parameters. Others are ignored; each of these may be given at most once. */
  fields: readonly string[];
}

/**
 * Read an HTML-form body (what `curl -d` sends), at most maxBytes of it, into ctx.state.params. Only UTF-8
 * urlencoded bodies are read: another type, charset or content coding is a 415 before a byte is read, and a
 * Content-Length over the cap a 413. A repeated parameter is refused rather than one copy picked: which copy a
 * proxy or a script meant is a guess.
 */
export function formBody(options: FormBodyOptions): Middleware<PortalState> {
  return async function readFormBody(ctx, next) {
    checkContentType(ctx.get('Content-Type'));
    const coding = ctx.get('Content-Encoding').trim().toLowerCase();
    if (coding !== '' && coding !== 'identity') {
      throw new ApiError('unsupported_media_type', `Content-Encoding ${showValue(coding)} is not supported`);
    }
    const body = await readBody(ctx.req, ctx.get('Content-Length') || undefined, options.maxBytes);
    const form = new URLSearchParams(body);
    const params = new Map<string, string>();
    for (const name of options.fields) {
      const values = form.getAll(name);
      if (values.length > 1) throw invalidParam(name, 'given more than once; send it once');
      const value = values[0];
      if (value === undefined) continue;
      // URLSearchParams turns bytes that are not UTF-8 into U+FFFD; a value containing it was mangled.
      if (value.includes('\uFFFD')) throw invalidParam(name, 'is not valid UTF-8');
      params.set(name, value);
    }
    ctx.state.params = params;
    await next();
  };
}

/**
 * `application/x-www-form-urlencoded`, with no charset or `charset=utf-8`. RFC 9110 §8.3.1: type, subtype and
 * parameter names are case-insensitive, and a parameter value may be a quoted string.
 */
function checkContentType(header: string): void {
  const [type = '', ...parameters] = header.split(';');
  const unsupported = (why: string) =>
    new ApiError('unsupported_media_type', `${why}; send ${FORM_TYPE} (as curl -d does)`);
  if (header.trim() === '') throw unsupported('Content-Type is missing');
  if (type.trim().toLowerCase() !== FORM_TYPE) {
    throw unsupported(`Content-Type ${showValue(type.trim())} is not supported`);
  }
  for (const parameter of parameters) {
    const eq = parameter.indexOf('=');
    if (eq < 0 || parameter.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const charset = parameter
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (charset !== 'utf-8') throw unsupported(`charset ${showValue(charset)} is not supported, only utf-8`);
  }
}

async function readBody(
  stream: NodeJS.ReadableStream,
  length: string | undefined,
  maxBytes: number,
): Promise<string> {
  try {
    return await getRawBody(stream, { length: length ?? null, limit: maxBytes, encoding: 'utf-8' });
  } catch (error) {
    if (!isRawBodyError(error)) throw error;
    if (error.type === 'entity.too.large') {
      throw new ApiError('payload_too_large', `the body is larger than ${maxBytes} bytes`);
    }
    // A Content-Length the body does not match, or a client that went away mid-body.
    throw new ApiError('invalid_request', `the body could not be read (${error.type})`);
  }
}

const isRawBodyError = (error: unknown): error is Error & { type: string } =>
  error instanceof Error && 'type' in error && typeof error.type === 'string';
