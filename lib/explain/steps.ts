import type { Session, SessionSource } from '../store/session.ts';
import type { ExplainFacts, GroupLookup } from './facts.ts';

/**
 * The seven questions `doorman explain` answers about a client, one function each, from the facts alone
 * (facts.ts): what was found, whether that step lets the client through, and when it is the step that fails,
 * what to do. Pure; every time comes from facts.now.
 */

export const StepIds = [
  'session',
  'registration',
  'authd',
  'groups',
  'squid-cache',
  'icap',
  'seamless',
] as const;
export type StepId = (typeof StepIds)[number];

export const StepStatuses = ['ok', 'fails', 'not-applicable', 'unknown'] as const;
export type StepStatus = (typeof StepStatuses)[number];

export interface ExplainStep {
  id: StepId;
  title: string;
  status: StepStatus;
  /** What was found, in a sentence or two. */
  found: string;
  /** What to do: a command or a screen; null when there is nothing to do here. */
  advice: string | null;
}

export const iso = (ms: number): string => new Date(ms).toISOString();

const SOURCE_WORDS: Record<SessionSource, string> = {
  api: 'the login API',
  portal: 'a sign-in on the splash page',
  registration: 'a Device Registration',
  agreement: 'the Usage Agreement',
};

/** One step's answer (advice only where there is something to do). */
export const step = (
  id: StepId,
  title: string,
  status: StepStatus,
  found: string,
  advice: string | null = null,
): ExplainStep => ({
  id,
  title,
  status,
  found,
  advice,
});

/**
 * Why a stored session does not identify the client now, or undefined when it does (as far as the store
 * tells).
 */
export function sessionEnd(session: Session, now: number, clientMac: string | undefined): string | undefined {
  if (session.expiresAt !== undefined && session.expiresAt <= now)
    return `it ended at ${iso(session.expiresAt)}`;
  if (session.idleTimeoutMs !== undefined && now - session.lastSeen > session.idleTimeoutMs)
    return `it was idle past its limit at ${iso(session.lastSeen + session.idleTimeoutMs)} (by the stored last seen)`;
  if (session.mac !== undefined && clientMac !== undefined && session.mac !== clientMac)
    return `it binds the address to the device ${session.mac}, and this client is ${clientMac}`;
  return undefined;
}

/** One session's times: since, last seen, its idle and hard ends. */
export function describeSession(session: Session): string {
  const idle =
    session.idleTimeoutMs === undefined
      ? 'no idle limit'
      : `idle end ${iso(session.lastSeen + session.idleTimeoutMs)} (limit ${Math.round(session.idleTimeoutMs / 60_000)} min)`;
  const hard = session.expiresAt === undefined ? 'no hard end' : `hard end ${iso(session.expiresAt)}`;
  return (
    `${session.username}, from ${SOURCE_WORDS[session.source]}, since ${iso(session.createdAt)}; ` +
    `last seen ${iso(session.lastSeen)}; ${idle}; ${hard}`
  );
}

export const clientMacOf = (facts: Pick<ExplainFacts, 'mac'>): string | undefined =>
  facts.mac.kind === 'none' ? undefined : facts.mac.mac;

/** The ways in an unidentified client has, for the advice. */
export function signInAdvice(facts: ExplainFacts): string {
  const portal = `${facts.baseUrl}portal/`;
  switch (facts.portal.mode) {
    case 'registration':
      return `register the device on the splash page (${portal}), or log the user in through the login API (POST ${facts.baseUrl}api/login/)`;
    case 'authentication':
      return `sign in on the splash page (${portal}: any web page opened from the device leads there), or through the login API (POST ${facts.baseUrl}api/login/)`;
    case 'agreement':
      return `accept the Usage Agreement on the splash page (${portal}); the address must be in an active Device Group`;
    case 'off':
      return `log the user in through the login API (POST ${facts.baseUrl}api/login/), or turn the captive portal on (admin screen Captive portal)`;
  }
}

export function sessionStep(facts: ExplainFacts): ExplainStep {
  const title = 'Session on the address';
  const { session } = facts;
  if (session === undefined)
    return step('session', title, 'fails', `No session on ${facts.ip}.`, signInAdvice(facts));
  const ended = sessionEnd(session, facts.now, clientMacOf(facts));
  if (ended !== undefined)
    return step(
      'session',
      title,
      'fails',
      `A session of ${describeSession(session)}; but ${ended}.`,
      `the user must log in again: ${signInAdvice(facts)}`,
    );
  return step('session', title, 'ok', `${describeSession(session)}.`);
}

export function registrationStep(facts: ExplainFacts): ExplainStep {
  const title = 'Device Registration of its MAC';
  const registering = facts.portal.mode === 'registration';
  const clear =
    facts.portal.registrationClearDate === null
      ? 'no clear date is set'
      : `every registration is cleared on ${facts.portal.registrationClearDate}`;
  if (facts.mac.kind === 'none') {
    if (!registering)
      return step(
        'registration',
        title,
        'not-applicable',
        `No MAC known (${facts.mac.message}); the portal is not in Device Registration mode.`,
      );
    return step(
      'registration',
      title,
      'unknown',
      `The client's MAC is not known here: ${facts.mac.message}.`,
      'give it with --mac (or the MAC field on the Explain screen)',
    );
  }
  const how =
    facts.mac.kind === 'given'
      ? 'as given'
      : `from ${facts.mac.source === 'squid' ? 'Squid' : 'the neighbour table'}`;
  const { registration } = facts;
  if (registration === undefined)
    return step(
      'registration',
      title,
      registering ? 'fails' : 'not-applicable',
      `No registration for ${facts.mac.mac} (${how}); ${clear}.`,
      registering ? `register the device on the splash page (${facts.baseUrl}portal/)` : null,
    );
  const ended = sessionEnd(registration, facts.now, undefined);
  if (ended !== undefined)
    return step(
      'registration',
      title,
      'fails',
      `${facts.mac.mac} (${how}) was registered for ${describeSession(registration)}; but ${ended}.`,
      `register the device again on the splash page (${facts.baseUrl}portal/)`,
    );
  const v6 = facts.ip.includes(':')
    ? ' Squid gives no MAC for an IPv6 client: the registration counts once the ICAP service has bound the address to it (step 6).'
    : '';
  return step(
    'registration',
    title,
    'ok',
    `${facts.mac.mac} (${how}) is registered for ${describeSession(registration)}; ${clear}.${v6}`,
  );
}

export function authdStep(facts: ExplainFacts): ExplainStep {
  const title = 'What authd answers Squid';
  const { authd } = facts;
  if (authd.kind === 'unreachable')
    return step(
      'authd',
      title,
      'fails',
      `authd does not answer on ${authd.socket} (${authd.reason}: ${authd.detail}): Squid's lookups fail, nobody is identified.`,
      'see "doorman authd status"; start it with "systemctl start doorman-authd" (or "doorman authd start"), and read its log (journalctl -u doorman-authd)',
    );
  const asked = `Asked "${authd.asked}" on ${authd.socket} as Squid's helper would`;
  const ms = `${authd.ms < 1 ? '<1' : Math.round(authd.ms)} ms`;
  if (authd.result === 'OK')
    return step('authd', title, 'ok', `${asked}: OK user=${authd.user ?? ''} (in ${ms}).`);
  if (authd.result === 'BH')
    return step(
      'authd',
      title,
      'fails',
      `${asked}: BH (${authd.message ?? 'no message'}): authd cannot read the sessions.`,
      'read authd\'s log (journalctl -u doorman-authd) and "doorman store status"',
    );
  const session =
    facts.session !== undefined && sessionEnd(facts.session, facts.now, clientMacOf(facts)) === undefined;
  return step(
    'authd',
    title,
    'fails',
    session
      ? `${asked}: ERR, though the store shows a live session: authd has seen it idle past its limit (its last-seen times are newer than the store's), or the session is too new for this box's copy.`
      : `${asked}: ERR: no live session for this address${facts.mac.kind === 'none' ? '' : ' or its MAC'}.`,
    session ? `log in again: ${signInAdvice(facts)}` : signInAdvice(facts),
  );
}

/** Who the group rule is checked for: the user authd names, else the one seamless sign-on last named. */
export function identifiedUser(facts: Pick<ExplainFacts, 'authd' | 'seamless'>): string | undefined {
  if (facts.authd.kind === 'answered' && facts.authd.result === 'OK' && facts.authd.user !== undefined)
    return facts.authd.user;
  const last = facts.seamless.kind === 'enabled' ? facts.seamless.last : undefined;
  return last?.kind === 'result' && last.result.outcome === 'OK' ? last.result.user : undefined;
}

export function groupsStep(facts: ExplainFacts): ExplainStep {
  const title = 'The group rule (squid.groups.allow)';
  const { allow, lookup } = facts.groups;
  const rule = allow.map((g) => `"${g}"`).join(', ');
  const cached = `Squid keeps a group answer ${facts.squid.groupsTtl} s (a refusal ${facts.squid.groupsNegativeTtl} s).`;
  if (allow.length === 0)
    return step(
      'groups',
      title,
      'not-applicable',
      'squid.groups.allow is empty: any identified user passes.',
    );
  return groupVerdict(lookup, rule, cached, title);
}

function groupVerdict(lookup: GroupLookup, rule: string, cached: string, title: string): ExplainStep {
  switch (lookup.kind) {
    case 'not-asked':
      return step(
        'groups',
        title,
        'not-applicable',
        `Only ${rule} may browse; nobody is identified to check.`,
      );
    case 'groups': {
      const list = lookup.groups.length === 0 ? 'none' : lookup.groups.join(', ');
      if (lookup.member)
        return step(
          'groups',
          title,
          'ok',
          `${lookup.user} is in one of ${rule} (the user's groups: ${list}).`,
        );
      return step(
        'groups',
        title,
        'fails',
        `${lookup.user} is in none of ${rule}; the user's groups: ${list}. ${cached}`,
        `add ${lookup.user} to one of ${rule} in the directory, or add one of the user's groups to squid.groups.allow and run "doorman squid-conf" (then reload Squid)`,
      );
    }
    case 'unknown-user':
      return step(
        'groups',
        title,
        'fails',
        `The directory has no user ${lookup.user}: Squid's group check answers ERR. ${cached}`,
        'log in with the user\'s directory login name (the login API\'s username), or check the directory settings ("doorman directory test")',
      );
    case 'no-directory':
      return step(
        'groups',
        title,
        'unknown',
        `Only ${rule} may browse, but no directory is applied to look ${lookup.user} up.`,
        'apply one ("doorman directory set", or the admin screen Directory), or empty squid.groups.allow',
      );
    case 'failed':
      return step(
        'groups',
        title,
        'unknown',
        `The directory could not be asked for ${lookup.user}'s groups (${lookup.detail}); Squid's group check would answer BH now. ${cached}`,
        'run "doorman directory test"',
      );
  }
}
