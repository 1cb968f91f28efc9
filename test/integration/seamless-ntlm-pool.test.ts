import { spawn } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNtlmPool, type NtlmPool } from '../../helpers/authd/ntlm-pool.ts';
import { systemClock } from '../../lib/clock.ts';
import { createHandshake } from '../../lib/seamless/handshake.ts';
import { seamlessPaths } from '../../lib/seamless/paths.ts';
import { run } from '../harness/run.ts';
import { startSambaAd, type SambaAd } from '../harness/samba-ad.ts';
import { startSeamlessMember, type SeamlessMember } from '../harness/seamless-member.ts';
import { GSS_NTLMSSP_MECH_CONFIG } from '../harness/gss-ntlmssp.ts';

/**
 * The ntlm_auth pool against Samba's real ntlm_auth on a member joined with `doorman seamless enable`, run as
 * Squid's user (proxy) the way authd runs it, driven through the real Handshake: checks the reply layouts
 * ntlm-auth-reply.ts reads (squid-2.5-ntlmssp `TT`/`AF user`/`NA reason`, gss-spnego `TT tok *`/`AF tok user`/
 * `NA * reason`), and that gss-spnego does NTLM inside SPNEGO as proxy with the member's private/ (the
 * machine secret) unreadable: it needs winbindd's privileged pipe only.
 * Clients: python3-ntlm-auth for raw NTLMSSP, python3-gssapi + gss-ntlmssp for SPNEGO.
 */
let ad: SambaAd;
let member: SeamlessMember;
let pool: NtlmPool;
let wrapper: string;
let opensslConf: string;
const logs: string[] = [];

/** A client that prints its first token, then answers each server token read on stdin with its next one. */
const CLIENT = `
import sys, os, base64
mode = sys.argv[1]
if mode == 'ntlmssp':
    from ntlm_auth.ntlm import NtlmContext
    c = NtlmContext(os.environ['NTLM_USER'], os.environ['NTLM_PASS'], domain='EXAMPLE', workstation='CLIENT1', ntlm_compatibility=3)
else:
    import gssapi
    c = gssapi.SecurityContext(name=gssapi.Name('HTTP@proxy.example.test', gssapi.NameType.hostbased_service),
                               usage='initiate', mech=gssapi.OID.from_int_seq('1.3.6.1.5.5.2'))
print(base64.b64encode(c.step(None)).decode(), flush=True)
for line in sys.stdin:
    out = c.step(base64.b64decode(line.strip()))
    print(base64.b64encode(out or b'').decode() or '-', 'complete' if getattr(c, 'complete', True) else 'open', flush=True)
`;

beforeAll(async () => {
  ad = await startSambaAd();
  member = await startSeamlessMember(ad);
  const enabled = await member.enable();
  expect(enabled.code, enabled.stdout + enabled.stderr).toBe(0);
  // ntlm_auth as authd runs it: user proxy, in the member's mount namespace (its /run/samba: libwbclient has
  // the winbindd socket directory compiled in).
  wrapper = join(member.dir, 'ntlm_auth-as-proxy');
  writeFileSync(
    wrapper,
    `#!/bin/sh
exec unshare -m --propagation private sh -c 'mount --bind "$0/hosts" /etc/hosts && mount --bind "$0/resolv.conf" /etc/resolv.conf && mount --bind "$0/run-samba" /run/samba && exec setpriv --reuid=proxy --regid=proxy --init-groups /usr/bin/ntlm_auth "$@"' ${member.dir} "$@"
`,
  );
  chmodSync(wrapper, 0o755);
  opensslConf = join(member.dir, 'openssl-legacy.cnf');
  // python3-ntlm-auth needs MD4, which OpenSSL 3 keeps in its legacy provider (lab §6.4).
  writeFileSync(
    opensslConf,
    'openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n[provider_sect]\ndefault = default_sect\nlegacy = legacy_sect\n[default_sect]\nactivate = 1\n[legacy_sect]\nactivate = 1\n',
  );
  pool = createNtlmPool({
    smbConf: seamlessPaths({ stateDir: member.stateDir, sambaDir: null }).smbConf,
    ntlmAuth: wrapper,
    maxNtlmssp: 2,
    maxSpnego: 1,
    idleMs: 60_000,
    log: (line) => logs.push(line),
  });
}, 180_000);
afterAll(async () => {
  await pool?.close();
  await member?.stop();
  await ad?.stop();
});

function client(mode: 'ntlmssp' | 'spnego', password: string) {
  const usersFile = join(member.dir, `ntlm-users-${password.length}`);
  writeFileSync(usersFile, `EXAMPLE:alice:${password}\n`);
  const child = spawn('/usr/bin/python3', ['-c', CLIENT, mode], {
    env: {
      ...process.env,
      NTLM_USER: 'alice',
      NTLM_PASS: password,
      NTLM_USER_FILE: usersFile,
      KRB5CCNAME: 'FILE:/nonexistent/ccache',
      OPENSSL_CONF: opensslConf,
      GSS_MECH_CONFIG: GSS_NTLMSSP_MECH_CONFIG,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    async next(): Promise<string> {
      const { value, done } = await lines.next();
      if (done === true) throw new Error(`the client ended: ${stderr}`);
      return value as string;
    },
    send: (token: string) => child.stdin.write(`${token}\n`),
    end: () => child.stdin.end(),
  };
}

const handshake = (scheme: 'negotiate' | 'ntlm') =>
  createHandshake({
    scheme,
    names: { realm: 'EXAMPLE.TEST', netbios: 'EXAMPLE' },
    kerberos: { accept: () => Promise.reject(new Error('no Kerberos in this test')) },
    ntlm: pool,
    clock: systemClock,
    leaseMaxMs: 30_000,
  });

/** A handshake whose client has a wrong password: the reply to its second leg. */
async function wrongPassword(scheme: 'negotiate' | 'ntlm', mode: 'ntlmssp' | 'spnego'): Promise<string> {
  const machine = handshake(scheme);
  const c = client(mode, 'wrong');
  try {
    const tt = await machine.handle(`YR ${await c.next()}`);
    c.send(tt.slice(3, -1));
    return await machine.handle(`KK ${(await c.next()).split(' ')[0]}`);
  } finally {
    c.end();
    await machine.close();
  }
}

describe('the ntlm_auth pool on a joined member, as user proxy', () => {
  it("leaves the member's private/ unreadable by proxy (what the gss-spnego route must do without)", async () => {
    const secrets = join(
      seamlessPaths({ stateDir: member.stateDir, sambaDir: null }).sambaDir,
      'private',
      'secrets.tdb',
    );
    const read = await run(
      'setpriv',
      ['--reuid=proxy', '--regid=proxy', '--init-groups', 'head', '-c1', secrets],
      {
        allowFailure: true,
      },
    );
    expect(read.code).not.toBe(0);
  });

  it('raw NTLM (the NTLM scheme): TT, then OK user=alice; the process is reused', async () => {
    for (let i = 0; i < 3; i++) {
      const machine = handshake('ntlm');
      const c = client('ntlmssp', 'Passw0rd!');
      const tt = await machine.handle(`YR ${await c.next()}`);
      expect(tt).toMatch(/^TT TlRMTVNTUAAC\S+\n$/);
      c.send(tt.slice(3, -1));
      expect(await machine.handle(`KK ${(await c.next()).split(' ')[0]}`)).toBe('OK user=alice\n');
      c.end();
      await machine.close();
    }
    expect(logs.filter((l) => l.includes('replaced'))).toEqual([]);
    expect(pool.size()).toBe(1);
  });

  it("raw NTLM with a wrong password: ERR with ntlm_auth's reason", async () => {
    expect(await wrongPassword('ntlm', 'ntlmssp')).toBe('ERR message=NT_STATUS_LOGON_FAILURE\n');
  });

  it('NTLM inside SPNEGO (Negotiate): TT negTokenResp, then OK with the final token the client accepts', async () => {
    const machine = handshake('negotiate');
    const c = client('spnego', 'Passw0rd!');
    const tt = await machine.handle(`YR ${await c.next()}`);
    expect(tt).toMatch(/^TT oY\S+\n$/);
    c.send(tt.slice(3, -1));
    const ok = await machine.handle(`KK ${(await c.next()).split(' ')[0]}`);
    const match = /^OK token=(oR\S+) user=alice\n$/.exec(ok);
    expect(match, ok).not.toBeNull();
    // The client checks the accept-completed token and its mechListMIC.
    c.send(match?.[1] ?? '');
    expect(await c.next()).toMatch(/ complete$/);
    c.end();
    await machine.close();
  });

  it('NTLM inside SPNEGO with a wrong password: ERR', async () => {
    expect(await wrongPassword('negotiate', 'spnego')).toBe('ERR message=NT_STATUS_LOGON_FAILURE\n');
  });
});
