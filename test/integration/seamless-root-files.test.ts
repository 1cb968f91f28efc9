import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../lib/config/load.ts';
import type { Config } from '../../lib/config/schema.ts';
import { localSeamlessControl, type SeamlessStep } from '../../lib/seamless/control.ts';
import { seamlessPaths } from '../../lib/seamless/paths.ts';
import { parseSeamlessSettings } from '../../lib/seamless/settings.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { directory, FakeDomain, fakeSeamlessDeps, MemoryStore } from '../support/seamless-domain.ts';
import { joinedState } from '../support/seamless-state.ts';
import { useTempDir } from '../support/temp-dir.ts';

/**
 * Security review (issue 13 §1): stateDir belongs to the service user, so whoever runs code as `proxy` (any
 * helper, any Squid bug) can plant links and directories there. Root's Enable, Disable and doctor must touch
 * nothing outside what root itself made. The domain is faked (net, winbindd); the file system, the users
 * and the plants, made as `proxy` with runuser, are real.
 */

const tmp = useTempDir('doorman-root-files-');
const proxy = lookupUser('proxy');

let domain: FakeDomain;
let store: MemoryStore;
let stateDir: string;
let victim: string;

/** Run a command as the service user; the result, not thrown. */
const asProxy = (...command: string[]) =>
  spawnSync('runuser', ['-u', 'proxy', '--', ...command], { encoding: 'utf8' });
const plant = (...command: string[]) => {
  const result = asProxy(...command);
  if (result.status !== 0) throw new Error(`as proxy: ${command.join(' ')}: ${result.stderr}`);
};

/** Every entry under `dir`: its name, type, owner, mode and (for files) content. */
function snapshot(dir: string): string[] {
  const lines: string[] = [];
  const walk = (at: string) => {
    const stats = lstatSync(at);
    const kind = stats.isSymbolicLink() ? 'link' : stats.isDirectory() ? 'dir' : 'file';
    const content = kind === 'file' ? readFileSync(at, 'utf8') : '';
    lines.push(`${at} ${kind} ${stats.uid}:${stats.gid} ${(stats.mode & 0o7777).toString(8)} ${content}`);
    if (kind === 'dir') for (const name of readdirSync(at).sort()) walk(join(at, name));
  };
  walk(dir);
  return lines;
}

const config = (extra: Record<string, unknown> = {}): Config =>
  parseConfig({ stateDir, serviceUser: 'proxy', ...extra }, 'test');

function control(cfg: Config) {
  return localSeamlessControl(cfg, {
    ...fakeSeamlessDeps(domain, store, {
      applied: () => directory,
      helper: { name: 'proxy', uid: proxy.uid, gid: proxy.gid },
      winbindSocketParent: join(tmp.dir, 'run-samba'),
    }),
    hostName: 'proxy',
  });
}

async function enable(cfg: Config) {
  const parsed = parseSeamlessSettings({
    serverVersion: '2012',
    domain: 'example.test',
    adminUser: 'Administrator',
    adminPassword: 'Adm1n-Secret!',
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  const steps: SeamlessStep[] = [];
  const result = await control(cfg).enable(parsed.settings, parsed.password, (s) => steps.push(s));
  return { result, failed: steps.filter((s) => s.status === 'fail') };
}

async function disableLocally(cfg: Config) {
  const steps: SeamlessStep[] = [];
  const result = await control(cfg).disable(undefined, (s) => steps.push(s));
  return { result, failed: steps.filter((s) => s.status === 'fail') };
}

beforeEach(() => {
  // As `doorman serve` leaves it: stateDir the service user's, 0700, in a directory of root's that proxy may
  // enter. The victim: root's files that proxy must not reach through root.
  chmodSync(tmp.dir, 0o755);
  stateDir = join(tmp.dir, 'state');
  mkdirSync(stateDir, { mode: 0o700 });
  chownSync(stateDir, proxy.uid, proxy.gid);
  victim = join(tmp.dir, 'victim');
  mkdirSync(join(victim, 'sub'), { recursive: true, mode: 0o700 });
  writeFileSync(join(victim, 'secret'), 'root only\n', { mode: 0o600 });
  writeFileSync(join(victim, 'sub', 'kept'), 'also\n', { mode: 0o600 });
  domain = new FakeDomain(() => seamlessPaths(config()));
  store = new MemoryStore();
});

describe("root and the service user's state directory", () => {
  it('Enable, the doctor and Disable follow none of the links proxy plants in stateDir', async () => {
    const before = snapshot(victim);
    plant('ln', '-s', victim, join(stateDir, 'samba'));
    plant('ln', '-s', victim, join(stateDir, 'rcache'));
    const cfg = config();

    const enabled = await enable(cfg);
    expect(enabled.failed).toEqual([]);
    expect(enabled.result.ok).toBe(true);
    // Root's files are in the root-owned sambaDir beside stateDir, not behind the planted links.
    const paths = seamlessPaths(cfg);
    expect(paths.sambaDir).toBe(join(tmp.dir, 'state-samba'));
    expect(lstatSync(paths.keytab)).toMatchObject({ uid: 0, gid: proxy.gid });
    expect((await control(cfg).doctor()).checks.find((c) => c.id === 'keytab-access')?.status).toBe('ok');

    const disabled = await disableLocally(cfg);
    expect(disabled.failed).toEqual([]);
    expect(readdirSync(paths.sambaDir)).toEqual(['log']);
    expect(snapshot(victim)).toEqual(before);
    // The plants are still the links proxy made: nothing followed them, nothing removed them.
    expect(lstatSync(join(stateDir, 'samba')).isSymbolicLink()).toBe(true);
    expect(lstatSync(join(stateDir, 'rcache')).isSymbolicLink()).toBe(true);
  });

  it('leaves proxy nothing to write, rename or plant in what root manages', async () => {
    const cfg = config();
    expect((await enable(cfg)).result.ok).toBe(true);
    const paths = seamlessPaths(cfg);
    for (const attempt of [
      ['mkdir', join(paths.sambaDir, 'private2')],
      ['ln', '-s', victim, join(paths.sambaDir, 'state', 'planted')],
      ['mv', paths.sambaDir, join(stateDir, 'moved')],
      ['mv', paths.keytab, join(paths.sambaDir, 'old.keytab')],
      ['ls', join(paths.sambaDir, 'private')],
    ]) {
      expect(asProxy(...attempt).status, attempt.join(' ')).not.toBe(0);
    }
    // What proxy needs it can reach: the keytab (read) and winbind's privileged pipe directory (enter).
    expect(asProxy('head', '-c', '1', paths.keytab).status).toBe(0);
    expect(asProxy('ls', paths.winbindPrivilegedDir).status).toBe(0);
  });

  it('refuses a sambaDir inside stateDir, where proxy made private/ and lock/ beforehand, changing nothing', async () => {
    const inside = join(stateDir, 'samba');
    plant('mkdir', '-m', '0777', inside, join(inside, 'private'), join(inside, 'lock'));
    const before = snapshot(inside);
    const cfg = config({ sambaDir: inside });

    const enabled = await enable(cfg);
    expect(enabled.result.ok).toBe(false);
    expect(enabled.failed.map((s) => s.detail).join('\n')).toMatch(
      new RegExp(`${stateDir} is not root's .*root will not use it`),
    );
    expect(snapshot(inside)).toEqual(before);
    expect(store.state).toBeUndefined();
  });

  it('Disable refuses to delete through a sambaDir that proxy turned into a link', async () => {
    const inside = join(stateDir, 'samba');
    plant('ln', '-s', victim, inside);
    const before = snapshot(victim);
    const cfg = config({ sambaDir: inside });
    store.save(joinedState());

    const disabled = await disableLocally(cfg);
    expect(disabled.failed.map((s) => s.detail).join('\n')).toMatch(/root will not use it/);
    expect(snapshot(victim)).toEqual(before);
  });

  it('the doctor reads a keytab only after checking it on the descriptor: a link to /dev/zero or 1 GiB costs nothing', async () => {
    // A sambaDir the admin put where proxy can write: root's Enable refuses it, but the doctor (read only)
    // still runs there, as root, and must not be made to read without bound.
    const inside = join(stateDir, 'samba');
    plant('mkdir', inside);
    const cfg = config({ sambaDir: inside });
    store.save(joinedState());
    const keytab = seamlessPaths(cfg).keytab;
    const keytabCheck = async () =>
      (await control(cfg).doctor()).checks.find((c) => c.id === 'keytab-spn')?.detail ?? '';

    plant('ln', '-s', '/dev/zero', keytab);
    expect(await keytabCheck()).toMatch(/is a symbolic link; root will not use it/);

    plant('rm', keytab);
    plant('mkfifo', keytab);
    expect(await keytabCheck()).toMatch(/is not a regular file/);

    plant('rm', keytab);
    plant('touch', keytab);
    truncateSync(keytab, 1024 ** 3); // sparse: no disk used
    const rssBefore = process.memoryUsage().rss;
    expect(await keytabCheck()).toMatch(/larger than 1048576 bytes/);
    // Nothing near the file's size was read or allocated (the check's own figure, not a timing).
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * 1024 ** 2);
  });
});
