import { chownSync, existsSync, lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../lib/config/load.ts';
import type { Config } from '../../../../lib/config/schema.ts';
import {
  localSeamlessControl,
  type SeamlessDeps,
  type SeamlessStep,
} from '../../../../lib/seamless/control.ts';
import { seamlessPaths } from '../../../../lib/seamless/paths.ts';
import { parseSeamlessSettings, type SeamlessSettings } from '../../../../lib/seamless/settings.ts';
import type { AppliedDirectory } from '../../../../lib/store/directory-settings-store.ts';
import { directory, FakeDomain, fakeSeamlessDeps, MemoryStore } from '../../../support/seamless-domain.ts';
import { joinedState } from '../../../support/seamless-state.ts';
import { useTempDir } from '../../../support/temp-dir.ts';

const PASSWORD = 'Adm1n-Secret!';
const tmp = useTempDir('doorman-seamless-control-');

let domain: FakeDomain;
let store: MemoryStore;
let applied: AppliedDirectory | undefined;
const config = (): Config => parseConfig({ stateDir: join(tmp.dir, 'state') }, 'test');

beforeEach(() => {
  domain = new FakeDomain(() => seamlessPaths(config()));
  store = new MemoryStore();
  applied = directory;
});

/** The fakes; `hostName: undefined` leaves the host name to the control's default. */
type Extra = Omit<Partial<SeamlessDeps>, 'hostName'> & { hostName?: string | undefined };

function control(extra: Extra = {}) {
  const { hostName = 'proxy', ...rest } = { hostName: 'proxy', ...extra } as Extra;
  const deps: SeamlessDeps = {
    ...fakeSeamlessDeps(domain, store, {
      applied: () => applied,
      helper: { name: 'proxy', uid: 13, gid: 13 },
      winbindSocketParent: join(tmp.dir, 'run-samba'),
    }),
    ...rest,
  };
  if ('hostName' in extra && extra.hostName === undefined) return localSeamlessControl(config(), deps);
  return localSeamlessControl(config(), { ...deps, hostName });
}

function settings(): { settings: SeamlessSettings; password: Buffer } {
  const parsed = parseSeamlessSettings({
    serverVersion: '2012',
    domain: 'example.test',
    adminUser: 'Administrator',
    adminPassword: PASSWORD,
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed;
}

async function enable(extra?: Extra) {
  const steps: SeamlessStep[] = [];
  const { settings: s, password } = settings();
  const result = await control(extra).enable(s, password, (step) => steps.push(step));
  return { result, steps, password, finished: steps.filter((step) => step.status !== 'running') };
}

const summary = (steps: readonly SeamlessStep[]) => steps.map((s) => `${s.id}:${s.status}`);

describe('enable', () => {
  it('runs every step in order, reporting each as it starts and ends, and saves the state', async () => {
    const { result, steps, finished } = await enable();
    expect(result.ok).toBe(true);
    expect(summary(finished)).toEqual([
      'preconditions:ok',
      'configuration:ok',
      'join:ok',
      'keytab:ok',
      'enctypes:ok',
      'winbindd:ok',
      'privileged-pipe:ok',
      'trust:ok',
      'verify:ok',
      'save:ok',
      'squid:skipped',
    ]);
    // Each step announced before its outcome.
    expect(steps.slice(0, 2).map((s) => s.status)).toEqual(['running', 'ok']);
    expect(result.doctor?.ok).toBe(true);
    expect(store.state).toEqual(joinedState(Date.UTC(2026, 0, 1)));
    const paths = seamlessPaths(config());
    expect(readFileSync(paths.smbConf, 'utf8')).toContain('netbios name = PROXY\n');
    expect(readFileSync(paths.krb5Conf, 'utf8')).toContain('kdc = 10.0.0.1\n');
    const access = (path: string) => {
      const stats = lstatSync(path);
      return [stats.uid, stats.gid, (stats.mode & 0o7777).toString(8)];
    };
    expect(paths.sambaDir).toBe(`${config().stateDir}-samba`);
    expect(access(paths.sambaDir)).toEqual([0, 13, '750']);
    expect(access(join(paths.sambaDir, 'private'))).toEqual([0, 0, '700']);
    expect(access(paths.keytab)).toEqual([0, 13, '640']);
    expect(access(paths.smbConf)).toEqual([0, 0, '644']);
    expect(access(paths.winbindPrivilegedDir)).toEqual([0, 13, '750']);
    // The replay cache is authd's to make, as the helper user: root does not touch stateDir.
    expect(existsSync(paths.rcacheDir)).toBe(false);
    expect(existsSync(`${paths.keytab}.new`)).toBe(false);
  });

  it("gives the password to net ads join on stdin only, and zeroes the caller's Buffer", async () => {
    const { password } = await enable();
    const withInput = domain.calls.filter((c) => c.input !== undefined && c.input !== '');
    expect(withInput.map((c) => [c.command, ...c.args.slice(0, 2)])).toEqual([['net', 'ads', 'join']]);
    expect(withInput[0]?.input).toBe(`${PASSWORD}\n`);
    expect(withInput[0]?.args).toEqual([
      'ads',
      'join',
      '--user=Administrator',
      '--no-dns-updates',
      '-s',
      expect.any(String),
    ]);
    for (const call of domain.calls) {
      expect(call.args.join(' ')).not.toContain(PASSWORD);
      expect(JSON.stringify(call.env ?? {})).not.toContain(PASSWORD);
    }
    expect(password.every((byte) => byte === 0)).toBe(true);
  });

  it('on a joined proxy keeps the join but writes the keytab, encryption types and winbindd again (repair)', async () => {
    await enable();
    // Someone re-joined by hand: the DC's key version moved on, the keytab did not.
    domain.kvno = 2;
    domain.calls = [];
    const { result, finished } = await enable();
    expect(result.ok).toBe(true);
    expect(summary(finished).slice(2, 6)).toEqual([
      'join:skipped',
      'keytab:ok',
      'enctypes:ok',
      'winbindd:ok',
    ]);
    expect(domain.calls.some((c) => c.args[1] === 'join')).toBe(false);
    expect(finished.find((s) => s.id === 'winbindd')?.detail).toMatch(/restarted/);
    expect(finished.find((s) => s.id === 'verify')?.detail).toMatch(/key version 2/);
  });

  it('a repair keeps the joined computer name, whatever the host is called now', async () => {
    await enable();
    const { result } = await enable({ hostName: undefined });
    expect(result.ok).toBe(true);
    expect(store.state?.machineName).toBe('PROXY');
    expect(readFileSync(seamlessPaths(config()).smbConf, 'utf8')).toContain('netbios name = PROXY\n');
  });

  it('a repair takes the computer name from root’s smb.conf, not from the DB the service user can write', async () => {
    await enable();
    const state = store.state;
    if (state === undefined) throw new Error('not enabled');
    store.save({ ...state, machineName: 'DC01' }); // as proxy could write it
    const { result } = await enable({ hostName: undefined });
    expect(result.ok).toBe(true);
    expect(store.state?.machineName).toBe('PROXY');
    expect(readFileSync(seamlessPaths(config()).smbConf, 'utf8')).toContain('netbios name = PROXY\n');
    expect(domain.calls.some((c) => c.args.join(' ').includes('DC01'))).toBe(false);
  });

  it('stops at a failed join with its fix, saving nothing, and still zeroes the password', async () => {
    domain.failJoin = 'Failed to join domain: failed to set machine spn: Constraint violation';
    const { result, finished, password } = await enable();
    expect(result.ok).toBe(false);
    expect(summary(finished)).toEqual(['preconditions:ok', 'configuration:ok', 'join:fail']);
    expect(finished.at(-1)).toMatchObject({
      detail: expect.stringContaining('Constraint violation'),
      fix: expect.stringContaining('another account in the domain owns'),
    });
    expect(store.state).toBeUndefined();
    expect(password.every((byte) => byte === 0)).toBe(true);
  });

  it('tolerates a DC that refuses the encryption types (a 2003 schema), saying so', async () => {
    domain.failEnctypes = true;
    const { result, finished } = await enable();
    expect(result.ok).toBe(true);
    expect(finished.find((s) => s.id === 'enctypes')).toMatchObject({
      status: 'skipped',
      detail: expect.stringContaining('keeps the join'),
    });
  });

  it('refuses without a Windows domain applied, before touching anything', async () => {
    applied = undefined;
    const { result, finished } = await enable();
    expect(result.ok).toBe(false);
    expect(finished).toEqual([
      expect.objectContaining({
        id: 'preconditions',
        status: 'fail',
        detail: expect.stringContaining('no directory service'),
      }),
    ]);
    expect(domain.calls).toEqual([]);
    expect(existsSync(seamlessPaths(config()).sambaDir)).toBe(false);
  });

  it('refuses when the clock is off by more than 5 minutes, with the NTP fix', async () => {
    const io = domain.gatherIo();
    const { result, finished } = await enable({
      gatherIo: () => ({
        ...io,
        currentTime: async () => ({ currentTime: '20260101001000.0Z', localTime: Date.UTC(2026, 0, 1) }),
      }),
    });
    expect(result.ok).toBe(false);
    expect(finished[0]).toMatchObject({
      id: 'preconditions',
      status: 'fail',
      fix: expect.stringContaining('NTP'),
    });
  });

  it('reports a broken trust with its fix', async () => {
    domain.trustOk = false;
    const { result, finished } = await enable();
    expect(result.ok).toBe(false);
    expect(finished.at(-1)).toMatchObject({
      id: 'trust',
      status: 'fail',
      fix: expect.stringContaining('Enable seamless again'),
    });
  });

  it('regenerates Squid through the injected step when there is one', async () => {
    let called = 0;
    const { finished } = await enable({
      regenerateSquid: async () => {
        called += 1;
        return { ok: true, detail: 'wrote the include' };
      },
    });
    expect(called).toBe(1);
    expect(finished.at(-1)).toMatchObject({ id: 'squid', status: 'ok', detail: 'wrote the include' });
  });
});

describe('disable', () => {
  it('leaves with the password on stdin, stops winbindd, deletes Samba state but its logs, clears the state', async () => {
    await enable();
    const paths = seamlessPaths(config());
    writeFileSync(join(paths.sambaDir, 'log', 'winbindd.log'), 'kept\n');
    domain.calls = [];
    const steps: SeamlessStep[] = [];
    const password = Buffer.from(PASSWORD);
    const result = await control().disable({ user: 'EXAMPLE\\Administrator', password }, (s) =>
      steps.push(s),
    );
    expect(result.ok).toBe(true);
    expect(summary(steps.filter((s) => s.status !== 'running'))).toEqual([
      'leave:ok',
      'winbindd:ok',
      'files:ok',
      'save:ok',
      'squid:skipped',
    ]);
    const leave = domain.calls.find((c) => c.args[1] === 'leave');
    expect(leave?.args.slice(0, 3)).toEqual(['ads', 'leave', '--user=EXAMPLE\\Administrator']);
    expect(leave?.input).toBe(`${PASSWORD}\n`);
    expect(password.every((byte) => byte === 0)).toBe(true);
    expect(domain.winbindPid).toBeUndefined();
    expect(existsSync(paths.keytab)).toBe(false);
    expect(existsSync(join(paths.sambaDir, 'private'))).toBe(false);
    expect(existsSync(join(paths.sambaDir, 'log', 'winbindd.log'))).toBe(true);
    expect(store.state).toBeUndefined();
  });

  it('locally (no admin) says the computer account stays in the domain', async () => {
    await enable();
    const steps: SeamlessStep[] = [];
    const result = await control().disable(undefined, (s) => steps.push(s));
    expect(result.ok).toBe(true);
    expect(steps[0]).toMatchObject({
      id: 'leave',
      status: 'skipped',
      detail: expect.stringContaining('PROXY$ stays in the domain'),
    });
    expect(domain.calls.some((c) => c.args[1] === 'leave')).toBe(false);
    expect(store.state).toBeUndefined();
  });
});

describe('status and doctor', () => {
  it('status: availability only when disabled; state, winbind and trust when enabled', async () => {
    expect(await control().status()).toEqual({ availability: { ok: true } });
    await enable();
    expect(await control().status()).toMatchObject({
      state: { machineName: 'PROXY' },
      winbind: 'running',
      trust: 'ok',
    });
    domain.winbindPid = undefined;
    expect(await control().status()).toMatchObject({ winbind: 'stopped', trust: 'fail' });
  });

  it('doctor: before Enable, the network prerequisites for the directory’s domain; after, every check', async () => {
    const before = await control().doctor();
    expect(before.checks.map((c) => c.id)).toEqual(['dns-a', 'dns-ptr', 'clock', 'ports', 'clients-fqdn']);
    await enable();
    domain.kvno = 3;
    const after = await control().doctor();
    expect(after.ok).toBe(false);
    expect(after.checks.filter((c) => c.status === 'fail').map((c) => c.id)).toEqual(['kvno']);
  });

  it("doctor: names the clients whose handshakes carried NTLM in the last day, from the store's record", async () => {
    await enable();
    const asked: Array<[number, number]> = [];
    store.ntlmClients = (since, limit) => {
      asked.push([since, limit]);
      return { addresses: 1, clients: [{ address: '10.0.0.7', handshakes: 3, lastSeen: since }] };
    };
    const report = await control().doctor();
    expect(asked).toEqual([[Date.UTC(2026, 0, 1) - 86_400_000, 20]]);
    expect(report.checks.find((c) => c.id === 'clients-fqdn')).toMatchObject({
      status: 'note',
      detail: expect.stringMatching(
        /^1 client address used NTLM in the last day: 10\.0\.0\.7 \(3 handshakes/,
      ),
    });
  });
});

describe('resume', () => {
  const access = (path: string) => {
    const stats = lstatSync(path);
    return [stats.uid, stats.gid, (stats.mode & 0o7777).toString(8)];
  };
  /** What a reboot leaves: no winbindd (its pid file stale), /run/samba empty, the pipe as winbindd makes it. */
  const reboot = () => {
    domain.winbindPid = undefined;
    chownSync(seamlessPaths(config()).winbindPrivilegedDir, 0, 0);
    rmSync(join(tmp.dir, 'run-samba'), { recursive: true, force: true });
    domain.calls = [];
  };

  it('on a joined proxy without winbindd, starts it and gives its privileged pipe to the helper group', async () => {
    await enable();
    reboot();
    const result = await control().resume();
    expect(result).toEqual({ ok: true, detail: expect.stringMatching(/^winbindd answers \(started\); /) });
    expect(domain.winbindPid).toBe(4242);
    expect(domain.calls.filter((c) => c.command === 'winbindd').map((c) => c.args)).toEqual([
      ['-D', '-s', seamlessPaths(config()).smbConf],
    ]);
    expect(access(seamlessPaths(config()).winbindPrivilegedDir)).toEqual([0, 13, '750']);
    expect(existsSync(join(tmp.dir, 'run-samba'))).toBe(true);
    // No join, no keytab: nothing of the domain's but winbindd itself.
    expect(domain.calls.some((c) => c.command === 'net')).toBe(false);
  });

  it('is skipped when the proxy is not joined, running nothing and making nothing', async () => {
    const result = await control().resume();
    expect(result).toEqual({ ok: true, skipped: true, detail: expect.stringContaining('not enabled') });
    expect(domain.calls).toEqual([]);
    expect(existsSync(seamlessPaths(config()).sambaDir)).toBe(false);
    expect(existsSync(join(tmp.dir, 'run-samba'))).toBe(false);
  });

  it('does nothing when winbindd runs', async () => {
    await enable();
    domain.calls = [];
    expect(await control().resume()).toEqual({ ok: true, detail: 'winbindd is running (pid 4242)' });
    expect(domain.calls).toEqual([]);
  });

  it('refuses to start winbindd from a sambaDir that is not root’s alone, with the fix', async () => {
    await enable();
    reboot();
    chownSync(seamlessPaths(config()).sambaDir, 13, 13);
    const result = await control().resume();
    expect(result).toEqual({
      ok: false,
      detail: expect.stringContaining(`${seamlessPaths(config()).sambaDir} is not root's`),
      fix: expect.stringContaining('doorman seamless resume'),
    });
    expect(domain.calls).toEqual([]);
    expect(domain.winbindPid).toBeUndefined();
  });
});
