import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../lib/config/load.ts';
import { seamlessPaths, runDir } from '../../../../lib/seamless/paths.ts';
import { superviseAuthd, type AuthdSupervisor } from '../../../../helpers/authd/supervisor.ts';
import { useTempDir } from '../../../support/temp-dir.ts';

/**
 * Stands in for authd: appends one JSON line per start (its pid, argv, the environment it was given) to
 * starts.jsonl in stateDir, then exits 1 the first `DIE` times, and otherwise waits for SIGTERM (exit 0).
 */
const STAND_IN = `
import { appendFileSync, readFileSync } from 'node:fs';
const file = process.env.STAND_IN_LOG;
let starts = 0;
try { starts = readFileSync(file, 'utf8').split('\\n').filter(Boolean).length; } catch {}
const e = process.env;
appendFileSync(file, JSON.stringify({ pid: process.pid, argv: process.argv.slice(2), execArgv: process.execArgv,
  env: { KRB5_KTNAME: e.KRB5_KTNAME, KRB5_CONFIG: e.KRB5_CONFIG, KRB5RCACHEDIR: e.KRB5RCACHEDIR,
    GSS_MECH_CONFIG: e.GSS_MECH_CONFIG, UV_THREADPOOL_SIZE: e.UV_THREADPOOL_SIZE } }) + '\\n');
if (starts < Number(e.STAND_IN_DIE)) process.exit(1);
process.on('SIGTERM', () => { appendFileSync(file, 'SIGTERM\\n'); process.exit(0); });
setInterval(() => {}, 1e9);
`;

interface Start {
  pid: number;
  argv: string[];
  execArgv: string[];
  env: Record<string, string | undefined>;
}

describe('superviseAuthd', () => {
  const tmp = useTempDir('doorman-supervisor-');
  let supervisor: AuthdSupervisor | undefined;
  const saved = { ...process.env };
  afterEach(async () => {
    await supervisor?.stop();
    supervisor = undefined;
    process.env = { ...saved };
  });
  const starts = (): Array<Start | 'SIGTERM'> => {
    const file = join(tmp.dir, 'starts.jsonl');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (l === 'SIGTERM' ? 'SIGTERM' : (JSON.parse(l) as Start)));
  };
  const until = async (check: () => boolean) => {
    while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  const supervise = (die: number, lines: string[]) => {
    process.env.STAND_IN_LOG = join(tmp.dir, 'starts.jsonl');
    process.env.STAND_IN_DIE = String(die);
    const config = parseConfig({ stateDir: join(tmp.dir, 'state') }, 'test');
    supervisor = superviseAuthd({
      config,
      configFile: '/etc/doorman/test.json',
      log: (line) => lines.push(line),
      script: tmp.write('stand-in.mjs', STAND_IN),
      backoffMs: { first: 10, max: 40 },
    });
    return config;
  };

  it('starts authd with a small young generation, the config file and the Kerberos environment', async () => {
    delete process.env.GSS_MECH_CONFIG;
    delete process.env.UV_THREADPOOL_SIZE;
    const lines: string[] = [];
    const config = supervise(0, lines);
    await until(() => starts().length === 1);
    const [start] = starts() as [Start];
    const paths = seamlessPaths(config);
    expect(start.execArgv).toEqual(['--max-semi-space-size=2']);
    expect(start.argv).toEqual(['--exit-with-parent', '--config', '/etc/doorman/test.json']);
    expect(start.env).toEqual({
      KRB5_KTNAME: `FILE:${paths.keytab}`,
      KRB5_CONFIG: paths.krb5Conf,
      KRB5RCACHEDIR: paths.rcacheDir,
      GSS_MECH_CONFIG: '/dev/null',
      UV_THREADPOOL_SIZE: '4',
    });
    expect(supervisor?.pid()).toBe(start.pid);
    // Made for the shims and the acceptor, whatever serve's umask.
    expect(statSync(runDir(config.stateDir)).mode & 0o777).toBe(0o750);
    expect(statSync(paths.rcacheDir).mode & 0o777).toBe(0o700);
    expect(lines).toEqual([`authd started (pid ${start.pid})`]);
  });

  it("keeps serve's own GSS_MECH_CONFIG (tests select gss-ntlmssp that way)", async () => {
    process.env.GSS_MECH_CONFIG = '/etc/gss/mech.d/ntlmssp.conf';
    supervise(0, []);
    await until(() => starts().length === 1);
    expect((starts()[0] as Start).env.GSS_MECH_CONFIG).toBe('/etc/gss/mech.d/ntlmssp.conf');
  });

  it('restarts authd when it dies, and says so', async () => {
    const lines: string[] = [];
    supervise(2, lines);
    await until(() => starts().length === 3);
    const pids = (starts() as Start[]).map((s) => s.pid);
    expect(new Set(pids).size).toBe(3);
    await until(() => supervisor?.pid() === pids[2]);
    expect(lines.filter((l) => /exited \(code 1\); restarting in \d+ ms$/.test(l))).toHaveLength(2);
  });

  it('stops authd with SIGTERM, waits for it, and starts no other', async () => {
    supervise(0, []);
    await until(() => starts().length === 1);
    const pid = supervisor?.pid();
    await supervisor?.stop();
    expect(starts().at(-1)).toBe('SIGTERM');
    expect(() => process.kill(pid as number, 0)).toThrow();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(starts()).toHaveLength(2);
    expect(supervisor?.pid()).toBeUndefined();
  });
});
