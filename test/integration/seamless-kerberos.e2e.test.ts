import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Explanation } from '../../lib/explain/explain.ts';
import { MAX_NEGOTIATE_LINE_BYTES } from '../../lib/helper-protocol/negotiate.ts';
import { helperSocket } from '../../lib/seamless/paths.ts';
import { recordJoined } from '../harness/joined-state.ts';
import { http } from '../harness/http.ts';
import { kdcScratch, OTHER_FQDN, PROXY_FQDN, startKdc, type Kdc } from '../harness/kdc.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { run } from '../harness/run.ts';

/**
 * Kerberos through a real Squid 5.7 on Doorman's generated configuration, against a real MIT KDC: curl
 * `--proxy-negotiate` → Squid → doorman-shim → authd (started by `doorman serve`) → the `kerberos` package on
 * the HTTP keytab. The domain join is stood in for: the KDC's keytab and krb5.conf go where Enable leaves
 * them (lib/seamless/paths.ts) and the joined state is saved in the session DB, as Enable does.
 */
let kdc: Kdc;
let lab: Lab;
let ccache: string;
const stateParent = mkdtempSync(join(tmpdir(), 'doorman-seamless-krb-'));
chmodSync(stateParent, 0o755);
const stateDir = join(stateParent, 'state');

beforeAll(async () => {
  kdc = await startKdc();
  ccache = join(kdcScratch(kdc, 'alice'), 'ccache');
  lab = await startLab({
    config: { stateDir },
    beforeSquid: () => {
      recordJoined(stateDir, { keytab: kdc.keytab, krb5Conf: kdc.krb5Conf });
      return Promise.resolve();
    },
  });
  await kdc.kinit('alice', ccache);
}, 90_000);
afterAll(async () => {
  // The lab stops serve and then the authd it started (which outlives serve on purpose).
  await lab?.stop();
  await kdc?.stop();
  rmSync(stateParent, { recursive: true, force: true });
});

interface Negotiated {
  status: number;
}
/** curl through Squid by the proxy's name (which picks the SPN), `--proxy-negotiate -U :` with `ccache`. */
async function negotiate(
  options: { host?: string; ccache?: string; faketime?: string; krb5Conf?: string } = {},
): Promise<Negotiated> {
  const host = options.host ?? PROXY_FQDN;
  const args = [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    '--max-time',
    '15',
    '--proxy-negotiate',
    '-U',
    ':',
    '--resolve',
    `${host}:${lab.squidPort}:127.0.0.1`,
    '-x',
    `http://${host}:${lab.squidPort}`,
    `${lab.originUrl}page`,
  ];
  const [command, argv] =
    options.faketime === undefined ? ['curl', args] : ['faketime', ['-f', options.faketime, 'curl', ...args]];
  const env = kdc.clientEnv(options.ccache ?? ccache, {
    GSS_MECH_CONFIG: '/dev/null',
    ...(options.krb5Conf !== undefined && { KRB5_CONFIG: options.krb5Conf }),
  });
  const { stdout } = await run(command, argv, { env, allowFailure: true });
  return { status: Number(stdout.slice(-3)) };
}

/** The last line of cache.log that mentions `text`, after waiting a little for Squid to write it. */
async function cacheLogLine(text: string): Promise<string | undefined> {
  for (let i = 0; i < 100; i++) {
    const found = lab.cacheLog().findLast((line) => line.includes(text));
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
  return undefined;
}

describe('Kerberos (Negotiate) through Squid, against an MIT KDC', () => {
  it('lets a client with a ticket through and logs alice', async () => {
    expect((await negotiate()).status).toBe(200);
    let line: string | undefined;
    for (let i = 0; i < 100 && line === undefined; i++) {
      line = lab.accessLog().findLast((l) => l.includes('/page'));
      if (line === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    expect(line).toMatch(/ alice /);
    // doorman explain reads authd's last result for the address: identified by seamless sign-on.
    const explained = JSON.parse((await lab.cli('explain', '127.0.0.1', '--json')).stdout) as Explanation;
    expect(explained).toMatchObject({ verdict: 'identified', via: 'seamless', user: 'alice' });
    expect(explained.steps.find((s) => s.id === 'seamless')).toMatchObject({ status: 'ok' });
    expect(explained.steps.find((s) => s.id === 'seamless')?.found).toMatch(
      /^alice signed in by Negotiate at /,
    );
  });

  it('answers 407 to a client without a ticket', async () => {
    const empty = join(kdcScratch(kdc, 'nobody'), 'ccache');
    expect((await negotiate({ ccache: empty })).status).toBe(407);
  });

  it('answers 407 to a ticket for another service principal, with the reason in cache.log', async () => {
    expect((await negotiate({ host: OTHER_FQDN })).status).toBe(407);
    expect(await cacheLogLine('WRONG_PRINCIPAL')).toMatch(/HTTP\/other\.example\.test@EXAMPLE\.TEST/);
  });

  it('answers 407 to a client whose clock is 10 minutes off, with the reason in cache.log', async () => {
    // The service ticket is in the ccache from the first request; only the authenticator carries the skew.
    expect((await negotiate()).status).toBe(200);
    expect((await negotiate({ faketime: '+10m' })).status).toBe(407);
    expect(await cacheLogLine('CLOCK_SKEW')).toMatch(/Clock skew too great/);
    // The last result for the address is the refusal: explain names its code and what to do.
    const result = await lab.doorman(['explain', '127.0.0.1', '--json'], { allowFailure: true });
    expect(result.code).toBe(1);
    const explained = JSON.parse(result.stdout) as Explanation;
    expect(explained).toMatchObject({ verdict: 'not-identified', decidingStep: 'seamless' });
    const seamless = explained.steps.find((s) => s.id === 'seamless');
    expect(seamless?.found).toMatch(/ended in BH \(CLOCK_SKEW\)\.$/);
    expect(seamless?.advice).toMatch(/^set the client's clock/);
  });
  it('answers 407 to an expired ticket, with the reason in cache.log', async () => {
    // A second KDC on the same keys, its clock 20 minutes behind, gives alice a 2-minute ticket; her client, on
    // that clock too, sends it. The ticket ended 18 minutes ago, beyond the 5-minute skew: MIT's acceptor
    // checks the ticket's times before the authenticator's, so the reason is the expiry, not the skew.
    const shifted = await kdc.startShiftedKdc('-20m');
    const old = join(kdcScratch(kdc, 'expired'), 'ccache');
    await kdc.kinit('alice', old, { faketime: '-20m', krb5Conf: shifted, lifetime: '2m' });
    expect((await negotiate({ ccache: old, faketime: '-20m', krb5Conf: shifted })).status).toBe(407);
    expect(await cacheLogLine('(EXPIRED)')).toMatch(/Ticket expired/);
  });
});

describe("tickets for the proxy's other services, under the HTTP/ key (as an AD computer account has them)", () => {
  /** One request through Squid carrying `token` as the client's first Negotiate token. */
  const withToken = (token: string | undefined) =>
    http(`${lab.originUrl}page`, {
      proxy: { host: '127.0.0.1', port: lab.squidPort },
      headers: { 'proxy-authorization': `Negotiate ${token ?? ''}` },
    });

  it.each(['host', 'cifs'])(
    'answers 407 to a %s/ ticket, with WRONG_PRINCIPAL and its name in cache.log',
    async (service) => {
      const [token] = await kdc.tokens(ccache, `${service}@${PROXY_FQDN}`, 1);
      expect((await withToken(token)).status).toBe(407);
      expect(await cacheLogLine(`"${service}/${PROXY_FQDN}@EXAMPLE.TEST"`)).toMatch(
        /Kerberos token refused \(WRONG_PRINCIPAL\): the ticket is for/,
      );
    },
  );

  it('answers 200 to an HTTP/ ticket sent the same way', async () => {
    const [token] = await kdc.tokens(ccache, `HTTP@${PROXY_FQDN}`, 1);
    expect((await withToken(token)).status).toBe(200);
  });
});

/** One connection to authd's Negotiate socket: what a shim (one Squid child) sends and reads. */
function child() {
  const socket = connect(helperSocket(stateDir, 'negotiate'));
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  const answers = () => received.split('\n').filter((l) => l !== '');
  return {
    async ask(line: string): Promise<string> {
      const before = answers().length;
      socket.write(`${line}\n`);
      for (let i = 0; i < 500 && answers().length === before; i++)
        await new Promise((r) => setTimeout(r, 10));
      const answer = answers()[before];
      if (answer === undefined) throw new Error(`no answer to ${line.slice(0, 20)}…`);
      return answer;
    },
    close: () => socket.end(),
  };
}

describe('bad input on one Negotiate child, then a good handshake on the same child', () => {
  it('answers BH to each, and OK to the next good token', async () => {
    const [good, replayed, next] = await kdc.tokens(ccache, `HTTP@${PROXY_FQDN}`, 3);
    const c = child();
    try {
      expect(await c.ask(`YR ${replayed}`)).toMatch(/^OK token=\S+ user=alice$/);
      expect(await c.ask(`YR ${replayed}`)).toMatch(/^BH message=Kerberos%20token%20refused%20%28REPLAY%29/);
      expect(await c.ask(`YR ${(good as string).slice(0, 60)}`)).toMatch(/^BH message=/); // truncated
      expect(await c.ask(`YR ${'Y'.repeat(MAX_NEGOTIATE_LINE_BYTES + 100)}`)).toMatch(
        /^BH message=request%20line%20longer%20than/,
      );
      expect(await c.ask('YR ***not base64***')).toMatch(/^BH message=/);
      expect(await c.ask(`KK ${good}`)).toMatch(/^BH message=out%20of%20sequence/);
      expect(await c.ask(`YR ${next}`)).toMatch(/^OK token=\S+ user=alice$/);
      expect(await c.ask(`YR ${good}`)).toMatch(/^OK token=\S+ user=alice$/);
    } finally {
      c.close();
    }
  });
});
