import { describe, expect, it } from 'vitest';
import { cappedIp, execIp, type IpResult } from '../../../../lib/net/ip-runner.ts';

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

describe('cappedIp', () => {
  /** A runner whose runs end only when the test says so; counts the runs in progress. */
  function heldIp() {
    const pending: Array<(r: IpResult) => void> = [];
    let running = 0;
    let most = 0;
    const run = (args: readonly string[]) =>
      new Promise<IpResult>((resolve) => {
        running++;
        most = Math.max(most, running);
        pending.push((r) => {
          running--;
          resolve(r);
        });
        void args;
      });
    return {
      run,
      finishOne: () => pending.shift()?.({ code: 0, stdout: '[]', stderr: '' }),
      most: () => most,
    };
  }
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it('runs at most `running` at once, queues up to `waiting`, refuses the rest saying so', async () => {
    const held = heldIp();
    const run = cappedIp(held.run, { running: 2, waiting: 3 });
    const calls = Array.from({ length: 6 }, (_, i) =>
      run(['route', 'get', `10.0.0.${i}`]).then(
        () => 'done',
        (error: Error) => error.message,
      ),
    );
    await turn();
    expect(held.most()).toBe(2);
    expect(await calls[5]).toBe('ip route get 10.0.0.5: not started, 2 ip processes running and 3 waiting');
    for (let i = 0; i < 5; i++) {
      held.finishOne();
      await turn();
    }
    expect(await Promise.all(calls.slice(0, 5))).toEqual(['done', 'done', 'done', 'done', 'done']);
    expect(held.most()).toBe(2);
  });

  it('a freed slot goes to the first waiter, not to a newcomer', async () => {
    const held = heldIp();
    const run = cappedIp(held.run, { running: 1, waiting: 5 });
    const order: string[] = [];
    const first = run(['a']).then(() => order.push('a'));
    const waiter = run(['b']).then(() => order.push('b'));
    held.finishOne();
    const newcomer = run(['c']).then(() => order.push('c'));
    await turn();
    expect(held.most()).toBe(1);
    held.finishOne();
    await turn();
    held.finishOne();
    await Promise.all([first, waiter, newcomer]);
    expect(order).toEqual(['a', 'b', 'c']);
    expect(held.most()).toBe(1);
  });

  it('a run that throws frees its slot', async () => {
    const run = cappedIp(
      () => {
        throw new Error('spawn EAGAIN');
      },
      { running: 1, waiting: 0 },
    );
    await expect(run(['x'])).rejects.toThrow('spawn EAGAIN');
    await expect(run(['y'])).rejects.toThrow('spawn EAGAIN');
  });
});
