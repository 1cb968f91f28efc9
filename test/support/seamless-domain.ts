import { mkdirSync, writeFileSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DirectorySettings } from '../../lib/directory/settings.ts';
import { readRegularFileCapped } from '../../lib/fs/root-owned.ts';
import { ManualClock } from '../../lib/clock.ts';
import type { SeamlessDeps, SeamlessStoreAccess } from '../../lib/seamless/control.ts';
import type { GatherIo } from '../../lib/seamless/doctor/gather.ts';
import type { SeamlessPaths } from '../../lib/seamless/paths.ts';
import type { RunOutcome, RunRequest } from '../../lib/seamless/run-command.ts';
import type { ProcessControl } from '../../lib/seamless/winbindd.ts';
import type { AppliedDirectory } from '../../lib/store/directory-settings-store.ts';
import type { SeamlessState } from '../../lib/store/seamless-settings-store.ts';
import { httpKeytab } from '../unit/lib/seamless/keytab-fixtures.ts';

/**
 * A Windows domain as net, winbindd and wbinfo answer Enable, Disable and the doctor, for tests of
 * lib/seamless/control.ts that run on the real file system (as root) without a domain controller.
 */

export const directory: AppliedDirectory = {
  settings: {
    kind: 'active-directory',
    host: 'dc1.example.test',
    address: '10.0.0.1',
    baseDn: 'DC=example,DC=test',
    bindDn: 'CN=Squid Bind,CN=Users,DC=example,DC=test',
  } as DirectorySettings,
  password: 'B1nd',
  version: 1,
};

interface Call extends RunRequest {
  /** What the child got on stdin, copied before the runner zeroes it. */
  input?: string;
}

/** A domain as net, winbindd and wbinfo answer it, with knobs for the broken cases. */
export class FakeDomain {
  /** Where Enable puts Samba's files: the fake winbindd writes its pid file and privileged pipe there. */
  private readonly paths: () => SeamlessPaths;
  constructor(paths: () => SeamlessPaths) {
    this.paths = paths;
  }

  calls: Call[] = [];
  joined = false;
  /** The account's key version on the DC. */
  kvno = 1;
  winbindPid: number | undefined;
  failJoin?: string;
  failEnctypes = false;
  trustOk = true;

  run = async (request: RunRequest): Promise<RunOutcome> => {
    this.calls.push({
      ...request,
      ...(request.stdin === undefined ? {} : { input: request.stdin.toString('utf8') }),
    });
    request.stdin?.fill(0); // as the real runner does
    const ok = (stdout = ''): RunOutcome => ({ code: 0, stdout, stderr: '' });
    const fail = (stderr: string): RunOutcome => ({ code: 255, stdout: '', stderr });
    const [sub, ...rest] = request.args;
    if (request.command === 'net' && sub === 'ads') {
      switch (rest[0]) {
        case 'testjoin':
          return this.joined ? ok('Join is OK\n') : fail('Join to domain is not valid');
        case 'join':
          if (this.failJoin !== undefined) return fail(this.failJoin);
          if (this.joined) this.kvno += 1;
          this.joined = true;
          return ok("Using short domain name -- EXAMPLE\nJoined 'PROXY' to dns domain 'example.test'\n");
        case 'keytab': {
          const option = rest.find((a) => a.startsWith('--option=dedicated keytab file=FILE:')) ?? '';
          writeFileSync(option.slice('--option=dedicated keytab file=FILE:'.length), httpKeytab(this.kvno));
          return ok();
        }
        case 'enctypes':
          return this.failEnctypes ? fail('no such attribute') : ok();
        case 'leave':
          this.joined = false;
          return ok("Deleted account for 'PROXY' in realm 'EXAMPLE.TEST'\n");
      }
    }
    if (request.command === 'winbindd') {
      this.winbindPid = 4242;
      const run = join(this.paths().sambaDir, 'run');
      writeFileSync(join(run, 'winbindd.pid'), '4242\n');
      mkdirSync(join(this.paths().winbindPrivilegedDir), {
        recursive: true,
        mode: 0o750,
      });
      return ok();
    }
    if (request.command === 'wbinfo') {
      if (this.winbindPid === undefined) return fail('failed to call wbcPingDc');
      if (request.args[0] === '-t')
        return this.trustOk
          ? ok('checking the trust secret ... succeeded\n')
          : fail('could not authenticate');
      return ok('Ping to winbindd succeeded\n');
    }
    if (request.command === 'id') return ok('uid=13(proxy) gid=13(proxy) groups=13(proxy)\n');
    return fail(`unexpected command ${request.command}`);
  };

  processes: ProcessControl = {
    kill: (pid, signal) => {
      if (pid !== this.winbindPid) throw Object.assign(new Error('no such process'), { code: 'ESRCH' });
      if (signal === 'SIGTERM' || signal === 'SIGKILL') this.winbindPid = undefined;
    },
    name: (pid) => (pid === this.winbindPid ? 'winbindd' : undefined),
    sleep: async () => {},
  };

  gatherIo = (): GatherIo => ({
    nameserver: async () => '10.0.0.1',
    resolve4: async () => ['10.0.0.2'],
    reverse: async () => ['proxy.example.test'],
    localAddresses: () => ['127.0.0.1', '10.0.0.2'],
    probe: async () => undefined,
    currentTime: async () => ({ currentTime: '20260101000000.0Z', localTime: Date.UTC(2026, 0, 1) }),
    keyVersion: async () => [String(this.kvno)],
    // The file system is the real one, read as the doctor reads it.
    readFile: (path, maxBytes) => readRegularFileCapped(path, maxBytes),
    stat: (path) => lstat(path),
    run: this.run,
  });
}

export class MemoryStore implements SeamlessStoreAccess {
  state: SeamlessState | undefined;
  current = () => this.state;
  save = (state: SeamlessState) => {
    this.state = state;
  };
  clear = () => {
    this.state = undefined;
  };
  ntlmClients?: NonNullable<SeamlessStoreAccess['ntlmClients']>;
}

/**
 * Enable's, Disable's and the doctor's dependencies on `domain` and `store`: the clock at 2026-01-01, a
 * directory that works, the helper account as given.
 */
export function fakeSeamlessDeps(
  domain: FakeDomain,
  store: SeamlessStoreAccess,
  options: {
    applied: () => AppliedDirectory | undefined;
    helper: { name: string; uid: number; gid: number };
    winbindSocketParent: string;
  },
): SeamlessDeps {
  return {
    run: domain.run,
    processes: domain.processes,
    clock: new ManualClock(Date.UTC(2026, 0, 1)),
    store,
    directory: options.applied,
    testDirectory: async () => ({ ok: true, groupCount: 3 }),
    helperAccount: () => options.helper,
    gatherIo: () => domain.gatherIo(),
    winbindSocketParent: options.winbindSocketParent,
  };
}
