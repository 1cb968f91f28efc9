import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../cli/command.ts';
import { seamlessCommand, stepLines } from '../../../cli/commands/seamless.ts';

describe('doorman seamless: step lines', () => {
  it('prints one line per finished step, and the fix under a failure; nothing for "running"', () => {
    expect(stepLines({ id: 'join', title: 'Join PROXY to EXAMPLE.TEST', status: 'running' })).toEqual([]);
    expect(
      stepLines({
        id: 'join',
        title: 'Join PROXY to EXAMPLE.TEST',
        status: 'ok',
        detail: 'joined PROXY to example.test',
      }),
    ).toEqual(['[ok  ] Join PROXY to EXAMPLE.TEST: joined PROXY to example.test']);
    expect(
      stepLines({
        id: 'trust',
        title: 'Check the trust',
        status: 'fail',
        detail: 'wbinfo -t failed',
        fix: 'Enable again',
      }),
    ).toEqual(['[FAIL] Check the trust: wbinfo -t failed', '       Fix: Enable again']);
    expect(stepLines({ id: 'squid', title: 'Update Squid', status: 'skipped' })).toEqual([
      '[skip] Update Squid',
    ]);
  });
});

describe('doorman seamless: command line', () => {
  it('refuses a disable that says neither whom nor --local, and a --squid-conf alone', async () => {
    await expect(seamlessCommand.run(['disable'])).rejects.toThrow(UsageError);
    await expect(seamlessCommand.run(['disable', '--local', '--admin', 'Administrator'])).rejects.toThrow(
      /either --admin USER .* or --local/,
    );
    await expect(seamlessCommand.run(['status', '--squid-conf', '/etc/squid/squid.conf'])).rejects.toThrow(
      /--squid-conf and --squid need --squid-include/,
    );
  });

  it('refuses an --admin that net would split, before asking for any password', async () => {
    for (const action of [['enable', '--server-version', '2012', '--domain', 'example.test'], ['disable']]) {
      await expect(seamlessCommand.run([...action, '--admin', 'adm%Secret'])).rejects.toThrow(
        /--admin: "adm%Secret" must not contain "%"/,
      );
    }
  });

  it('names the allowed actions', async () => {
    await expect(seamlessCommand.run(['join'])).rejects.toThrow(
      'seamless: expected enable, disable, status, doctor or resume, got "join"',
    );
  });
});
