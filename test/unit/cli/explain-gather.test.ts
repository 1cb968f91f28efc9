import { EXPLAIN_LOOKUP_WORD } from '../../../lib/helper-protocol/explain-lookup.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { gatherFacts, type GatherDeps } from '../../../cli/explain-gather.ts';
import type { AskResult } from '../../../helpers/authd/ask.ts';
import { ManualClock } from '../../../lib/clock.ts';
import { configSchema, type ConfigInput } from '../../../lib/config/schema.ts';
import { openDatabase } from '../../../lib/store/database.ts';
import { openSqliteStore } from '../../../lib/store/sqlite-store.ts';
import type { Store } from '../../../lib/store/store.ts';

/**
 * The gathering with a real SQLite store and authd's socket stood in for: what is asked of authd (Squid's own
 * lookup, the MAC only for IPv4), and how each outside party's answer or silence becomes a fact.
 */
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

const MAC = '3a:48:7a:63:96:26';

function setUp(answers: Record<string, AskResult>, config: ConfigInput = {}) {
  const clock = new ManualClock();
  store = openSqliteStore(openDatabase(':memory:'), {
    clock,
    passwordFile: '/nonexistent/directory-bind-password',
    directoryApplied: () => false,
  });
  const asked: string[] = [];
  const deps: GatherDeps = {
    config: configSchema.parse({ stateDir: '/srv/doorman', ...config }),
    store,
    clock,
    log: () => {},
    seamlessRealm: () => undefined,
    findMac: (ip) =>
      Promise.resolve({ ok: true, ip, mac: MAC, locallyAdministered: false, source: 'neighbour-table' }),
    ask: (socket, line) => {
      asked.push(`${socket} ${line}`);
      // The address, or the query's word (seamless-last).
      const [, first = '', second = ''] = line.split(' ');
      const word = first === EXPLAIN_LOOKUP_WORD ? second : first;
      return Promise.resolve(answers[word] ?? { ok: true, ms: 1, answer: '0 ERR' });
    },
  };
  return { deps, asked, store, clock };
}

describe('gatherFacts', () => {
  it("asks authd Squid's lookup on the session socket: the MAC beside an IPv4 address, none for IPv6", async () => {
    const { deps, asked } = setUp({});
    const v4 = await gatherFacts({ ip: '10.0.0.5', mac: undefined }, deps);
    await gatherFacts({ ip: '2001:db8::5', mac: undefined }, deps);
    expect(asked).toEqual([
      `/srv/doorman/run/session.sock 0 explain-lookup 10.0.0.5 ${MAC}\n`,
      '/srv/doorman/run/session.sock 0 explain-lookup 2001:db8::5 -\n',
    ]);
    expect(v4.mac).toEqual({ kind: 'found', mac: MAC, source: 'neighbour-table' });
    expect(v4.authd).toMatchObject({ kind: 'answered', result: 'ERR', asked: `10.0.0.5 ${MAC}` });
    expect(v4.icap).toEqual({ kind: 'off' });
    expect(v4.seamless).toEqual({ kind: 'not-enabled' });
    expect(v4.groups).toEqual({ allow: [], lookup: { kind: 'not-asked' } });
  });

  it('reads the session on the IP and the registration on the MAC from the store', async () => {
    const { deps, store: s } = setUp({
      '10.0.0.5': { ok: true, ms: 1, answer: '0 OK user=al%20ice' },
    });
    await s.sessions.start({ key: { kind: 'ip', value: '10.0.0.5' }, username: 'al ice', source: 'api' });
    await s.sessions.start({ key: { kind: 'mac', value: MAC }, username: 'bob', source: 'registration' });
    const facts = await gatherFacts({ ip: '10.0.0.5', mac: MAC }, deps);
    expect(facts.mac).toEqual({ kind: 'given', mac: MAC });
    expect(facts.session?.username).toBe('al ice');
    expect(facts.registration?.username).toBe('bob');
    expect(facts.authd).toMatchObject({ kind: 'answered', result: 'OK', user: 'al ice' });
  });

  it('authd silent: a fact saying so, not an exception', async () => {
    const { deps } = setUp({
      '10.0.0.5': { ok: false, reason: 'timeout', detail: 'no answer within 2000 ms' },
    });
    const facts = await gatherFacts({ ip: '10.0.0.5', mac: undefined }, deps);
    expect(facts.authd).toEqual({
      kind: 'unreachable',
      reason: 'timeout',
      detail: 'no answer within 2000 ms',
      socket: '/srv/doorman/run/session.sock',
    });
  });

  it('seamless joined: the last result is asked of authd; an unreadable state is a fact too', async () => {
    const { deps, asked } = setUp({
      'seamless-last': {
        ok: true,
        ms: 1,
        answer: '0 OK scheme=ntlm outcome=ERR reason=NT_STATUS_LOGON_FAILURE at=5',
      },
    });
    const facts = await gatherFacts(
      { ip: '10.0.0.5', mac: undefined },
      { ...deps, seamlessRealm: () => 'EXAMPLE.TEST' },
    );
    expect(asked).toContain('/srv/doorman/run/session.sock 0 seamless-last 10.0.0.5\n');
    expect(facts.seamless).toEqual({
      kind: 'enabled',
      realm: 'EXAMPLE.TEST',
      last: {
        kind: 'result',
        result: { scheme: 'ntlm', outcome: 'ERR', reason: 'NT_STATUS_LOGON_FAILURE', user: undefined, at: 5 },
      },
    });
    const locked = await gatherFacts(
      { ip: '10.0.0.5', mac: undefined },
      {
        ...deps,
        seamlessRealm: () => {
          throw new Error('database is locked');
        },
      },
    );
    expect(locked.seamless).toEqual({
      kind: 'unknown',
      detail: 'the seamless settings could not be read: database is locked',
    });
  });

  it('a group rule and an identified user, with no directory applied: no-directory', async () => {
    const { deps } = setUp(
      { '10.0.0.5': { ok: true, ms: 1, answer: '0 OK user=alice' } },
      { squid: { groups: { allow: ['Staff'] } } },
    );
    const facts = await gatherFacts({ ip: '10.0.0.5', mac: undefined }, deps);
    expect(facts.groups).toEqual({ allow: ['Staff'], lookup: { kind: 'no-directory', user: 'alice' } });
  });
});
