import type { NtlmClientsSeen } from '../../store/ntlm-client-store.ts';
import { UNKNOWN_ADDRESS } from '../ntlm-clients.ts';
import {
  type CheckResult,
  type DoctorContext,
  type Fact,
  fail,
  isUnavailable,
  pass,
  skip,
  TITLES,
} from './check-result.ts';

/** NTLM's path, winbindd and its trust to the domain, and the clients that fall back to it from Kerberos. */

export interface WinbindFacts {
  /** `wbinfo -p` answered. */
  running: boolean;
  /** `wbinfo -t`: true, or what it said when it failed (undefined when not asked: winbindd is down). */
  trust?: true | string;
}

/** NTLM goes through winbindd; its secure channel (`wbinfo -t`) breaks when the computer account is reset. */
export function checkWinbind(context: DoctorContext, facts: Fact<WinbindFacts>): CheckResult {
  const id = 'winbind';
  const restart =
    "run Enable seamless again (`doorman seamless enable`): it restarts winbindd with Doorman's smb.conf";
  if (isUnavailable(facts)) return skip(id, `winbind could not be asked: ${facts.unavailable}`, restart);
  if (!facts.running) {
    return fail(
      id,
      'winbindd does not answer `wbinfo -p`',
      `${restart}; if another winbindd (the winbind service) holds /run/samba/winbindd, stop and disable it first`,
    );
  }
  if (facts.trust !== true) {
    return fail(
      id,
      `winbindd runs, but the trust to ${context.realm} fails (wbinfo -t): ${facts.trust ?? 'not checked'}`,
      `${restart}; it re-joins when the computer account no longer works (deleted or reset in the domain)`,
    );
  }
  return pass(id, `winbindd answers and the trust to ${context.realm} works`);
}

/** Addresses named in the clients check at most; the rest are counted. */
export const MAX_NAMED_CLIENTS = 20;

/**
 * A Windows client set to the proxy's IP address asks for no ticket (there is no HTTP/<address> principal) and
 * falls back to NTLM. authd counts the addresses whose handshakes carried NTLM (ntlm_clients, written at most
 * once a minute); this names those of the last day, so the administrator can fix their proxy setting. A note,
 * never a failure: NTLM still signs them in. Without the table (not joined yet, a DB that cannot be read) it
 * is the advice alone.
 */
export function checkClientsUseFqdn(
  context: DoctorContext,
  seen: Fact<NtlmClientsSeen>,
  port?: number,
): CheckResult {
  const id = 'clients-fqdn';
  const address = port === undefined ? context.fqdn : `${context.fqdn}:${port}`;
  const fix = `set the proxy as ${address} in the clients' settings (group policy, PAC file), never as its IP address`;
  const why = `Windows clients ask for a Kerberos ticket for HTTP/<the name they use for the proxy>; set to its IP address they cannot, and fall back to NTLM`;
  if (isUnavailable(seen)) {
    return {
      id,
      ok: true,
      status: 'note',
      title: TITLES[id],
      detail: `${why} (which clients did is not known: ${seen.unavailable})`,
      fix,
    };
  }
  if (seen.addresses === 0) return pass(id, 'no handshake carried NTLM in the last day');
  const named = seen.clients.filter((c) => c.address !== UNKNOWN_ADDRESS);
  const unknown = seen.clients.find((c) => c.address === UNKNOWN_ADDRESS);
  const parts: string[] = [];
  if (named.length > 0) {
    const list = named.map(
      (c) =>
        `${c.address} (${c.handshakes} handshake${c.handshakes === 1 ? '' : 's'}, last ${new Date(c.lastSeen).toISOString()})`,
    );
    const more = seen.addresses - named.length - (unknown === undefined ? 0 : 1);
    parts.push(
      `${seen.addresses - (unknown === undefined ? 0 : 1)} client address${named.length === 1 && more <= 0 ? '' : 'es'} used NTLM in the last day: ${list.join(', ')}${more > 0 ? `, and ${more} more` : ''}`,
    );
  }
  if (unknown !== undefined) {
    parts.push(
      `${unknown.handshakes} NTLM handshake${unknown.handshakes === 1 ? '' : 's'} from addresses not recorded (Squid's include predates key_extras: run \`doorman squid-conf\` again; or more addresses than authd counts at once)`,
    );
  }
  return { id, ok: true, status: 'note', title: TITLES[id], detail: `${parts.join('; ')}. ${why}`, fix };
}
