import { describe, expect, it } from 'vitest';
import { notifySocketOf, systemdNotifier, watchdogUsecOf } from '../../../../lib/system/sd-notify.ts';

describe('sd_notify settings', () => {
  it('takes a NOTIFY_SOCKET path, refuses the abstract namespace with a reason, and nothing when unset', () => {
    expect(notifySocketOf({ NOTIFY_SOCKET: '/run/systemd/notify' })).toEqual({ path: '/run/systemd/notify' });
    expect(notifySocketOf({ NOTIFY_SOCKET: '@x' })).toEqual({
      error: 'NOTIFY_SOCKET="@x": only a socket path is supported',
    });
    expect(notifySocketOf({})).toBeUndefined();
  });

  it('has a watchdog only for this pid and a positive WATCHDOG_USEC', () => {
    expect(watchdogUsecOf({ WATCHDOG_USEC: '10000000' }, 7)).toBe(10_000_000);
    expect(watchdogUsecOf({ WATCHDOG_USEC: '10000000', WATCHDOG_PID: '7' }, 7)).toBe(10_000_000);
    expect(watchdogUsecOf({ WATCHDOG_USEC: '10000000', WATCHDOG_PID: '8' }, 7)).toBeUndefined();
    expect(watchdogUsecOf({ WATCHDOG_USEC: '0' }, 7)).toBeUndefined();
    expect(watchdogUsecOf({}, 7)).toBeUndefined();
  });

  it('removes NOTIFY_SOCKET from the environment, so no child notifies in our name', () => {
    const env: NodeJS.ProcessEnv = { NOTIFY_SOCKET: '@abstract' };
    const lines: string[] = [];
    expect(systemdNotifier((l) => lines.push(l), env)).toBeUndefined();
    expect(env.NOTIFY_SOCKET).toBeUndefined();
    expect(lines).toEqual([
      'NOTIFY_SOCKET="@abstract": only a socket path is supported; not notifying the service manager',
    ]);
  });
});
