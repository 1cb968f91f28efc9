import { IcapProtocolError, show } from './errors.ts';
import type { IcapMethod } from './request-line.ts';

/**
 * RFC 3507 §4.4.1:
 *
 *   encapsulated_header: "Encapsulated: " encapsulated_list
 *   encapsulated_list: encapsulated_entity |
 *                      encapsulated_entity ", " encapsulated_list
 *   encapsulated_entity: reqhdr | reshdr | reqbody | resbody | optbody
 *   reqhdr  = "req-hdr" "=" (decimal integer)
 *   reshdr  = "res-hdr" "=" (decimal integer)
 *   reqbody = { "req-body" | "null-body" } "=" (decimal integer)
 *   resbody = { "res-body" | "null-body" } "=" (decimal integer)
 *   optbody = { "opt-body" | "null-body" } "=" (decimal integer)
 *
 *   "the offsets listed in the Encapsulated line MUST be monotonically increasing"
 *   REQMOD  request  encapsulated_list: [reqhdr] reqbody
 *   OPTIONS request  encapsulated_list: [optbody]
 *
 * This service needs the HTTP request's head to decide anything, so a REQMOD must carry req-hdr (at 0, the
 * start of the body). An OPTIONS request with a body (opt-body) is refused: nothing defines what it would mean.
 * Squid sends OPTIONS with no Encapsulated header at all, which is taken as "null-body=0".
 */
export interface Encapsulated {
  /** Length of the encapsulated HTTP request head (req-hdr at 0, up to the body entity); 0 when absent. */
  requestHeadBytes: number;
  /** req-body follows (chunked), or null-body: nothing does. */
  body: 'req-body' | 'null-body';
}

/** An offset: 1 to 9 decimal digits (a request head is capped far below a gigabyte anyway). */
const OFFSET = /^[0-9]{1,9}$/;

/** What Squid sends with every REQMOD, taken without the general parse below (it gives the same). */
const SQUID_REQMOD = /^req-hdr=0, (req-body|null-body)=([1-9][0-9]{0,8})$/;

export function parseEncapsulated(value: string | undefined, method: IcapMethod): Encapsulated {
  if (method === 'REQMOD' && value !== undefined) {
    const squid = SQUID_REQMOD.exec(value);
    if (squid !== null) return { requestHeadBytes: Number(squid[2]), body: squid[1] as Encapsulated['body'] };
  }
  if (value === undefined) {
    if (method === 'OPTIONS') return { requestHeadBytes: 0, body: 'null-body' };
    throw new IcapProtocolError('MALFORMED', 'ICAP header Encapsulated: missing (REQMOD needs req-hdr=0, …)');
  }
  const entities: Array<[name: string, offset: number]> = [];
  for (const member of value.split(',')) {
    const entity = member.trim();
    const eq = entity.indexOf('=');
    const name = eq < 0 ? entity : entity.slice(0, eq);
    const digits = eq < 0 ? '' : entity.slice(eq + 1);
    if (!OFFSET.test(digits))
      throw new IcapProtocolError(
        'MALFORMED',
        `ICAP header Encapsulated: ${show(entity)}: expected name=offset (a decimal offset)`,
      );
    const offset = Number(digits);
    const previous = entities.at(-1);
    if (previous !== undefined && offset < previous[1])
      throw new IcapProtocolError(
        'MALFORMED',
        `ICAP header Encapsulated: ${show(value)}: offsets must increase (${name}=${offset} after ${previous[0]}=${previous[1]})`,
      );
    entities.push([name, offset]);
  }
  const names = entities.map(([name]) => name).join(', ');
  if (method === 'OPTIONS') {
    if (names === 'null-body' && entities[0]?.[1] === 0) return { requestHeadBytes: 0, body: 'null-body' };
    throw new IcapProtocolError(
      'MALFORMED',
      `ICAP header Encapsulated: ${show(value)}: an OPTIONS request takes "null-body=0" or nothing`,
    );
  }
  const [head, body] = entities;
  if (
    entities.length !== 2 ||
    head?.[0] !== 'req-hdr' ||
    (body?.[0] !== 'req-body' && body?.[0] !== 'null-body')
  )
    throw new IcapProtocolError(
      'MALFORMED',
      `ICAP header Encapsulated: ${show(value)}: a REQMOD takes "req-hdr=0, req-body=N" or "req-hdr=0, null-body=N"`,
    );
  if (head[1] !== 0)
    throw new IcapProtocolError('MALFORMED', `ICAP header Encapsulated: req-hdr=${head[1]}: must be 0`);
  if (body[1] === 0)
    throw new IcapProtocolError(
      'MALFORMED',
      `ICAP header Encapsulated: ${body[0]}=0: the HTTP head cannot be empty`,
    );
  return { requestHeadBytes: body[1], body: body[0] };
}
