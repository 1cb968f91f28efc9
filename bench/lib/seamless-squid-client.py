#!/usr/bin/python3
# seamless-squid-client.py MODE PROXY_HOST PROXY_PORT URL ...: NTLM handshakes over HTTP through a Squid proxy, as
# a browser makes them: on ONE keep-alive connection, `GET URL` with `Proxy-Authorization: NTLM <negotiate>` ->
# 407 with the challenge, the same request with `NTLM <authenticate>` -> 200. Squid ties a connection's NTLM
# credentials to the connection (a later type-1 on it is not asked of the helper), so every handshake opens a new
# connection and closes it after the 200. Client: python3-ntlm-auth (NtlmContext, NTLMv2), as bench/lib/ntlm-drive.py.
# Env: NTLM_DOMAIN, NTLM_USER, NTLM_PASS; OPENSSL_CONF with the legacy provider (MD4). Prints one JSON line.
#   rate C SECONDS WARMUP : C client processes, each handshakes in a loop; those completed in the SECONDS after
#                           WARMUP are counted (handshakes/s, latency of the whole handshake incl. connect)
#   spawn K               : K handshakes left open one after the other (type-1 answered, type-3 not sent yet),
#                           each first leg timed, then all completed; again with the children now started
#   hold K SECONDS        : K handshakes left open at once for SECONDS (the helpers they hold stay reserved)
#   krate C SECONDS WARMUP: as rate, but Kerberos: one `Proxy-Authorization: Negotiate <token>` -> 200, a fresh
#                           SPNEGO/Kerberos token (python3-gssapi, a new context: a new authenticator) every
#                           time, from the ticket in KRB5CCNAME (its HTTP/ service ticket fetched beforehand)
import base64, json, multiprocessing, os, socket, sys, time

mode, host, port, url = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
args = sys.argv[5:]
dom, user, pw = os.environ.get('NTLM_DOMAIN'), os.environ.get('NTLM_USER'), os.environ.get('NTLM_PASS')
if mode == 'krate':
    import gssapi
    SPN = gssapi.Name('HTTP@proxy.example.test', gssapi.NameType.hostbased_service)
    SPNEGO = gssapi.OID.from_int_seq('1.3.6.1.5.5.2')
else:
    from ntlm_auth.ntlm import NtlmContext
hostport = url.split('/')[2]


class Conn:
    def __init__(self):
        self.s = socket.create_connection((host, port), timeout=30)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b''

    def _fill(self):
        d = self.s.recv(65536)
        if not d: raise ConnectionError('closed by the proxy')
        self.buf += d

    def ask(self, token, scheme='NTLM'):
        """One request with a token; returns (status, the Proxy-Authenticate NTLM token or None)."""
        self.s.sendall((f'GET {url} HTTP/1.1\r\nHost: {hostport}\r\nProxy-Connection: keep-alive\r\n'
                        f'Proxy-Authorization: {scheme} {token}\r\n\r\n').encode())
        while b'\r\n\r\n' not in self.buf: self._fill()
        head, self.buf = self.buf.split(b'\r\n\r\n', 1)
        lines = head.decode('latin-1').split('\r\n')
        status = int(lines[0].split()[1])
        length, chunked, challenge = 0, False, None
        for line in lines[1:]:
            name, _, value = line.partition(':'); name = name.lower(); value = value.strip()
            if name == 'content-length': length = int(value)
            elif name == 'transfer-encoding' and 'chunked' in value.lower(): chunked = True
            elif name == 'proxy-authenticate' and value.startswith('NTLM '): challenge = value[5:]
        if chunked:
            while True:
                while b'\r\n' not in self.buf: self._fill()
                size_line, self.buf = self.buf.split(b'\r\n', 1)
                size = int(size_line.split(b';')[0], 16)
                while len(self.buf) < size + 2: self._fill()
                self.buf = self.buf[size + 2:]
                if size == 0: break
        else:
            while len(self.buf) < length: self._fill()
            self.buf = self.buf[length:]
        return status, challenge

    def close(self):
        self.s.close()


def first_leg():
    c = NtlmContext(user, pw, domain=dom, workstation='CLIENT1', ntlm_compatibility=3)
    conn = Conn()
    t0 = time.perf_counter()
    status, challenge = conn.ask(base64.b64encode(c.step()).decode())
    return c, conn, status, challenge, time.perf_counter() - t0


def second_leg(c, conn, challenge):
    status, _ = conn.ask(base64.b64encode(c.step(base64.b64decode(challenge))).decode())
    return status


def handshake():
    """One whole handshake on a new connection: the final status (200 expected) or a short error."""
    try:
        c, conn, status, challenge, _ = first_leg()
        try:
            if status != 407 or challenge is None: return f'first leg {status}'
            return second_leg(c, conn, challenge)
        finally:
            conn.close()
    except (OSError, ValueError) as e:
        return type(e).__name__


def kerberos():
    """One Kerberos authentication on a new connection: the final status (200 expected) or a short error."""
    try:
        token = gssapi.SecurityContext(name=SPN, usage='initiate', mech=SPNEGO).step()
        conn = Conn()
        try:
            return conn.ask(base64.b64encode(token).decode(), 'Negotiate')[0]
        finally:
            conn.close()
    except (OSError, ValueError, gssapi.exceptions.GSSError) as e:
        return type(e).__name__


def worker(seconds, warmup, out, once):
    start = time.perf_counter(); begin = start + warmup; end = begin + seconds
    lat, results = [], {}
    while True:
        t0 = time.perf_counter()
        if t0 >= end: break
        r = once()
        t1 = time.perf_counter()
        if t0 >= begin and t1 <= end:
            lat.append((t1 - t0) * 1e6); results[str(r)] = results.get(str(r), 0) + 1
    out.put((lat, results))


if mode in ('rate', 'krate'):
    n, seconds, warmup = int(args[0]), float(args[1]), float(args[2])
    q = multiprocessing.Queue()
    once = kerberos if mode == 'krate' else handshake
    procs = [multiprocessing.Process(target=worker, args=(seconds, warmup, q, once)) for _ in range(n)]
    for p in procs: p.start()
    got = [q.get() for _ in procs]
    for p in procs: p.join()
    lat = sorted(x for l, _ in got for x in l); results = {}
    for _, r in got:
        for k, v in r.items(): results[k] = results.get(k, 0) + v
    ok = results.get('200', 0)
    print(json.dumps({'clients': n, 'seconds': seconds, 'handshakes': len(lat), 'ok': ok, 'results': results,
                      'per_sec': ok / seconds, 'p50_us': lat[len(lat) // 2] if lat else None,
                      'p99_us': lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None}))
elif mode == 'spawn':
    k = int(args[0]); rounds = []
    for _ in range(2):
        held, ms = [], []
        for _ in range(k):
            c, conn, status, challenge, dt = first_leg()
            held.append((c, conn, challenge)); ms.append(round(dt * 1000, 2))
            if status != 407 or challenge is None: ms[-1] = f'status {status}'
        finals = [second_leg(c, conn, ch) if ch else None for c, conn, ch in held]
        for _, conn, _ in held: conn.close()
        rounds.append({'first_leg_ms': ms, 'finals': finals})
    print(json.dumps({'held': k, 'new_children': rounds[0], 'started_children': rounds[1]}))
elif mode == 'hold':
    k, seconds = int(args[0]), float(args[1])
    held = [first_leg() for _ in range(k)]
    print(json.dumps({'held': k, 'first_leg_status': [h[2] for h in held]}), flush=True)
    time.sleep(seconds)
    finals = [second_leg(c, conn, ch) if ch else None for c, conn, _, ch, _ in held]
    for h in held: h[1].close()
    print(json.dumps({'finals': finals}))
else:
    sys.exit(f'unknown mode {mode!r}: rate, krate, spawn or hold')
