import { describe, expect, it } from 'vitest';
import { EXPLAIN_EXIT, explain, type Explanation } from '../../../../lib/explain/explain.ts';
import type { ExplainFacts } from '../../../../lib/explain/facts.ts';
import type { StepId } from '../../../../lib/explain/steps.ts';
import { facts, MIN, NOW, notIdentified, session } from '../../../support/explain-facts.ts';

const stepOf = (e: Explanation, id: StepId) => e.steps.find((s) => s.id === id);

describe('explain: the verdict', () => {
  it('an API session authd answers OK for: identified, exit 0, every step ok or not applicable', () => {
    const e = explain(facts());
    expect(e).toMatchObject({
      ip: '10.0.0.5',
      mac: null,
      at: '2026-06-01T09:00:00.000Z',
      verdict: 'identified',
      via: 'session',
      user: 'alice',
      decidingStep: null,
    });
    expect(e.summary).toBe('10.0.0.5 is identified as alice (a session on its address).');
    expect(e.steps.map((s) => [s.id, s.status])).toEqual([
      ['session', 'ok'],
      ['registration', 'not-applicable'],
      ['authd', 'ok'],
      ['groups', 'not-applicable'],
      ['squid-cache', 'ok'],
      ['icap', 'not-applicable'],
      ['seamless', 'not-applicable'],
    ]);
    expect(stepOf(e, 'session')?.found).toBe(
      'alice, from the login API, since 2026-06-01T08:30:00.000Z; last seen 2026-06-01T08:59:00.000Z; ' +
        'idle end 2026-06-01T09:09:00.000Z (limit 10 min); hard end 2026-06-01T10:00:00.000Z.',
    );
    expect(stepOf(e, 'authd')?.found).toContain('Asked "10.0.0.5 -" on /var/lib/doorman/run/session.sock');
    expect(stepOf(e, 'authd')?.found).toContain('OK user=alice (in <1 ms)');
    expect(EXPLAIN_EXIT[e.verdict]).toBe(0);
  });

  it('no session and authd ERR: not identified, the session step decides, the advice names the login API', () => {
    const e = explain(facts(notIdentified));
    expect(e).toMatchObject({ verdict: 'not-identified', via: null, user: null, decidingStep: 'session' });
    expect(stepOf(e, 'session')).toMatchObject({ status: 'fails', found: 'No session on 10.0.0.5.' });
    expect(stepOf(e, 'session')?.advice).toContain('POST https://proxy.example.test/api/login/');
    expect(stepOf(e, 'authd')?.found).toContain('ERR: no live session for this address.');
    expect(e.summary).toMatch(
      /^10\.0\.0\.5 is not identified: No session on 10\.0\.0\.5\. To do: log the user in/,
    );
    expect(EXPLAIN_EXIT[e.verdict]).toBe(1);
  });

  it('a session idle past its limit: the session step says when it ended and to log in again', () => {
    const idle = session({ lastSeen: NOW - 20 * MIN });
    const e = explain(facts({ ...notIdentified, session: idle }));
    expect(stepOf(e, 'session')?.status).toBe('fails');
    expect(stepOf(e, 'session')?.found).toContain(
      'but it was idle past its limit at 2026-06-01T08:50:00.000Z (by the stored last seen)',
    );
    expect(stepOf(e, 'session')?.advice).toMatch(/^the user must log in again/);
  });

  it('the store shows a live session but authd says ERR: authd says why it may differ', () => {
    const e = explain(
      facts({ authd: { ...(notIdentified.authd as object), result: 'ERR' } as ExplainFacts['authd'] }),
    );
    expect(stepOf(e, 'authd')?.found).toContain('though the store shows a live session');
    expect(e.verdict).toBe('not-identified');
  });

  it('authd down: the authd step fails and decides, with the command to start it', () => {
    const e = explain(
      facts({
        authd: {
          kind: 'unreachable',
          reason: 'no-socket',
          detail: '/s/run/session.sock: ENOENT',
          socket: '/s/run/session.sock',
        },
      }),
    );
    expect(e).toMatchObject({ verdict: 'not-identified', decidingStep: 'authd' });
    expect(stepOf(e, 'authd')?.found).toBe(
      "authd does not answer on /s/run/session.sock (no-socket: /s/run/session.sock: ENOENT): Squid's lookups fail, nobody is identified.",
    );
    expect(stepOf(e, 'authd')?.advice).toContain('systemctl start doorman-authd');
  });

  it('authd answers BH: the authd step decides and points at its log', () => {
    const authd = {
      ...(facts().authd as object),
      result: 'BH',
      user: undefined,
      message: 'session DB unavailable',
    };
    const e = explain(facts({ authd: authd as ExplainFacts['authd'] }));
    expect(e.decidingStep).toBe('authd');
    expect(stepOf(e, 'authd')?.found).toContain('BH (session DB unavailable)');
  });
});

describe('explain: the group rule', () => {
  const grouped = (lookup: ExplainFacts['groups']['lookup']) =>
    explain(facts({ groups: { allow: ['Staff', 'Teachers'], lookup } }));

  it('a member of an allowed group: ok, the groups listed', () => {
    const e = grouped({ kind: 'groups', user: 'alice', groups: ['Staff', 'All'], member: true });
    expect(e.verdict).toBe('identified');
    expect(stepOf(e, 'groups')).toMatchObject({
      status: 'ok',
      found: 'alice is in one of "Staff", "Teachers" (the user\'s groups: Staff, All).',
    });
  });

  it('outside every allowed group: not identified (Squid refuses), the group step decides and says how to fix it', () => {
    const e = grouped({ kind: 'groups', user: 'alice', groups: ['Students'], member: false });
    expect(e).toMatchObject({
      verdict: 'not-identified',
      decidingStep: 'groups',
      user: 'alice',
      via: 'session',
    });
    expect(stepOf(e, 'groups')?.found).toBe(
      'alice is in none of "Staff", "Teachers"; the user\'s groups: Students. Squid keeps a group answer 60 s (a refusal 60 s).',
    );
    expect(stepOf(e, 'groups')?.advice).toContain('doorman squid-conf');
    expect(e.summary).toMatch(/but Squid refuses it: alice is in none of/);
    expect(EXPLAIN_EXIT[e.verdict]).toBe(1);
  });

  it('an unknown user fails; a directory that does not answer is unknown (exit 2)', () => {
    expect(stepOf(grouped({ kind: 'unknown-user', user: 'alice' }), 'groups')?.status).toBe('fails');
    const e = grouped({ kind: 'failed', user: 'alice', detail: 'no answer within 2000 ms' });
    expect(e).toMatchObject({ verdict: 'unknown', decidingStep: 'groups' });
    expect(stepOf(e, 'groups')?.advice).toBe('run "doorman directory test"');
    expect(EXPLAIN_EXIT[e.verdict]).toBe(2);
    expect(grouped({ kind: 'no-directory', user: 'alice' }).verdict).toBe('unknown');
  });

  it('nobody identified: the rule is shown, nothing to check', () => {
    const e = explain(
      facts({ ...notIdentified, groups: { allow: ['Staff'], lookup: { kind: 'not-asked' } } }),
    );
    expect(stepOf(e, 'groups')).toMatchObject({
      status: 'not-applicable',
      found: 'Only "Staff" may browse; nobody is identified to check.',
    });
  });
});

describe("explain: Squid's caches", () => {
  it('a session younger than negativeTtl: Squid may answer from an earlier ERR until start + negativeTtl', () => {
    const young = session({ createdAt: NOW - 20_000, lastSeen: NOW - 20_000 });
    const e = explain(
      facts({ session: young, squid: { ttl: 5, negativeTtl: 60, groupsTtl: 60, groupsNegativeTtl: 60 } }),
    );
    expect(e).toMatchObject({ verdict: 'not-identified', decidingStep: 'squid-cache' });
    expect(stepOf(e, 'squid-cache')?.found).toBe(
      'Squid keeps an OK 5 s and an ERR 60 s before asking authd again. The session started at ' +
        '2026-06-01T08:59:40.000Z: Squid may answer from an earlier ERR until 2026-06-01T09:00:40.000Z.',
    );
    expect(stepOf(e, 'squid-cache')?.advice).toMatch(/^wait until 2026-06-01T09:00:40\.000Z/);
    expect(e.summary).toMatch(
      /^10\.0\.0\.5 is named alice \(a session on its address\), but Squid may still refuse it: /,
    );
  });

  it('past the window: ok, and when the earlier ERR ran out', () => {
    const e = explain(facts({ squid: { ttl: 5, negativeTtl: 60, groupsTtl: 60, groupsNegativeTtl: 60 } }));
    expect(stepOf(e, 'squid-cache')?.status).toBe('ok');
    expect(stepOf(e, 'squid-cache')?.found).toContain('any earlier ERR ran out at 2026-06-01T08:31:00.000Z');
    expect(e.verdict).toBe('identified');
  });

  it('not identified: how long an earlier OK may still be used', () => {
    const e = explain(facts(notIdentified));
    expect(stepOf(e, 'squid-cache')?.found).toContain('until 2026-06-01T09:00:05.000Z at the latest');
  });
});

describe('explain: Device Registration', () => {
  const registered = session({
    key: { kind: 'mac', value: '3a:48:7a:63:96:26' },
    source: 'registration',
    expiresAt: undefined,
    idleTimeoutMs: undefined,
  });

  it('a registered MAC found in the neighbour table, authd OK on it: identified via the registration', () => {
    const e = explain(
      facts({
        session: undefined,
        registration: registered,
        mac: { kind: 'found', mac: '3a:48:7a:63:96:26', source: 'neighbour-table' },
        portal: { mode: 'registration', registrationClearDate: '2026-07-01' },
        authd: { ...(facts().authd as object), asked: '10.0.0.5 3a:48:7a:63:96:26' } as ExplainFacts['authd'],
      }),
    );
    expect(e).toMatchObject({ verdict: 'identified', via: 'registration', mac: '3a:48:7a:63:96:26' });
    expect(stepOf(e, 'registration')?.found).toContain(
      '3a:48:7a:63:96:26 (from the neighbour table) is registered for alice, from a Device Registration',
    );
    expect(stepOf(e, 'registration')?.found).toContain('every registration is cleared on 2026-07-01');
    expect(stepOf(e, 'session')?.status).toBe('fails');
  });

  it('registration mode, MAC unknown: unknown, give it with --mac; the registration step decides', () => {
    const e = explain(
      facts({ ...notIdentified, portal: { mode: 'registration', registrationClearDate: null } }),
    );
    expect(stepOf(e, 'registration')).toMatchObject({
      status: 'unknown',
      advice: 'give it with --mac (or the MAC field on the Explain screen)',
    });
    expect(e.decidingStep).toBe('registration');
  });

  it('registration mode, no registration for the MAC: fails, register on the splash page', () => {
    const e = explain(
      facts({
        ...notIdentified,
        mac: { kind: 'given', mac: '3a:48:7a:63:96:26' },
        portal: { mode: 'registration', registrationClearDate: null },
        icap: { kind: 'decided', status: 302, location: 'https://proxy.example.test/portal/' },
      }),
    );
    expect(stepOf(e, 'registration')).toMatchObject({
      status: 'fails',
      found: 'No registration for 3a:48:7a:63:96:26 (as given); no clear date is set.',
      advice: 'register the device on the splash page (https://proxy.example.test/portal/)',
    });
    expect(stepOf(e, 'icap')).toMatchObject({ status: 'fails' });
    expect(stepOf(e, 'icap')?.found).toContain(
      'a 302 to the splash page (https://proxy.example.test/portal/)',
    );
  });
});

describe('explain: the ICAP decision', () => {
  it('portal off: not applicable; an identified client: not sent to ICAP', () => {
    expect(stepOf(explain(facts()), 'icap')?.status).toBe('not-applicable');
    const identified = explain(
      facts({
        portal: { mode: 'authentication', registrationClearDate: null },
        icap: { kind: 'decided', status: 'no-change', location: undefined },
      }),
    );
    expect(stepOf(identified, 'icap')?.found).toContain('this one is identified');
  });

  it('a 511 for an unidentified client fails; a walled-garden pass is ok', () => {
    const base = {
      ...notIdentified,
      portal: { mode: 'authentication' as const, registrationClearDate: null },
    };
    const e = explain(facts({ ...base, icap: { kind: 'decided', status: 511, location: undefined } }));
    expect(stepOf(e, 'icap')?.found).toContain('a 511 Network Authentication Required page');
    const pass = explain(
      facts({ ...base, icap: { kind: 'decided', status: 'no-change', location: undefined } }),
    );
    expect(stepOf(pass, 'icap')?.status).toBe('ok');
  });
});

describe('explain: seamless sign-on', () => {
  const enabled = (
    last: Extract<ExplainFacts['seamless'], { kind: 'enabled' }>['last'],
  ): Partial<ExplainFacts> => ({
    ...notIdentified,
    seamless: { kind: 'enabled', realm: 'EXAMPLE.TEST', last },
  });

  it('the last handshake signed the user in: identified via seamless sign-on', () => {
    const e = explain(
      facts(
        enabled({
          kind: 'result',
          result: { scheme: 'negotiate', outcome: 'OK', reason: undefined, user: 'bob', at: NOW - 5000 },
        }),
      ),
    );
    expect(e).toMatchObject({ verdict: 'identified', via: 'seamless', user: 'bob' });
    expect(stepOf(e, 'seamless')?.found).toBe('bob signed in by Negotiate at 2026-06-01T08:59:55.000Z.');
  });

  it('a clock skew: the seamless step fails, decides, and says to set the clock', () => {
    const e = explain(
      facts(
        enabled({
          kind: 'result',
          result: {
            scheme: 'negotiate',
            outcome: 'BH',
            reason: 'CLOCK_SKEW',
            user: undefined,
            at: NOW - 5000,
          },
        }),
      ),
    );
    expect(e).toMatchObject({ verdict: 'not-identified', decidingStep: 'seamless' });
    expect(stepOf(e, 'seamless')?.found).toBe(
      'The last handshake (Negotiate at 2026-06-01T08:59:55.000Z) ended in BH (CLOCK_SKEW).',
    );
    expect(stepOf(e, 'seamless')?.advice).toMatch(/^set the client's clock/);
  });

  it('no handshake seen, an older authd, authd unreachable: unknown, each with what to do', () => {
    expect(stepOf(explain(facts(enabled({ kind: 'none' }))), 'seamless')).toMatchObject({
      status: 'unknown',
    });
    const old = explain(facts(enabled({ kind: 'refused', message: 'not an IP address: "seamless-last"' })));
    expect(stepOf(old, 'seamless')?.advice).toContain('doorman authd restart');
    const down = explain(facts(enabled({ kind: 'unreachable', detail: 'ENOENT' })));
    expect(stepOf(down, 'seamless')?.status).toBe('unknown');
    const unread = explain(
      facts({ seamless: { kind: 'unknown', detail: 'the seamless settings could not be read: locked' } }),
    );
    expect(stepOf(unread, 'seamless')?.status).toBe('unknown');
  });
});
