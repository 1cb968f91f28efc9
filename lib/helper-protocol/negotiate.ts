import { escapeValue } from './escape.ts';

/**
 * Squid's stateful authentication helpers, `auth_param negotiate` and `auth_param ntlm` (Squid 3.4+ reply
 * format, as Squid 5.7 reads it). No concurrency: Squid reserves one child from `YR` to the final answer, and
 * lines carry no channel-ID.
 *
 *   request = ("YR" / "KK") SP token *(SP extra) LF   ; YR starts a handshake, KK continues it;
 *                                                      ; token = the client's base64; extras = key_extras
 *   reply   = "TT" SP token LF                          ; a challenge for the client
 *           / "OK" *(SP key "=" value) LF
 *           / "ERR" *(SP key "=" value) LF
 *           / "BH" *(SP key "=" value) LF
 *
 * Measured on Squid 5.7 (docs/seamless-design.md §2):
 * - `TT token=QUJD` reaches the client as `Negotiate token=QUJD` (src/helper/Reply.cc takes the word after
 *   TT): the challenge is positional, `TT <base64>`, as ntlm_auth writes it.
 * - A Negotiate `OK` without `token=` makes Squid exit (`Unsupported helper response`): every Negotiate OK
 *   carries one, `*` when the acceptor has no final token (as Samba's gss-spnego writes).
 * - NTLM's `OK user=…` needs no token.
 * - `user=` is URL-decoded by Squid (`al%20ice` → `al ice` in access.log).
 * - `ERR` and `BH` both give the client 407; only BH reaches cache.log at the default debug level, so
 *   acceptor failures (skew, replay, wrong SPN) are BH: see the helper's policy.
 */

/**
 * Negotiate lines get 64 KiB, not the 32 KiB of the other helpers: Windows tokens with large PACs approach
 * 48,000 bytes, 64,000 characters of base64.
 */
export const MAX_NEGOTIATE_LINE_BYTES = 64 * 1024;

export type StatefulCommand = 'YR' | 'KK';

export interface StatefulRequest {
  command: StatefulCommand;
  /** The client's token, base64 as Squid passed it (not decoded here: the route classifier does). */
  token: string;
  /** Whatever `key_extras` appended, URL-escaped as Squid sent it. */
  extras: string[];
}

export type StatefulParseOutcome = { ok: true; request: StatefulRequest } | { ok: false; message: string };

/** One request line, LF already removed (the line decoder's job). Never throws. */
export function parseStatefulRequest(line: string): StatefulParseOutcome {
  if (line.length > MAX_NEGOTIATE_LINE_BYTES) {
    return {
      ok: false,
      message: `request line of ${line.length} bytes is longer than ${MAX_NEGOTIATE_LINE_BYTES}`,
    };
  }
  const words = line.split(' ').filter((w) => w !== '');
  const [command, token, ...extras] = words;
  if (command !== 'YR' && command !== 'KK') {
    const shown = command === undefined ? 'an empty line' : JSON.stringify(command.slice(0, 16));
    return { ok: false, message: `unknown request ${shown}: expected YR or KK` };
  }
  if (token === undefined) return { ok: false, message: `${command} without a token` };
  return { ok: true, request: { command, token, extras } };
}

export type StatefulReply =
  /** A challenge to send the client, base64. */
  | { result: 'TT'; token: string }
  /**
   * Authenticated. `token`: the acceptor's final token (Kerberos AP-REP, SPNEGO accept-completed), base64;
   * absent when it has none. A Negotiate reply then says `token=*`; an NTLM reply says nothing.
   */
  | { result: 'OK'; user: string; token?: string }
  /** The user's credentials were refused (NTLM `NA`, a principal of another realm). */
  | { result: 'ERR'; message?: string }
  /** Our failure or a token we cannot take: Squid logs the message in cache.log. */
  | { result: 'BH'; message: string };

export type StatefulScheme = 'negotiate' | 'ntlm';

/**
 * One reply line, LF included, in the form Squid 5.7 accepts for `scheme`. Throws TypeError for a reply the
 * caller built wrongly (a token that is not base64, an empty user): runHelper answers BH for it.
 */
export function formatStatefulReply(scheme: StatefulScheme, reply: StatefulReply): string {
  switch (reply.result) {
    case 'TT':
      return `TT ${checkedToken(reply.token)}\n`;
    case 'OK': {
      if (reply.user.length === 0) throw new TypeError('an OK reply needs a user name');
      const user = `user=${escapeValue(reply.user)}`;
      if (scheme === 'negotiate') {
        const token = reply.token === undefined ? '*' : checkedToken(reply.token);
        return `OK token=${token} ${user}\n`;
      }
      return `OK ${user}\n`;
    }
    case 'ERR':
      return reply.message === undefined ? 'ERR\n' : `ERR message=${escapeValue(reply.message)}\n`;
    case 'BH':
      return `BH message=${escapeValue(reply.message)}\n`;
  }
}

/**
 * A token goes out unescaped, as ntlm_auth and negotiate_kerberos_auth write it: the base64 alphabet has no
 * `%`, so Squid's URL-decoding leaves it as it is. Anything else would break the line.
 */
function checkedToken(token: string): string {
  if (token.length === 0) throw new TypeError('a reply token is empty');
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    const ok =
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x61 && c <= 0x7a) ||
      (c >= 0x30 && c <= 0x39) ||
      c === 0x2b ||
      c === 0x2f ||
      c === 0x3d;
    if (!ok) throw new TypeError(`a reply token has a character outside base64 at ${i + 1}`);
  }
  return token;
}
