import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { execIp, findMac, type IpResult, type IpRunner } from '../../../../lib/net/find-mac.ts';
import { MacLookupCache } from '../../../../lib/net/mac-lookup-cache.ts';
import {
  CLIENT_MAC,
  NEIGH_TO_FAILED,
  NEIGH_TO_IPV4,
  NEIGH_TO_IPV6,
  NEIGH_TO_NOTHING,
  NEIGH_TO_ZERO,
  ROUTE_ERR_NO_ROUTE,
  ROUTE_LOCAL,
  ROUTE_ON_LINK_IPV6,
  ROUTE_VIA_GATEWAY,
} from './neighbour-fixtures.ts';

const ok = (stdout: string): IpResult => ({ code: 0, stdout, stderr: '' });

/** A runner that answers from a table of argument lines, and records every call. */
function fakeIp(answers: Record<string, IpResult | Error>): IpRunner & { calls: string[] } {
  const calls: string[] = [];
  const run = (args: readonly string[]) => {
    const line = args.join(' ');
    calls.push(line);
    const answer = answers[line];
    if (answer === undefined) return Promise.reject(new Error(`unexpected: ip ${line}`));
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  };
  return Object.assign(run, { calls });
}

describe('findMac', () => {
  it('reads an IPv4 client’s MAC from the neighbour table, without a shell or a prefix', async () => {
    const run = fakeIp({ '-json neigh show to 10.250.7.2': ok(NEIGH_TO_IPV4) });
    expect(await findMac('10.250.7.2', { run })).toEqual({
      ok: true,
      ip: '10.250.7.2',
      mac: CLIENT_MAC,
      locallyAdministered: true,
      source: 'neighbour-table',
      dev: 'nbc-h',
    });
    expect(run.calls).toEqual(['-json neigh show to 10.250.7.2']);
  });

  it('looks the normalised address up (IPv4-mapped, IPv6 spelling)', async () => {
    const run = fakeIp({
      '-json neigh show to 10.250.7.2': ok(NEIGH_TO_IPV4),
      '-json neigh show to fd57::2': ok(NEIGH_TO_IPV6),
    });
    expect(await findMac('::ffff:10.250.7.2', { run })).toMatchObject({ ok: true, ip: '10.250.7.2' });
    expect(await findMac('FD57:0:0::2', { run })).toMatchObject({ ok: true, ip: 'fd57::2', mac: CLIENT_MAC });
  });

  it('uses a real MAC Squid gave for an IPv4 client, without running ip', async () => {
    const run = fakeIp({});
    expect(await findMac('10.250.7.2', { run, squidEui: '3c:22:fb:12:34:56' })).toEqual({
      ok: true,
      ip: '10.250.7.2',
      mac: '3c:22:fb:12:34:56',
      locallyAdministered: false,
      source: 'squid',
    });
    expect(run.calls).toEqual([]);
  });

  it.each(['-', '00:00:00:00:00:00'])(
    'reads the table when Squid gave %s for an IPv4 client',
    async (eui) => {
      const run = fakeIp({ '-json neigh show to 10.250.7.2': ok(NEIGH_TO_IPV4) });
      expect(await findMac('10.250.7.2', { run, squidEui: eui })).toMatchObject({
        ok: true,
        mac: CLIENT_MAC,
        source: 'neighbour-table',
      });
    },
  );

  it.each(['00-00-00-00-00-00-00-00', 'ac-bf-73-ff-fe-0d-2f-93', '3c:22:fb:12:34:56'])(
    'reads the table for an IPv6 client whatever Squid gave (%s)',
    async (eui) => {
      const run = fakeIp({ '-json neigh show to fd57::2': ok(NEIGH_TO_IPV6) });
      expect(await findMac('fd57::2', { run, squidEui: eui })).toMatchObject({
        ok: true,
        mac: CLIENT_MAC,
        source: 'neighbour-table',
      });
      expect(run.calls).toEqual(['-json neigh show to fd57::2']);
    },
  );

  it('answers invalid-address for something that is no address, without running ip', async () => {
    const run = fakeIp({});
    for (const input of ['', '-n', '10.0.0.0/24', 'fe80::1%eth0', '10.0.0.5 ; reboot']) {
      expect(await findMac(input, { run })).toMatchObject({ ok: false, reason: 'invalid-address' });
    }
    expect(run.calls).toEqual([]);
  });

  it('asks the route when there is no entry: a routed client is not-on-link', async () => {
    const run = fakeIp({
      '-json neigh show to 203.0.113.5': ok(NEIGH_TO_NOTHING),
      '-json route get 203.0.113.5': ok(ROUTE_VIA_GATEWAY),
    });
    const answer = await findMac('203.0.113.5', { run, squidEui: '00:00:00:00:00:00' });
    expect(answer).toMatchObject({ ok: false, reason: 'not-on-link' });
    expect(answer.ok ? '' : answer.message).toContain('reached through router 192.0.2.1 (on "eth0")');
    expect(run.calls).toEqual(['-json neigh show to 203.0.113.5', '-json route get 203.0.113.5']);
  });

  it('an on-link address without an entry is no-entry', async () => {
    const run = fakeIp({
      '-json neigh show to fd57::99': ok(NEIGH_TO_NOTHING),
      '-json route get fd57::99': ok(ROUTE_ON_LINK_IPV6),
    });
    expect(await findMac('fd57::99', { run })).toMatchObject({ ok: false, reason: 'no-entry' });
  });

  it('this host’s own address is local', async () => {
    const run = fakeIp({
      '-json neigh show to 127.0.0.1': ok(NEIGH_TO_NOTHING),
      '-json route get 127.0.0.1': ok(ROUTE_LOCAL),
    });
    expect(await findMac('127.0.0.1', { run })).toMatchObject({ ok: false, reason: 'local' });
  });

  it('a failing route get (no route) is not-on-link, with ip’s words', async () => {
    const run = fakeIp({
      '-json neigh show to 198.51.100.5': ok(NEIGH_TO_NOTHING),
      '-json route get 198.51.100.5': { code: 2, stdout: '', stderr: ROUTE_ERR_NO_ROUTE },
    });
    expect(await findMac('198.51.100.5', { run })).toEqual({
      ok: false,
      reason: 'not-on-link',
      message:
        '198.51.100.5 is not on any network this host is attached to (RTNETLINK answers: No route to host), so ' +
        'its MAC address cannot be known here',
    });
  });

  it('does not ask the route when there is an entry, usable or not', async () => {
    const run = fakeIp({
      '-json neigh show to fd57::99': ok(NEIGH_TO_FAILED),
      '-json neigh show to fd57::5': ok(NEIGH_TO_ZERO),
    });
    expect(await findMac('fd57::99', { run })).toMatchObject({ ok: false, reason: 'no-entry' });
    expect(await findMac('fd57::5', { run })).toMatchObject({ ok: false, reason: 'no-mac' });
    expect(run.calls).toEqual(['-json neigh show to fd57::99', '-json neigh show to fd57::5']);
  });

  it('answers lookup-failed, saying why, when ip fails, cannot run, or prints something unreadable', async () => {
    const cases: [IpResult | Error, string][] = [
      [new Error('ip -json neigh show to 10.0.0.5: timed out after 2000 ms'), 'timed out after 2000 ms'],
      [
        { code: 1, stdout: '', stderr: 'Error: any valid prefix is expected\nmore\n' },
        'exited with 1: Error: any valid prefix is expected',
      ],
      [{ code: 255, stdout: '', stderr: '' }, 'ip neigh show exited with 255'],
      [ok('10.0.0.5 dev lan0 lladdr 16:b8:30:8a:3a:08 REACHABLE'), 'is not JSON'],
    ];
    for (const [answer, why] of cases) {
      const result = await findMac('10.0.0.5', { run: fakeIp({ '-json neigh show to 10.0.0.5': answer }) });
      expect(result).toMatchObject({ ok: false, reason: 'lookup-failed' });
      expect(result.ok ? '' : result.message).toMatch(/^could not read the kernel's neighbour table: /);
      expect(result.ok ? '' : result.message).toContain(why);
    }
  });

  it('answers lookup-failed when the route cannot be read', async () => {
    const run = fakeIp({
      '-json neigh show to 10.0.0.5': ok(NEIGH_TO_NOTHING),
      '-json route get 10.0.0.5': ok('garbage'),
    });
    expect(await findMac('10.0.0.5', { run })).toMatchObject({ ok: false, reason: 'lookup-failed' });
  });

  it('shows ip’s stderr with control characters made visible and bounded', async () => {
    const run = fakeIp({
      '-json neigh show to 10.0.0.5': { code: 1, stdout: '', stderr: `\u001b[31m${'e'.repeat(500)}` },
    });
    const answer = await findMac('10.0.0.5', { run });
    const message = answer.ok ? '' : answer.message;
    expect(message).not.toContain('\u001b');
    expect(message).toContain('\\u001b[31m');
    expect(message.length).toBeLessThan(300);
  });

  it('a runner that throws instead of rejecting is a lookup failure, not a rejection', async () => {
    const run: IpRunner = () => {
      throw new Error('spawn EAGAIN');
    };
    expect(await findMac('10.0.0.5', { run })).toEqual({
      ok: false,
      reason: 'lookup-failed',
      message: "could not read the kernel's neighbour table: spawn EAGAIN",
    });
  });
});

describe('findMac with a cache', () => {
  it('shares one lookup between concurrent callers and reuses it until it expires', async () => {
    const clock = new ManualClock();
    const cache = new MacLookupCache({ clock, ttlMs: 2000 });
    const run = fakeIp({ '-json neigh show to 10.250.7.2': ok(NEIGH_TO_IPV4) });
    const [a, b] = await Promise.all([
      findMac('10.250.7.2', { run, cache }),
      findMac('10.250.7.2', { run, cache }),
    ]);
    expect(a).toEqual(b);
    expect(run.calls).toHaveLength(1);
    clock.advance(1999);
    await findMac('10.250.7.2', { run, cache });
    expect(run.calls).toHaveLength(1);
    clock.advance(1);
    await findMac('10.250.7.2', { run, cache });
    expect(run.calls).toHaveLength(2);
  });

  it('remembers a miss (a routed client) but not a lookup failure', async () => {
    const clock = new ManualClock();
    const cache = new MacLookupCache({ clock });
    const routed = fakeIp({
      '-json neigh show to 203.0.113.5': ok(NEIGH_TO_NOTHING),
      '-json route get 203.0.113.5': ok(ROUTE_VIA_GATEWAY),
    });
    await findMac('203.0.113.5', { run: routed, cache });
    await findMac('203.0.113.5', { run: routed, cache });
    expect(routed.calls).toHaveLength(2); // one neigh, one route: the second lookup was remembered

    const failing = fakeIp({ '-json neigh show to 10.0.0.5': new Error('timed out') });
    await findMac('10.0.0.5', { run: failing, cache });
    await findMac('10.0.0.5', { run: failing, cache });
    expect(failing.calls).toHaveLength(2);
  });

  it('does not cache what Squid gave (no lookup was made)', async () => {
    const cache = new MacLookupCache({ clock: new ManualClock() });
    await findMac('10.250.7.2', { run: fakeIp({}), cache, squidEui: '3c:22:fb:12:34:56' });
    expect(cache.size).toBe(0);
  });
});

describe('execIp', () => {
  // A stand-in command, so that exit codes, timeouts and caps are checked without depending on ip.
  const sh = (options: Parameters<typeof execIp>[0] = {}) => execIp({ command: 'sh', ...options });

  it('resolves with the output of a command that succeeds', async () => {
    expect(await sh()(['-c', 'echo "[]"; echo warn >&2'])).toEqual({
      code: 0,
      stdout: '[]\n',
      stderr: 'warn\n',
    });
  });

  it('resolves with the exit code and stderr of a command that fails', async () => {
    expect(await sh()(['-c', 'echo "RTNETLINK answers: No route to host" >&2; exit 2'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'RTNETLINK answers: No route to host\n',
    });
  });

  it('passes arguments without a shell', async () => {
    const answer = await execIp({ command: 'printf' })(['%s|', '$(id)', 'a b', ';']);
    expect(answer.stdout).toBe('$(id)|a b|;|');
  });

  it('rejects, saying so, when the command runs past its timeout', async () => {
    await expect(sh({ timeoutMs: 50 })(['-c', 'exec sleep 30'])).rejects.toThrow(
      'sh -c exec sleep 30: timed out after 50 ms',
    );
  });

  it('rejects, saying so, when the output is over the cap', async () => {
    await expect(sh({ maxBuffer: 1000 })(['-c', 'head -c 5000 /dev/zero'])).rejects.toThrow(
      'output over 1000 bytes',
    );
  });

  it('rejects, saying so, when the command is not there', async () => {
    await expect(execIp({ command: '/nonexistent/ip' })(['-json', 'neigh'])).rejects.toThrow(
      '/nonexistent/ip -json neigh: /nonexistent/ip not found (is iproute2 installed?)',
    );
  });
});
