import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createNtlmPool, type NtlmPool } from '../../../../helpers/authd/ntlm-pool.ts';
import { ManualClock } from '../../../../lib/clock.ts';

/**
 * A stand-in for ntlm_auth (the real one is driven in test/integration/seamless-ntlm-pool.test.ts): a shell
 * loop whose behaviour is the --configfile's base name. `TT <pid> <protocol>` lets a test tell processes apart.
 */
const dir = mkdtempSync(join(tmpdir(), 'doorman-ntlm-pool-'));
const FAKE = join(dir, 'ntlm_auth');
writeFileSync(
  FAKE,
  `#!/bin/sh
proto=\${1#--helper-protocol=}
mode=$(basename "\${2#--configfile=}")
while IFS= read -r line; do
  case "$mode:$line" in
    good:YR*) echo "TT $$ $proto";;
    good:KK*) echo "AF alice";;
    garbage:*) echo "hello there";;
    diekk:YR*) echo "TT $$ $proto";;
    diekk:KK*) exit 3;;
    long:*) printf 'TT '; head -c 70000 /dev/zero | tr '\\0' A; echo;;
    chatty:*) echo "TT $$"; echo "TT extra";;
    silent:*) :;;
  esac
done
`,
);
chmodSync(FAKE, 0o755);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pools: NtlmPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

function pool(mode: string, extra: Partial<Parameters<typeof createNtlmPool>[0]> = {}) {
  const logs: string[] = [];
  const p = createNtlmPool({
    smbConf: join(dir, mode),
    ntlmAuth: FAKE,
    maxNtlmssp: 2,
    maxSpnego: 1,
    idleMs: 60_000,
    log: (line) => logs.push(line),
    ...extra,
  });
  pools.push(p);
  return { pool: p, logs };
}

const pidOf = (reply: string) => reply.split(' ')[1];

describe('createNtlmPool', () => {
  it('starts nothing before the first lease, then reuses the released process', async () => {
    const { pool: p } = pool('good');
    expect(p.size()).toBe(0);
    const first = await p.lease('ntlmssp');
    const tt = await first.step('YR TlRMTVNTUAABAAAA');
    expect(tt).toMatch(/^TT \d+ squid-2\.5-ntlmssp$/);
    expect(await first.step('KK TlRMTVNTUAADAAAA')).toBe('AF alice');
    first.release();
    const second = await p.lease('ntlmssp');
    expect(pidOf(await second.step('YR x'))).toBe(pidOf(tt));
    second.release();
    expect(p.size()).toBe(1);
  });

  it('runs gss-spnego for the SPNEGO kind, in a process of its own', async () => {
    const { pool: p } = pool('good');
    const raw = await p.lease('ntlmssp');
    const spnego = await p.lease('gss-spnego');
    expect(await spnego.step('YR x')).toMatch(/^TT \d+ gss-spnego$/);
    expect(p.size()).toBe(2);
    raw.release();
    spnego.release();
  });

  it('holds leases beyond the maximum until a process is released', async () => {
    const { pool: p } = pool('good');
    const a = await p.lease('ntlmssp');
    const b = await p.lease('ntlmssp');
    const aPid = pidOf(await a.step('YR x'));
    await b.step('YR x');
    let third: Awaited<ReturnType<NtlmPool['lease']>> | undefined;
    const waiting = p.lease('ntlmssp').then((l) => (third = l));
    await new Promise((r) => setTimeout(r, 30));
    expect(third).toBeUndefined();
    expect(p.size()).toBe(2);
    a.release();
    await waiting;
    expect(pidOf(await (third as NonNullable<typeof third>).step('YR x'))).toBe(aPid);
    b.release();
    third?.release();
  });

  it('refuses a lease when every process stays busy past the lease timeout', async () => {
    const { pool: p } = pool('good', { maxSpnego: 1, leaseTimeoutMs: 20 });
    const held = await p.lease('gss-spnego');
    await expect(p.lease('gss-spnego')).rejects.toThrow(
      'all 1 ntlm_auth (gss-spnego) processes stayed busy for 20 ms',
    );
    held.release();
  });

  it('replaces a process that answers garbage', async () => {
    const { pool: p, logs } = pool('garbage');
    const lease = await p.lease('ntlmssp');
    await expect(lease.step('YR x')).rejects.toThrow('answered "hello there", not TT, AF, NA or BH');
    lease.release();
    expect(p.size()).toBe(0);
    expect(logs.join('\n')).toMatch(/ntlm_auth \(ntlmssp\) pid \d+: answered "hello there"/);
  });

  it('replaces a process that dies mid-handshake; the next lease gets a fresh one', async () => {
    const { pool: p } = pool('diekk');
    const lease = await p.lease('ntlmssp');
    const pid = pidOf(await lease.step('YR x'));
    await expect(lease.step('KK y')).rejects.toThrow(/exited \(code 3\)/);
    lease.release();
    const next = await p.lease('ntlmssp');
    const again = pidOf(await next.step('YR x'));
    expect(again).not.toBe(pid);
    next.release();
  });

  it('kills a process whose reply line is longer than the cap', async () => {
    const { pool: p } = pool('long');
    const lease = await p.lease('ntlmssp');
    await expect(lease.step('YR x')).rejects.toThrow('wrote a line longer than 65536 bytes');
    lease.release();
    expect(p.size()).toBe(0);
  });

  it('kills a process that writes a line nobody asked for', async () => {
    const { pool: p } = pool('chatty');
    const lease = await p.lease('ntlmssp');
    await lease.step('YR x');
    for (let i = 0; i < 200 && p.size() > 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(p.size()).toBe(0);
    lease.release();
  });

  it('kills a process that does not answer in time', async () => {
    const { pool: p } = pool('silent', { stepTimeoutMs: 30 });
    const lease = await p.lease('ntlmssp');
    await expect(lease.step('YR x')).rejects.toThrow('did not answer within 30 ms');
    lease.release();
    expect(p.size()).toBe(0);
  });

  it('stops idle processes but keeps one warm per kind', async () => {
    const clock = new ManualClock();
    const { pool: p } = pool('good', { clock, idleMs: 1000, sweepMs: 5 });
    const a = await p.lease('ntlmssp');
    const b = await p.lease('ntlmssp');
    await a.step('YR x');
    await b.step('YR x');
    a.release();
    b.release();
    expect(p.size()).toBe(2);
    clock.advance(1001);
    for (let i = 0; i < 200 && p.size() > 1; i++) await new Promise((r) => setTimeout(r, 5));
    expect(p.size()).toBe(1);
  });

  it('closes: every process stopped, later leases refused', async () => {
    const { pool: p } = pool('good');
    (await p.lease('ntlmssp')).release();
    (await p.lease('gss-spnego')).release();
    await p.close();
    expect(p.size()).toBe(0);
    await expect(p.lease('ntlmssp')).rejects.toThrow('the ntlm_auth pool is closed');
  });

  it('refuses bad options, naming the field', () => {
    expect(() => pool('good', { maxNtlmssp: 0 })).toThrow(
      'maxNtlmssp: 0 is not a whole number of at least 1',
    );
  });
});
