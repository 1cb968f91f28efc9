import { describe, expect, it } from 'vitest';
import type { DoctorContext } from '../../../../../lib/seamless/doctor/check-result.ts';
import { firstNameserver, gatherFacts, type GatherIo } from '../../../../../lib/seamless/doctor/gather.ts';
import { httpKeytab } from '../keytab-fixtures.ts';

const CONTEXT: DoctorContext = {
  fqdn: 'proxy.example.test',
  realm: 'EXAMPLE.TEST',
  serverVersion: '2012',
  dc: '10.0.0.1',
  keytabPath: '/s/samba/http.keytab',
  privilegedPipeDir: '/s/samba/state/winbindd_privileged',
  helperGroup: 'proxy',
};

const errno = (code: string) => Object.assign(new Error(`query ${code}`), { code });

function io(overrides: Partial<GatherIo> = {}): GatherIo & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    nameserver: async () => '10.0.0.1',
    resolve4: async (server, name) => (asked.push(`A ${name} @${server}`), ['10.0.0.2', '192.0.2.9']),
    reverse: async (server, address) => (asked.push(`PTR ${address} @${server}`), ['proxy.example.test']),
    localAddresses: () => ['127.0.0.1', '10.0.0.2'],
    probe: async (_host, port) => (port === 445 ? 'ECONNREFUSED' : undefined),
    currentTime: async () => ({ currentTime: '20260101000000.0Z', localTime: Date.UTC(2026, 0, 1, 0, 0, 3) }),
    keyVersion: async () => ['2'],
    readFile: async () => httpKeytab(2),
    stat: async (path) => ({ mode: path.endsWith('keytab') ? 0o100640 : 0o040750, uid: 0, gid: 13 }),
    run: async (request) =>
      request.command === 'id'
        ? { code: 0, stdout: 'uid=13(proxy) gid=13(proxy) groups=13(proxy)\n', stderr: '' }
        : { code: 0, stdout: 'ok\n', stderr: '' },
    ...overrides,
  };
}

const input = { context: CONTEXT, machineName: 'PROXY', serviceUser: 'proxy', joined: true };

describe('gatherFacts', () => {
  it('asks the first nameserver, and the PTR only of this host’s own addresses', async () => {
    const shell = io();
    const facts = await gatherFacts(shell, input);
    expect(shell.asked).toEqual(['A proxy.example.test @10.0.0.1', 'PTR 10.0.0.2 @10.0.0.1']);
    expect(facts.dns.ptr).toEqual([
      { address: '10.0.0.2', answer: { ok: true, records: ['proxy.example.test'] } },
    ]);
    expect(facts.clock).toEqual({ offsetSeconds: -3, source: 'rootDSE currentTime' });
    expect(facts.ports).toContainEqual({ port: 445, outcome: 'refused', code: 'ECONNREFUSED' });
    expect(facts.dcKvno).toBe(2);
    expect(facts.helperUser).toMatchObject({ name: 'proxy', uid: 13, gids: [13] });
    expect(facts.winbind).toEqual({ running: true, trust: true });
  });

  it('turns DNS error codes into answers, and any other failure into an unavailable fact with its reason', async () => {
    const facts = await gatherFacts(
      io({
        reverse: async () => {
          throw errno('ENOTFOUND');
        },
        keyVersion: async () => {
          throw new Error('no computer account PROXY$ in DC=example,DC=test');
        },
        readFile: async () => {
          throw errno('EACCES');
        },
      }),
      input,
    );
    expect(facts.dns.ptr).toEqual([
      { address: '10.0.0.2', answer: { ok: false, failure: 'no-such-name', code: 'ENOTFOUND' } },
    ]);
    expect(facts.dcKvno).toEqual({ unavailable: 'no computer account PROXY$ in DC=example,DC=test' });
    expect(facts.keytab).toEqual({ unavailable: 'query EACCES' });
  });

  it('does not ask winbind before a join; says winbindd is down when it does not answer', async () => {
    expect((await gatherFacts(io(), { ...input, joined: false })).winbind).toEqual({
      unavailable: 'seamless authentication is not enabled (no join yet)',
    });
    const down = io({ run: async () => ({ code: 1, stdout: '', stderr: 'failed' }) });
    expect((await gatherFacts(down, input)).winbind).toEqual({ running: false });
  });

  it('reads the first nameserver line of resolv.conf', () => {
    expect(firstNameserver('# x\nsearch example.test\nnameserver 10.0.0.1\nnameserver 10.0.0.9\n')).toBe(
      '10.0.0.1',
    );
    expect(firstNameserver('search example.test\n')).toBeUndefined();
  });
});
