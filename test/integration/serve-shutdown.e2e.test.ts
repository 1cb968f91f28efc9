import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyDirectory } from '../harness/apply-directory.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { openSplashForm } from '../harness/splash-sign-in.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../harness/slapd.ts';

/**
 * `doorman serve` stops on SIGTERM once a splash sign-in has used the directory: its connections to the
 * directory (search and bind pools) are closed with everything else it opened, so the process ends instead
 * of being held open by them, those of a directory replaced by a later apply included (they would otherwise
 * wait out their grace, 15 s by default). A service manager would otherwise wait for its kill timeout on every restart.
 */
let slapd: Slapd;
let lab: Lab;

beforeAll(async () => {
  // Stats logging: slapd writes each connection's ACCEPT and its close, which the test counts.
  slapd = await startSlapd({ logBinds: true });
  lab = await startLab({ beforeSquid: async (doorman) => void (await applyDirectory(doorman, slapd)) });
  await lab.cli('portal', 'set', '--mode', 'authentication');
}, 90_000);
afterAll(async () => {
  await lab?.stop();
  await slapd?.stop();
});

/** slapd's connections so far: accepted, and those it has seen closed. */
function slapdConnections(): { accepted: Set<string>; closed: Set<string> } {
  const log = slapd.stderr();
  const ids = (pattern: RegExp) => new Set([...log.matchAll(pattern)].map((m) => m[1] ?? ''));
  return { accepted: ids(/ (conn=\d+) fd=\d+ ACCEPT /g), closed: ids(/ (conn=\d+) fd=\d+ closed\b/g) };
}

const open = () => {
  const { accepted, closed } = slapdConnections();
  return [...accepted].filter((id) => !closed.has(id));
};

/** Poll (a wait, not a measurement) until `done` holds or `ms` have passed. */
async function waitFor(done: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!done() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
}

describe('doorman serve on SIGTERM after a splash sign-in', () => {
  it('exits within a few seconds, and slapd sees every connection closed, those of a replaced directory too', async () => {
    const { signIn } = await openSplashForm(lab, `${lab.originUrl}news`);
    expect((await signIn('alice', 'not-the-password')).status).toBe(403);
    // Applied again: the next sign-in asks a new directory, the one asked so far waits out its grace.
    await applyDirectory(lab.doorman, slapd);
    expect((await signIn('alice', USER_PASSWORD)).status).toBe(303);
    // The sign-ins left serve's pooled connections open at slapd (else this test would prove nothing).
    expect(open().length).toBeGreaterThan(0);

    const { child } = lab.serve;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    // A generous bound: without the fix serve stays up for as long as slapd keeps the connections.
    const code = await Promise.race([
      exited,
      new Promise((resolve) => setTimeout(resolve, 10_000, 'running')),
    ]);
    expect(code).toBe(0);
    await waitFor(() => open().length === 0, 5_000);
    expect(open()).toEqual([]);
  });
});
