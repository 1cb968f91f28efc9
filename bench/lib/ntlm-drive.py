#!/usr/bin/python3
# ntlm-drive.py COUNT -- HELPER_CMD...: COUNT raw NTLM handshakes (python3-ntlm-auth NtlmContext, NTLMv2) over ONE
# helper process, the sequential stateful protocol: "YR <negotiate>" -> "TT <challenge>", "KK <authenticate>" ->
# "AF <user>" (ntlm_auth) or "OK user=<user>" (Doorman). Adapted from the lab's ntlm_drive.py. Prints one JSON line.
# Env: NTLM_DOMAIN, NTLM_USER, NTLM_PASS; OPENSSL_CONF with the legacy provider (MD4).
import json, os, sys, time, base64, subprocess
from ntlm_auth.ntlm import NtlmContext
count = int(sys.argv[1]); cmd = sys.argv[sys.argv.index('--') + 1:]
dom, user, pw = os.environ['NTLM_DOMAIN'], os.environ['NTLM_USER'], os.environ['NTLM_PASS']
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
def ask(line):
    p.stdin.write(line + '\n'); p.stdin.flush(); return p.stdout.readline().rstrip('\n')
lat = []; ok = 0; other = {}
t = time.time()
for _ in range(count):
    c = NtlmContext(user, pw, domain=dom, workstation='CLIENT1', ntlm_compatibility=3)
    t0 = time.perf_counter()
    a = ask('YR ' + base64.b64encode(c.step()).decode())
    if a.startswith('TT '):
        a = ask('KK ' + base64.b64encode(c.step(base64.b64decode(a.split()[1]))).decode())
    lat.append((time.perf_counter() - t0) * 1e6)
    if a.startswith('AF ') or a.startswith('OK '): ok += 1
    else: other[a[:40]] = other.get(a[:40], 0) + 1
dt = time.time() - t
lat.sort()
print(json.dumps({'handshakes': count, 'ok': ok, 'other': other, 'seconds': round(dt, 3), 'per_sec': count / dt,
                  'p50_us': lat[len(lat) // 2], 'p99_us': lat[min(len(lat) - 1, int(len(lat) * 0.99))]}))
p.stdin.close(); p.wait()
