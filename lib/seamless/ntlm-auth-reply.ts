import type { NtlmLeaseKind } from './acceptors.ts';

/** ntlm_auth's reasons are short (`NT_STATUS_LOGON_FAILURE`); anything longer is cut before it reaches a reply. */
export const MAX_REASON_CHARS = 256;

export type NtlmAuthReply =
  | { result: 'TT'; token: string }
  | { result: 'AF'; user: string; token?: string }
  | { result: 'NA'; reason: string }
  | { result: 'BH'; reason: string }
  | { result: 'invalid'; message: string };

/**
 * ntlm_auth's reply (Samba utils/ntlm_auth.c, lab REPORT.md §6.4). In `gss-spnego` mode every reply has a
 * token field (`*` for none) before the argument; in `squid-2.5-ntlmssp` mode AF and NA carry the argument
 * only. A user name may hold spaces (AD allows them), so it is the rest of the line.
 */
export function parseNtlmAuthReply(kind: NtlmLeaseKind, line: string): NtlmAuthReply {
  const words = line.split(' ').filter((w) => w !== '');
  const [code, ...rest] = words;
  const withToken = kind === 'gss-spnego';
  switch (code) {
    case 'TT': {
      const token = rest[0];
      if (token === undefined || token === '*')
        return { result: 'invalid', message: 'ntlm_auth answered TT without a token' };
      return { result: 'TT', token };
    }
    case 'AF': {
      const token = withToken && rest.length > 1 ? rest[0] : undefined;
      const user = (withToken && rest.length > 1 ? rest.slice(1) : rest).join(' ');
      if (user === '' || user === '*') {
        return { result: 'invalid', message: 'ntlm_auth accepted the client but named no user' };
      }
      return { result: 'AF', user, ...(token !== undefined && token !== '*' && { token }) };
    }
    case 'NA':
      return { result: 'NA', reason: reasonOf(withToken && rest.length > 1 ? rest.slice(1) : rest) };
    case 'BH':
      return { result: 'BH', reason: reasonOf(rest[0] === '*' ? rest.slice(1) : rest) };
    default: {
      const shown = code === undefined ? 'an empty line' : JSON.stringify(code.slice(0, 16));
      return { result: 'invalid', message: `ntlm_auth answered ${shown}: expected TT, AF, NA or BH` };
    }
  }
}

function reasonOf(words: string[]): string {
  const reason = words.join(' ');
  return reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS)}…` : reason;
}
