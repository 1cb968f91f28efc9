import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/clock.ts';
import type { ReqmodRequest } from '../../../icap-server/parser.ts';
import {
  errorResponse,
  httpResponse,
  noContentResponse,
  optionsResponse,
  unchangedRequest,
} from '../../../icap-server/serializer.ts';
import {
  createIcapServer,
  type Decision,
  type IcapServer,
  type IcapServerOptions,
} from '../../../icap-server/server.ts';
import { sharedSlots, slotCounter } from '../../../icap-server/slots.ts';
import { chunks, httpHead, options, reqmod, SQUID_ICAP_HEADERS } from './fixtures.ts';
import { client, ManualTimers } from './socket-harness.ts';

const IDLE = 5000;
/** A connection not yet proven (every test's first request proves it, unless the test says otherwise). */
const UNPROVEN = 800;
const HEADER = 1000;
const DECISION = 3000;
const REQUEST = 2000;
const LINGER = 700;
const clock = new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5));
const settings = { service: 'Doorman captive portal', maxConnections: 4, optionsTtl: 300 };
const REDIRECT = { status: 302, headers: { Location: 'http://portal.example/' } };

let server: IcapServer | undefined;
let timers: ManualTimers;
let istag = 'v1';
const logged: string[] = [];

async function start(
  decide: IcapServerOptions['decide'],
  extra: Partial<IcapServerOptions> = {},
): Promise<number> {
  timers = new ManualTimers();
  istag = 'v1';
  logged.length = 0;
  server = createIcapServer({
    decide,
    istag: () => istag,
    maxConnections: settings.maxConnections,
    maxConnectionsPerAddress: settings.maxConnections,
    proves: () => true,
    idleTimeoutMs: IDLE,
    unprovenIdleTimeoutMs: UNPROVEN,
    headerTimeoutMs: HEADER,
    requestTimeoutMs: REQUEST,
    decisionTimeoutMs: DECISION,
    refusedLingerMs: LINGER,
    clock,
    timers,
    log: (line) => logged.push(line),
    ...extra,
  });
  return (await server.listen(0, '127.0.0.1')).port;
}

afterEach(async () => {
  const closing = server?.close();
  // Connections a test left open close once their timers run.
  timers?.fire(IDLE);
  timers?.fire(UNPROVEN);
  timers?.fire(REQUEST);
  timers?.fire(HEADER);
  await closing;
  server = undefined;
});

const stamp = () => ({ istag, now: clock.now() });
const count = (text: string, needle: string) => text.split(needle).length - 1;
const answers = (n: number) => (text: string) => count(text, 'ICAP/1.0 ') >= n && text.endsWith('\r\n\r\n');

/** A promise with its resolve, for decisions the test settles when it chooses. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const byUrl = (request: ReqmodRequest): Decision =>
  request.http.target.includes('/login-please') ? { kind: 'respond', ...REDIRECT } : { kind: 'no-change' };

describe('the ICAP server over a real socket', () => {
  it('answers pipelined requests on one connection in order, one at a time', async () => {
    const slow = deferred<Decision>();
    const started: string[] = [];
    const port = await start((request) => {
      started.push(request.http.target);
      return request.http.target.includes('slow') ? slow.promise : byUrl(request);
    });
    const c = await client(port);
    c.socket.write(
      options() +
        reqmod({ url: 'http://a.example/slow' }) +
        reqmod({ url: 'http://a.example/login-please' }) +
        reqmod({ method: 'POST', url: 'http://a.example/form', body: chunks([]) }),
    );
    await c.until(answers(1));
    await new Promise((resolve) => setImmediate(resolve));
    // The slow decision holds the connection: the requests behind it are not even started.
    expect(started).toEqual(['http://a.example/slow']);
    slow.resolve({ kind: 'no-change' });
    const text = await c.until(answers(4));
    expect(text).toBe(
      Buffer.concat([
        optionsResponse(stamp(), settings),
        noContentResponse(stamp()),
        httpResponse(stamp(), REDIRECT),
        noContentResponse(stamp()),
      ]).toString('latin1'),
    );
    expect(started).toEqual([
      'http://a.example/slow',
      'http://a.example/login-please',
      'http://a.example/form',
    ]);
    expect(c.isClosed()).toBe(false);
  });

  it('serves many requests on one connection, each written when the previous is answered', async () => {
    const port = await start(byUrl);
    const c = await client(port);
    for (let i = 1; i <= 5; i++) {
      c.socket.write(reqmod({ url: `http://a.example/${i}` }));
      await c.until(answers(i));
    }
    expect(count(c.received(), 'ICAP/1.0 204 No Content')).toBe(5);
  });

  it('sends the request back when the client does not take 204', async () => {
    const port = await start(byUrl);
    const c = await client(port);
    c.socket.write(reqmod({ icapHeaders: [], method: 'PUT', body: chunks(['hello']) }));
    const text = await c.until((t) => t.endsWith('0\r\n\r\n'));
    expect(text).toBe(
      unchangedRequest(stamp(), Buffer.from(httpHead({ method: 'PUT' })), Buffer.from('hello')).toString(
        'latin1',
      ),
    );
  });

  it('shows a new ISTag as soon as the source gives one', async () => {
    const port = await start(byUrl);
    const c = await client(port);
    c.socket.write(options());
    await c.until(answers(1));
    istag = 'v2';
    c.socket.write(options());
    const text = await c.until(answers(2));
    expect(count(text, 'ISTag: "v1"')).toBe(1);
    expect(count(text, 'ISTag: "v2"')).toBe(1);
  });

  it('answers 404 for another service, and closes (as after every error answer)', async () => {
    const port = await start(byUrl);
    const c = await client(port);
    c.socket.write(reqmod({ service: '/respmod' }) + reqmod());
    await c.closed;
    expect(c.received()).toBe(errorResponse(stamp(), 404, true).toString('latin1'));
  });

  it('answers 500 when the decision fails, then closes; other connections go on', async () => {
    const port = await start((request) => {
      if (request.http.target.includes('throw')) throw new Error('portal settings unreadable');
      return byUrl(request);
    });
    const c = await client(port);
    const other = await client(port);
    c.socket.write(reqmod({ url: 'http://a/throw' }) + reqmod());
    await c.closed;
    expect(c.received()).toBe(errorResponse(stamp(), 500, true).toString('latin1'));
    expect(logged.join('\n')).toContain('internal error: portal settings unreadable');
    other.socket.write(reqmod());
    await other.until(answers(1));
  });

  it('answers a malformed message with its error and closes only that connection', async () => {
    const port = await start(byUrl);
    const good = await client(port);
    const bad = await client(port);
    bad.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await bad.closed;
    expect(bad.received()).toBe(errorResponse(stamp(), 400, true).toString('latin1'));
    good.socket.write(options());
    await good.until(answers(1));
    expect(good.isClosed()).toBe(false);
  });

  it('answers RESPMOD 405 and closes that connection', async () => {
    const port = await start(byUrl);
    const c = await client(port);
    c.socket.write('RESPMOD icap://h/reqmod ICAP/1.0\r\nEncapsulated: res-hdr=0, res-body=10\r\n\r\n');
    await c.closed;
    expect(c.received()).toBe(errorResponse(stamp(), 405, true).toString('latin1'));
  });

  it('does not let a client that stalls mid-message block another; it gets 408 at the header deadline', async () => {
    const port = await start(byUrl);
    const stalled = await client(port);
    const message = reqmod();
    stalled.socket.write(message.slice(0, 40));
    const other = await client(port);
    other.socket.write(options() + reqmod({ url: 'http://a/login-please' }));
    await other.until(answers(2));
    expect(stalled.received()).toBe('');
    // Bytes trickling in do not move the deadline: no new header timer is set for them.
    const headerTimersSet = timers.armed.get(HEADER);
    stalled.socket.write(message.slice(40, 41));
    // Loopback delivers the byte to the server within this (the wait bounds nothing that is asserted).
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(timers.armed.get(HEADER)).toBe(headerTimersSet);
    expect(timers.fire(HEADER)).toBe(1);
    await stalled.closed;
    expect(stalled.received()).toBe(errorResponse(stamp(), 408, true).toString('latin1'));
    other.socket.write(options());
    await other.until(answers(3));
  });

  it('does not let a decision that hangs block another connection; it is answered 500 at the deadline', async () => {
    const asked = deferred<true>();
    const port = await start((request) => {
      if (!request.http.target.includes('hang')) return byUrl(request);
      asked.resolve(true);
      return new Promise<Decision>(() => {});
    });
    const hung = await client(port);
    hung.socket.write(reqmod({ url: 'http://a/hang' }));
    await asked.promise;
    const other = await client(port);
    other.socket.write(reqmod());
    await other.until(answers(1));
    expect(hung.received()).toBe('');
    expect(timers.fire(DECISION)).toBe(1);
    await hung.closed;
    expect(hung.received()).toBe(errorResponse(stamp(), 500, true).toString('latin1'));
    expect(logged.join('\n')).toContain(`no decision after ${DECISION} ms`);
  });

  it('closes an idle connection quietly after the idle timeout', async () => {
    const port = await start(byUrl);
    const c = await client(port);
    c.socket.write(options());
    await c.until(answers(1));
    expect(timers.fire(IDLE)).toBe(1);
    await c.closed;
    expect(count(c.received(), 'ICAP/1.0')).toBe(1);
  });

  it('refuses connections over Max-Connections with 503', async () => {
    const port = await start(byUrl);
    const open = [];
    for (let i = 0; i < settings.maxConnections; i++) open.push(await client(port));
    while ((server?.connections ?? 0) < settings.maxConnections) await new Promise((r) => setImmediate(r));
    const extra = await client(port);
    await extra.closed;
    expect(extra.received()).toBe(errorResponse(stamp(), 503, true).toString('latin1'));
    open[0]?.socket.write(options());
    await open[0]?.until(answers(1));
  });

  it('holds connections, unread, until it is ready (a thread that may not open the DB yet), then answers', async () => {
    const ready = deferred<true>();
    const port = await start(byUrl, { ready: ready.promise });
    const c = await client(port);
    c.socket.write(options());
    while ((await accepted()) < 1) await new Promise((r) => setImmediate(r));
    // Accepted by the kernel and Node, not taken on as a connection: nothing read, nothing answered.
    expect(server?.connections).toBe(0);
    expect(c.received()).toBe('');
    ready.resolve(true);
    await c.until(answers(1));
    expect(c.received()).toBe(optionsResponse(stamp(), settings).toString('latin1'));
  });

  it('counts connections together with other servers sharing its slots (worker threads on one port)', async () => {
    const counter = slotCounter();
    const port = await start(byUrl, { slots: sharedSlots(counter, 2, 2) });
    // Another server (another thread, in serve) holding the same counter has one connection open.
    const other = createIcapServer({
      decide: byUrl,
      istag: () => istag,
      slots: sharedSlots(counter, 2, 2),
      timers,
    });
    const otherPort = (await other.listen(0, '127.0.0.1')).port;
    try {
      const there = await client(otherPort);
      there.socket.write(options());
      await there.until(answers(1));
      const first = await client(port);
      first.socket.write(options());
      await first.until(answers(1));
      expect(Atomics.load(counter, 0)).toBe(2);
      // Its own count is 1, under its maxConnections of 4: refused only because the slots are shared.
      const refused = await client(port);
      await refused.closed;
      expect(refused.received()).toBe(errorResponse(stamp(), 503, true).toString('latin1'));
      expect(logged.join('\n')).toContain('refused: 2 open');
      // A connection closed anywhere gives its slot back.
      there.socket.end();
      await there.closed;
      while (Atomics.load(counter, 0) > 1) await new Promise((r) => setImmediate(r));
      const again = await client(port);
      again.socket.write(options());
      await again.until(answers(1));
    } finally {
      const closing = other.close();
      timers.fire(IDLE);
      await closing;
    }
  });

  it('shuts down gracefully: stops accepting, closes idle connections, answers what is in flight', async () => {
    const pending = deferred<Decision>();
    const asked = deferred<true>();
    const port = await start((request) => {
      if (!request.http.target.includes('wait')) return byUrl(request);
      asked.resolve(true);
      return pending.promise;
    });
    const idle = await client(port);
    const busy = await client(port);
    busy.socket.write(reqmod({ url: 'http://a/wait' }));
    await asked.promise;
    let done = false;
    const closing = server?.close().then(() => (done = true));
    await idle.closed;
    await expect(client(port)).rejects.toThrow(/ECONNREFUSED/);
    expect(busy.isClosed()).toBe(false);
    expect(done).toBe(false);
    pending.resolve({ kind: 'respond', ...REDIRECT });
    await busy.closed;
    expect(busy.received()).toBe(httpResponse(stamp(), REDIRECT).toString('latin1'));
    await closing;
    expect(done).toBe(true);
    server = undefined;
  });
});

/** Sockets the server holds open, whatever it does with them (its descriptors). */
const accepted = () =>
  new Promise<number>((resolve, reject) =>
    server?.server.getConnections((error, n) => (error ? reject(error) : resolve(n))),
  );

/** Resolves once `done()` holds, looking after every turn of the event loop (the server's side of a socket). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setImmediate(resolve));
}

describe('the ICAP server: connection limits and the request deadline', () => {
  it('caps connections per address (advertised as Max-Connections); another address is still served', async () => {
    // Nothing proves itself here: a proven connection no longer counts against its address (tested below).
    const port = await start(byUrl, { maxConnections: 4, maxConnectionsPerAddress: 2, proves: () => false });
    const mine = [await client(port, { from: '127.0.0.2' }), await client(port, { from: '127.0.0.2' })];
    mine[0]?.socket.write(options());
    const text = await mine[0]?.until(answers(1));
    expect(text).toBe(optionsResponse(stamp(), { ...settings, maxConnections: 2 }).toString('latin1'));
    await until(() => server?.connections === 2);
    const third = await client(port, { from: '127.0.0.2' });
    await third.closed;
    expect(third.received()).toBe(errorResponse(stamp(), 503, true).toString('latin1'));
    expect(logged.join('\n')).toContain('connection from 127.0.0.2 refused: 2 open from its address');
    // Half the total is still free for everyone else.
    const other = await client(port, { from: '127.0.0.3' });
    other.socket.write(options());
    await other.until(answers(1));
    expect(mine.map((c) => c.isClosed())).toEqual([false, false]);
  });

  // A refused client that does not hang up never sees the server's close (its FIN came with the 503): the
  // server's own count of open sockets shows the descriptor let go.
  it('closes a refused connection after the linger, though its client never hangs up', async () => {
    const port = await start(byUrl, { maxConnections: 1, maxConnectionsPerAddress: 1 });
    const first = await client(port);
    await until(() => server?.connections === 1);
    const refused = await client(port, { halfOpen: true });
    await refused.until((text) => text.endsWith('\r\n\r\n'));
    expect(refused.received()).toBe(errorResponse(stamp(), 503, true).toString('latin1'));
    expect(server?.lingering).toBe(1);
    expect(await accepted()).toBe(2);
    expect(timers.fire(LINGER)).toBe(1);
    while ((await accepted()) > 1) await new Promise((resolve) => setImmediate(resolve));
    await until(() => server?.lingering === 0);
    expect(first.isClosed()).toBe(false);
  });

  it('ends the linger when the refused client hangs up', async () => {
    const port = await start(byUrl, { maxConnections: 1, maxConnectionsPerAddress: 1 });
    await client(port);
    await until(() => server?.connections === 1);
    const refused = await client(port);
    await refused.closed;
    await until(() => server?.lingering === 0);
    // Only the first connection's idle timer is left (it never sent anything): the linger's was cleared.
    expect([...timers.pending].map((t) => t.ms)).toEqual([UNPROVEN]);
  });

  it('beyond a few lingering refused connections, closes each at once after its 503', async () => {
    const port = await start(byUrl, {
      maxConnections: 1,
      maxConnectionsPerAddress: 1,
      maxLingeringRefused: 2,
    });
    await client(port);
    await until(() => server?.connections === 1);
    const refused = [];
    for (let i = 0; i < 5; i++) refused.push(await client(port, { halfOpen: true }));
    await Promise.all(refused.map((c) => c.until((text) => text.endsWith('\r\n\r\n'))));
    expect(refused.map((c) => c.received())).toEqual(
      refused.map(() => errorResponse(stamp(), 503, true).toString('latin1')),
    );
    // No timer fired: the first connection and two lingering ones are all the server holds.
    while ((await accepted()) > 3) await new Promise((resolve) => setImmediate(resolve));
    expect(server?.lingering).toBe(2);
    expect(timers.fire(LINGER)).toBe(2);
    while ((await accepted()) > 1) await new Promise((resolve) => setImmediate(resolve));
  });

  it('closes lingering refused connections and clears their timers when it closes', async () => {
    const port = await start(byUrl, { maxConnections: 1, maxConnectionsPerAddress: 1 });
    const first = await client(port);
    first.socket.write(options());
    await first.until(answers(1));
    await client(port, { halfOpen: true });
    await until(() => server?.lingering === 1);
    const closing = server?.close();
    await first.closed;
    expect(server?.lingering).toBe(0);
    // The first connection's own linger (HEADER) is all that is left.
    expect([...timers.pending].map((t) => t.ms)).toEqual([HEADER]);
    timers.fire(HEADER);
    await closing;
    server = undefined;
  });

  it("cuts a body trickled in at the request deadline, counted from the message's first byte", async () => {
    const port = await start(byUrl);
    const c = await client(port);
    // No preview: the body is read to its end before the answer.
    const message = reqmod({ method: 'POST', icapHeaders: ['Allow: 204'], body: chunks(['x'.repeat(100)]) });
    const inBody = message.indexOf('xxxx');
    c.socket.write(message.slice(0, 40));
    await until(() => timers.armed.get(HEADER) === 1);
    // The head took 400 ms: the body has what is left of the request's 2000.
    clock.advance(400);
    c.socket.write(message.slice(40, inBody + 2));
    await until(() => timers.armed.get(REQUEST - 400) === 1);
    // Bytes trickling in push nothing back: no new timer is set for them.
    for (let i = inBody + 2; i < inBody + 6; i++) {
      c.socket.write(message.slice(i, i + 1));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(timers.armed.get(REQUEST - 400)).toBe(1);
    expect(timers.armed.get(UNPROVEN)).toBe(1);
    expect(timers.fire(REQUEST - 400)).toBe(1);
    await c.closed;
    expect(c.received()).toBe(errorResponse(stamp(), 408, true).toString('latin1'));
    expect(logged.join('\n')).toContain('message body incomplete after the timeout');
  });

  it('gives the next message on a connection its own deadline', async () => {
    const port = await start(byUrl);
    const c = await client(port);
    const message = reqmod({ method: 'POST', icapHeaders: ['Allow: 204'], body: chunks(['hello']) });
    const inBody = message.indexOf('hello');
    for (let n = 1; n <= 2; n++) {
      c.socket.write(message.slice(0, inBody));
      // A whole deadline each time: the first message's start, 5 s ago, counts for nothing.
      await until(() => timers.armed.get(REQUEST) === n);
      c.socket.write(message.slice(inBody));
      await c.until(answers(n));
      clock.advance(5000);
    }
    expect(count(c.received(), 'ICAP/1.0 204 No Content')).toBe(2);
  });
});

describe('the ICAP server: connections that have not proved to be Squid’s', () => {
  /** Squid's key, in this test's terms: an ICAP header the decision checks (portal-service.ts). */
  const proves = (request: { headers: { get(name: string): string | undefined } }) =>
    request.headers.get('x-proof') === 'the key';
  const PROOF = [...SQUID_ICAP_HEADERS, 'X-Proof: the key'];

  it('closes a connection that sends nothing at all after the short deadline, not the idle timeout', async () => {
    const port = await start(byUrl, { proves });
    const silent = await client(port);
    await until(() => server?.connections === 1);
    expect([...timers.pending].map((t) => t.ms)).toEqual([UNPROVEN]);
    expect(timers.fire(UNPROVEN)).toBe(1);
    await silent.closed;
    expect(silent.received()).toBe('');
    await until(() => server?.connections === 0);
  });

  it('keeps a proven connection open between requests for the idle timeout, an unproven one only briefly', async () => {
    const port = await start(byUrl, { proves });
    const squid = await client(port);
    squid.socket.write(reqmod({ icapHeaders: PROOF }));
    await squid.until(answers(1));
    const other = await client(port);
    // A REQMOD without the key (a forged X-Client-IP, say) is answered, and proves nothing.
    other.socket.write(reqmod() + options());
    await other.until(answers(2));
    expect(timers.fire(UNPROVEN)).toBe(1);
    await other.closed;
    expect(squid.isClosed()).toBe(false);
    // Squid keeps its connection idle between transactions, and comes back to it.
    squid.socket.write(options());
    await squid.until(answers(2));
    expect(timers.fire(IDLE)).toBe(1);
    await squid.closed;
  });

  it('counts a proven connection in the total only: its address filled with unproven ones does not shut it out', async () => {
    const port = await start(byUrl, { proves, maxConnections: 4, maxConnectionsPerAddress: 2 });
    const squid = await client(port, { from: '127.0.0.2' });
    squid.socket.write(reqmod({ icapHeaders: PROOF }));
    await squid.until(answers(1));
    // Local users share Squid's address: they get their two places, not Squid's.
    const users = [await client(port, { from: '127.0.0.2' }), await client(port, { from: '127.0.0.2' })];
    await until(() => server?.connections === 3);
    const third = await client(port, { from: '127.0.0.2' });
    await third.closed;
    expect(third.received()).toBe(errorResponse(stamp(), 503, true).toString('latin1'));
    squid.socket.write(reqmod({ icapHeaders: PROOF }));
    await squid.until(answers(2));
    expect(users.map((c) => c.isClosed())).toEqual([false, false]);
  });

  it('takes a proof that cannot be checked (the key unreadable) as none, logs why, and answers all the same', async () => {
    const port = await start(byUrl, {
      proves: () => {
        throw new Error('the proxy key cannot be read');
      },
    });
    const c = await client(port);
    c.socket.write(reqmod({ icapHeaders: PROOF }));
    await c.until(answers(1));
    expect(c.received()).toBe(noContentResponse(stamp()).toString('latin1'));
    expect(logged.join('\n')).toContain("cannot check the request's proof: the proxy key cannot be read");
    expect(timers.fire(UNPROVEN)).toBe(1);
    await c.closed;
  });
});
