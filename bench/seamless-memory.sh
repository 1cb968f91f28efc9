#!/bin/bash
# Memory of the seamless architecture (docs/seamless-design.md §1): one authd (dist/helpers/authd/main.js, as
# `doorman serve` starts it) and one dist/bin/doorman-shim per Squid child, each with its own pipes as Squid
# gives them: NEGOTIATE (20) + NTLM (20) non-concurrent shims and SESSION (2) + BASIC (5) + GROUP (2)
# --concurrent ones. No Squid, no domain controller: the proxy is recorded as joined (a seamless state in the
# DB and a member smb.conf), so NTLM requests start authd's ntlm_auth pool (squid-2.5-ntlmssp answers the
# first leg, TT, on its own); Negotiate requests carry a raw NTLM token too (Kerberos needs a KDC: see
# bench/seamless-kerberos.sh). Basic and group answer BH (no directory applied): what is measured is the
# process, not the directory.
#   bench/seamless-memory.sh
# Prints, for each group of processes, the count and the RSS and PSS summed (PSS counts shared pages once);
# authd before and after the traffic; and the time from spawning a new shim to its first answer (session
# lookups, then NTLM first legs), median and max over the shims started. Printed, never asserted.
# env: NEGOTIATE=20 NTLM=20 SESSION=2 BASIC=5 GROUP=2
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
"$ROOT/scripts/build-native.sh"
export NEGOTIATE=${NEGOTIATE:-20} NTLM=${NTLM:-20} SESSION=${SESSION:-2} BASIC=${BASIC:-5} GROUP=${GROUP:-2}
D=$SCRATCH/seamless-memory
rm -rf "$D"; mkdir -p "$D/state" "$D/state-samba"
echo "{ \"stateDir\": \"$D/state\" }" > "$D/doorman.json"
echo "session DB: $("$NODE" "$BENCH/lib/make-sessions.ts" --db "$D/state/doorman.db" --count 1000)"
# Joined, as far as authd can tell: the state Enable saves, and the smb.conf it writes.
(cd "$ROOT" && "$NODE" --input-type=module -e "
  import { openDatabase } from './lib/store/database.ts';
  import { SeamlessSettingsStore } from './lib/store/seamless-settings-store.ts';
  import { memberSmbConf } from './lib/seamless/samba-config.ts';
  import { systemClock } from './lib/clock.ts';
  import { writeFileSync } from 'node:fs';
  const db = openDatabase('$D/state/doorman.db');
  new SeamlessSettingsStore(db, { clock: systemClock }).save({ serverVersion: '2012', domain: 'example.test',
    realm: 'EXAMPLE.TEST', netbios: 'EXAMPLE', adminUser: 'Administrator', proxyFqdn: 'proxy.example.test',
    machineName: 'PROXY', joinedAt: Date.now() });
  db.close();
  writeFileSync('$D/state-samba/smb.conf', memberSmbConf({ serverVersion: '2012', netbiosDomain: 'EXAMPLE',
    realm: 'EXAMPLE.TEST', proxyHostName: 'proxy.example.test', sambaDir: '$D/state-samba' }));
")
mkdir -p "$D/state-samba/"{private,lock,state,cache,run,log}

# authd as serve starts it (helpers/authd/supervisor.ts): the flags and environment it gets there.
KRB5_KTNAME=FILE:$D/state-samba/http.keytab KRB5_CONFIG=$D/state-samba/krb5.conf KRB5RCACHEDIR=$D/state/rcache \
  GSS_MECH_CONFIG=/dev/null UV_THREADPOOL_SIZE=4 \
  "$NODE" --max-semi-space-size=2 "$ROOT/dist/helpers/authd/main.js" --config "$D/doorman.json" 2> "$D/authd.log" &
AUTHD=$!
trap 'stop_pid "$AUTHD" || true' EXIT
wait_socket "$D/state/run/ntlm.sock" "$D/authd.log"

PYTHONPATH=$BENCH/lib python3 - "$ROOT/dist/bin/doorman-shim" "$D/state/run" "$AUTHD" <<'EOF'
import os, statistics, subprocess, sys, time
from procmem import children, mem
shim, run, authd = sys.argv[1], sys.argv[2], int(sys.argv[3])
NTLM_NEGOTIATE = 'TlRMTVNTUAABAAAABoIIAAAAAAAAAAAAAAAAAAAAAAA='

def row(name, pids):
    rs = [mem(p) for p in pids]
    rss, pss = sum(r for r, _ in rs), sum(p for _, p in rs)
    print(f'  {name:<34} {len(pids):>3}  RSS {rss / 1024:7.1f} MB  PSS {pss / 1024:7.1f} MB')
    return rss, pss

print('authd idle, before any connection:')
row('authd', [authd])

# A type-3 message no DC will accept: ends the handshake (ERR or BH), so its ntlm_auth lease goes back to the
# pool and the next child's first answer does not wait for one (the pool holds 6 + 2 processes at most: helpers/authd/seamless-service.ts).
AUTHENTICATE = 'TlRMTVNTUAADAAAAGAAYAEAAAAAYABgAWAAAAAAAAABwAAAAAAAAAHAAAAAAAAAAcAAAAAAAAABwAAAABYKIogAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
shims, firsts, lasts = [], {}, {}
def start(kind, concurrent, line, n, then=None):
    for i in range(n):
        t0 = time.perf_counter()
        args = [shim] + (['--concurrent'] if concurrent else []) + [f'{run}/{kind}.sock']
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        p.stdin.write((line + '\n').encode()); p.stdin.flush()
        answer = p.stdout.readline().decode().strip()
        firsts.setdefault(kind, []).append((time.perf_counter() - t0) * 1000)
        if i == 0: print(f'  first answer on {kind + ".sock":<15} {answer[:60]}')
        if then is not None:
            p.stdin.write((then + '\n').encode()); p.stdin.flush()
            lasts.setdefault(kind, set()).add(p.stdout.readline().decode().split(' ')[0].strip())
        shims.append((kind, p))

print('spawning the shims (one request each, as Squid starts a child and sends it one):')
start('session', True, '1 10.0.0.1 -', int(os.environ['SESSION']))
start('basic', True, '1 alice secret', int(os.environ['BASIC']))
start('group', True, '1 alice Staff', int(os.environ['GROUP']))
start('ntlm', False, f'YR {NTLM_NEGOTIATE}', int(os.environ['NTLM']), f'KK {AUTHENTICATE}')
start('negotiate', False, f'YR {NTLM_NEGOTIATE}', int(os.environ['NEGOTIATE']), f'KK {AUTHENTICATE}')
print(f'  second legs (no DC to accept them) answered: {lasts}')
time.sleep(1)

print('memory with every child connected, after one NTLM handshake on each stateful child:')
pool = [c for c in children(authd)]
total = [0, 0]
for name, pids in [('shims ' + '/'.join(f'{k}' for k in ['session', 'basic', 'group', 'ntlm', 'negotiate']),
                    [p.pid for _, p in shims]),
                   ('authd', [authd]),
                   ('ntlm_auth pool (authd children)', pool)]:
    if not pids: print(f'  {name:<34}   0'); continue
    r, s = row(name, pids)
    total[0] += r; total[1] += s
print(f'  {"total":<34}      RSS {total[0] / 1024:7.1f} MB  PSS {total[1] / 1024:7.1f} MB')

# The pool at its largest: handshakes left open on 6 NTLM children hold 6 squid-2.5-ntlmssp processes.
held = [p for k, p in shims if k == 'ntlm'][:6]
for p in held:
    p.stdin.write(f'YR {NTLM_NEGOTIATE}\n'.encode()); p.stdin.flush(); p.stdout.readline()
print('with 6 NTLM handshakes open at once (ntlm_auth pool at its squid-2.5-ntlmssp maximum):')
row('ntlm_auth pool (authd children)', children(authd))
row('authd', [authd])
for p in held:
    p.stdin.write(f'KK {AUTHENTICATE}\n'.encode()); p.stdin.flush(); p.stdout.readline()

# Later children of a kind (what Squid starts under load): authd is warm, the DB and modules loaded.
more = len(shims)
start('session', True, '1 10.0.0.1 -', 20)
firsts['session, 20 more'] = firsts['session'][-20:]
firsts['session'] = firsts['session'][:-20]
for _, p in shims[more:]: p.stdin.close(); p.wait()
shims = shims[:more]

print('spawn -> first answer of a new shim child (ms; the first of a kind also opens the DB or loads modules):')
for kind, ms in firsts.items():
    print(f'  {kind:<18} n={len(ms):>2}  median {statistics.median(ms):6.2f}  max {max(ms):6.2f}')

for _, p in shims: p.stdin.close()
for _, p in shims: p.wait()
EOF
echo "authd log (last lines):"; tail -n 5 "$D/authd.log"
