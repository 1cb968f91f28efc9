import type { SeamlessResult } from '../seamless/last-results.ts';
import type { ExplainFacts } from './facts.ts';
import { clientMacOf, iso, sessionEnd, signInAdvice, step, type ExplainStep } from './steps.ts';

/** Steps 5 to 7: Squid's caches, the ICAP decision, seamless sign-on (see steps.ts). Pure. */

export const authdOk = (facts: Pick<ExplainFacts, 'authd'>): boolean =>
  facts.authd.kind === 'answered' && facts.authd.result === 'OK';

/** The session authd's OK stands on: the one on the IP if the store shows it live, else the registration. */
function standingSession(facts: ExplainFacts) {
  const { session, registration } = facts;
  if (session !== undefined && sessionEnd(session, facts.now, clientMacOf(facts)) === undefined)
    return session;
  if (registration !== undefined && sessionEnd(registration, facts.now, undefined) === undefined)
    return registration;
  return undefined;
}

export function squidCacheStep(facts: ExplainFacts): ExplainStep {
  const title = "Squid's cached answers (squid.ttl, negativeTtl)";
  const { ttl, negativeTtl } = facts.squid;
  const keeps = `Squid keeps an OK ${ttl} s and an ERR ${negativeTtl} s before asking authd again.`;
  if (!authdOk(facts))
    return step(
      'squid-cache',
      title,
      'not-applicable',
      `${keeps} An OK given before the session ended may still be used until ${iso(facts.now + ttl * 1000)} at the latest; after a login, the client waits up to ${negativeTtl} s.`,
    );
  const standing = standingSession(facts);
  if (standing === undefined || negativeTtl === 0)
    return step('squid-cache', title, 'ok', `${keeps} No earlier refusal can be in use now.`);
  const until = standing.createdAt + negativeTtl * 1000;
  if (facts.now < until)
    return step(
      'squid-cache',
      title,
      'fails',
      `${keeps} The session started at ${iso(standing.createdAt)}: Squid may answer from an earlier ERR until ${iso(until)}.`,
      `wait until ${iso(until)}; to shorten this for every login, lower squid.negativeTtl and run "doorman squid-conf" (then reload Squid)`,
    );
  return step(
    'squid-cache',
    title,
    'ok',
    `${keeps} The session started at ${iso(standing.createdAt)}, so any earlier ERR ran out at ${iso(until)}.`,
  );
}

export function icapStep(facts: ExplainFacts): ExplainStep {
  const title = 'What the ICAP service decides for an intercepted page load';
  const { icap } = facts;
  if (icap.kind === 'off')
    return step(
      'icap',
      title,
      'not-applicable',
      'The captive portal is off: ICAP passes every request unchanged.',
    );
  if (icap.kind === 'failed')
    return step(
      'icap',
      title,
      'unknown',
      `The decision could not be made: ${icap.detail}.`,
      'see "doorman portal show" and serve\'s log',
    );
  if (authdOk(facts))
    return step(
      'icap',
      title,
      'not-applicable',
      "Squid sends only unidentified clients' intercepted requests to ICAP; this one is identified (step 3).",
    );
  if (icap.status === 'no-change')
    return step(
      'icap',
      title,
      'ok',
      'An intercepted page load (GET http://example.com/) goes through unchanged.',
    );
  const what =
    icap.status === 302
      ? `a 302 to the splash page (${icap.location ?? 'no Location'})`
      : `a ${icap.status} Network Authentication Required page`;
  return step(
    'icap',
    title,
    'fails',
    `An intercepted page load (GET http://example.com/) gets ${what}: the client is sent to the portal.`,
    signInAdvice(facts),
  );
}

/** What to do about a failed seamless sign-on, by its reason code. */
export function seamlessAdvice(result: SeamlessResult): string {
  const doctor = 'run "doorman seamless doctor" (or the Enable seamless screen\'s doctor)';
  switch (result.reason) {
    case 'CLOCK_SKEW':
      return "set the client's clock: it must be within 5 minutes of the proxy's (both from the domain's time source)";
    case 'REPLAY':
      return "the same ticket was seen twice: retry; if it persists, check that no other host shares the proxy's keys";
    case 'WRONG_PRINCIPAL':
      return `the browser asked for a ticket for a name the proxy was not joined under: configure the proxy by the name it joined as; ${doctor}`;
    case 'EXPIRED':
      return 'the user\'s ticket has expired: log off and on again on the client (or "klist purge")';
    case 'KEYTAB':
      return `the proxy's keys do not match the domain's: ${doctor}, and repair`;
    case 'FOREIGN_REALM':
    case 'FOREIGN_DOMAIN':
      return "the user is of another domain than the proxy's: only users of the joined domain sign on seamlessly";
    case 'NT_STATUS_LOGON_FAILURE':
    case 'NT_STATUS_WRONG_PASSWORD':
      return "the domain refused the user's NTLM credentials: log off and on again with the right password";
    default:
      return `${doctor}; authd's log (journalctl -u doorman-authd) has the full message`;
  }
}

export function seamlessStep(facts: ExplainFacts): ExplainStep {
  const title = 'Seamless sign-on (Kerberos, NTLM)';
  const { seamless } = facts;
  if (seamless.kind === 'not-enabled')
    return step('seamless', title, 'not-applicable', 'Seamless sign-on is not enabled on this proxy.');
  if (seamless.kind === 'unknown')
    return step('seamless', title, 'unknown', `${seamless.detail}.`, 'see "doorman seamless status"');
  const { last } = seamless;
  switch (last.kind) {
    case 'unreachable':
      return step(
        'seamless',
        title,
        'unknown',
        `authd could not be asked (${last.detail}).`,
        'see "doorman authd status"',
      );
    case 'refused':
    case 'malformed':
      return step(
        'seamless',
        title,
        'unknown',
        `authd did not answer the question (${last.kind === 'refused' ? last.message : last.line}): an authd older than this command?`,
        'restart authd on the installed version ("doorman authd restart" or "systemctl restart doorman-authd")',
      );
    case 'none':
      return step(
        'seamless',
        title,
        authdOk(facts) ? 'not-applicable' : 'unknown',
        `No Negotiate or NTLM handshake from ${facts.ip} since authd started (joined to ${seamless.realm}).`,
        authdOk(facts)
          ? null
          : 'the browser must name the proxy by its host name (not its address) and trust it (intranet zone); run "doorman seamless doctor"',
      );
    case 'result': {
      const r = last.result;
      const how = `${r.scheme === 'negotiate' ? 'Negotiate' : 'NTLM'} at ${iso(r.at)}`;
      if (r.outcome === 'OK') return step('seamless', title, 'ok', `${r.user ?? '?'} signed in by ${how}.`);
      return step(
        'seamless',
        title,
        'fails',
        `The last handshake (${how}) ended in ${r.outcome}${r.reason === undefined ? '' : ` (${r.reason})`}.`,
        seamlessAdvice(r),
      );
    }
  }
}
