#!/bin/bash
# What each Doorman process costs idle, and the whole product on a box: `doorman serve` started as root, as the
# README's quick start does (the web app, which gives up root; its privileged root child for the seamless
# screen, lib/seamless/privileged.ts; authd, started beside it as the service user), then SHIMS session shims
# (dist/bin/doorman-shim --concurrent, as Squid runs them) each answering one lookup. After IDLE seconds of
# rest: VmRSS and PSS (smaps_rollup: shared pages counted once) of each process, and the box's total with N
# Squid children per helper kind (session, Basic, group, Negotiate, NTLM: what a joined proxy with a directory
# runs), for the N given. Root, no Squid, no directory, no domain; a few seconds. Printed, never asserted.
#   bench/idle-memory.sh
# env: PORT=8193 IDLE=5 SHIMS=4 CHILDREN="1 5 20"
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
"$ROOT/scripts/build-native.sh" > /dev/null
[ "$(id -u)" = 0 ] || { echo "run as root (serve keeps a root child only when started as root)" >&2; exit 2; }
PORT=${PORT:-8193} IDLE=${IDLE:-5} SHIMS=${SHIMS:-4} CHILDREN=${CHILDREN:-1 5 20}
D=$SCRATCH/idle-memory
need_free_port "$PORT"
rm -rf "$D"; mkdir -p "$D"; chmod 755 "$SCRATCH" "$D"
cat > "$D/doorman.json" <<JSON
{
  "baseUrl": "http://127.0.0.1:$PORT/",
  "listen": [{ "host": "127.0.0.1", "port": $PORT }],
  "stateDir": "$D/state"
}
JSON
chmod 644 "$D/doorman.json"
SERVE=
# authd outlives serve by design: stopped here by the PID it runs under (found below), serve by its own
trap 'stop_pid "$SERVE"; [ -z "${AUTHD:-}" ] || stop_pid "$AUTHD"' EXIT
"$ROOT/bin/doorman" serve --config "$D/doorman.json" 2> "$D/serve.log" & SERVE=$!   # bin/doorman execs node
wait_port "$PORT"
wait_socket "$D/state/run/session.sock" "$D/serve.log"
AUTHD=$(pgrep -f "helpers/authd/main.js --config $D/doorman.json" | head -1 || true)
sleep "$IDLE"
echo "doorman serve as root on 127.0.0.1:$PORT, idle $IDLE s ($(git -C "$ROOT" rev-parse --short HEAD), Node $("$NODE" --version))"
PYTHONPATH=$BENCH/lib python3 - "$SERVE" "${AUTHD:-0}" "$ROOT/dist/bin/doorman-shim" "$D/state/run/session.sock" "$SHIMS" "$IDLE" $CHILDREN <<'PY'
import statistics, subprocess, sys, time
from procmem import children as kids, mem

def cmdline(pid):
    with open(f'/proc/{pid}/cmdline', 'rb') as f: return f.read().replace(b'\0', b' ').decode()

serve, authd, shim, sock, nshims, idle = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
children = [int(n) for n in sys.argv[7:]]

root_child = [p for p in kids(serve) if 'privileged' in cmdline(p)]
rows = [('doorman serve (web app, service user)', serve)]
rows += [('root child (seamless screen, root)', p) for p in root_child]
if authd: rows.append(('authd (service user)', authd))
for name, pid in rows:
    print(f'  {name:<40} pid {pid:>7}  RSS {mem(pid)[0] / 1024:6.1f} MB  PSS {mem(pid)[1] / 1024:6.1f} MB')
    print(f'  {"":<40} {cmdline(pid)[:110]}')
if not root_child: print('  (no root child found under serve)')

# shims with their own pipes, each answering one lookup (127.0.0.1 has no session: ERR), then idle
procs = [subprocess.Popen([shim, '--concurrent', sock], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) for _ in range(nshims)]
for p in procs:
    p.stdin.write(b'0 127.0.0.1 -\n'); p.stdin.flush()
answers = [p.stdout.readline().decode().strip() for p in procs]
time.sleep(min(idle, 2))
shim_mem = [mem(p.pid) for p in procs]
rss_shim = statistics.median(m[0] for m in shim_mem); pss_shim = statistics.median(m[1] for m in shim_mem)
print(f'  {"shim, each (median of %d; answered %s)" % (nshims, answers[0]):<40}             RSS {rss_shim / 1024:6.1f} MB  PSS {pss_shim / 1024:6.1f} MB')
for p in procs: p.stdin.close()
for p in procs: p.wait(timeout=15)

fixed = [mem(pid) for _, pid in rows]
kinds = 5
print(f'\nThe box (Squid and winbindd apart): serve + root child + authd + N shims per helper kind x {kinds} kinds')
print('  (the root child only when serve starts as root; an ntlm_auth pool of 6-8 processes, ~16 MB each, joins when NTLM is used)')
for n in children:
    rss = sum(m[0] for m in fixed) + kinds * n * rss_shim
    pss = sum(m[1] for m in fixed) + kinds * n * pss_shim
    print(f'  N = {n:>3}: {kinds * n:>4} shims  RSS summed {rss / 1024:7.1f} MB   PSS summed {pss / 1024:7.1f} MB')
PY
