import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildShim, Shim, SHIM_DOWN as DOWN } from '../../harness/shim.ts';
import { useTempDir } from '../../support/temp-dir.ts';

// The binary under test is the one built from this checkout's source.
beforeAll(buildShim);

/** A stand-in for authd: records request lines per connection and lets the test answer (or not). */
class Service {
  readonly server: Server;
  readonly connections: Socket[] = [];
  readonly received: string[] = [];
  #wake: () => void = () => {};

  constructor(answer?: (line: string, socket: Socket) => void) {
    this.server = createServer((socket) => {
      this.connections.push(socket);
      let partial = '';
      socket.on('data', (d: Buffer) => {
        const parts = (partial + d.toString('latin1')).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) {
          this.received.push(line);
          answer?.(line, socket);
        }
        this.#wake();
      });
      socket.on('error', () => {});
      this.#wake();
    });
  }

  listen(path: string): Promise<void> {
    return new Promise((resolve) => this.server.listen(path, resolve));
  }

  async until(check: () => boolean): Promise<void> {
    while (!check()) await new Promise<void>((resolve) => (this.#wake = resolve));
  }

  close(): Promise<void> {
    for (const socket of this.connections) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Answers `ID OK user=<the request's first field>` (or without an ID), as the session helper would. */
const echo = (line: string, socket: Socket) => {
  const words = line.split(' ');
  const id = /^\d+$/.test(words[0] ?? '') ? `${words.shift()} ` : '';
  socket.write(`${id}OK user=${words[0]}\n`);
};

/**
 * The shim reconnects on its own, at most once a second: ask (channel-IDs from `first`, one line of output
 * each) until an answer comes from the service rather than the shim. Returns the channel-ID served.
 */
async function askUntilServed(s: Shim, first: number, field: string): Promise<number> {
  const before = s.lines.length;
  for (let id = first; ; id++) {
    s.send(`${id} ${field}\n`);
    const line = (await s.until(before + id - first + 1)).at(-1);
    if (line === `${id} OK user=${field}`) return id;
    expect(line).toBe(`${id} ${DOWN}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('doorman-shim', () => {
  const tmp = useTempDir('doorman-shim-');
  const started: Shim[] = [];
  const services: Service[] = [];
  const shim = (concurrent: boolean) => {
    const s = new Shim(join(tmp.dir, 'session.sock'), concurrent);
    started.push(s);
    return s;
  };
  const service = async (answer?: (line: string, socket: Socket) => void) => {
    const s = new Service(answer);
    services.push(s);
    await s.listen(join(tmp.dir, 'session.sock'));
    return s;
  };
  afterEach(async () => {
    for (const s of started.splice(0)) s.kill();
    await Promise.all(services.splice(0).map((s) => s.close()));
  });

  it('relays request lines to the socket and reply lines back, split anywhere', async () => {
    const svc = await service(echo);
    const s = shim(true);
    s.send('1 10.0.0.1 -\n2 10.0');
    s.send('.0.2 -\n3 10.0.0.3 -\n');
    expect(await s.until(3)).toEqual(['1 OK user=10.0.0.1', '2 OK user=10.0.0.2', '3 OK user=10.0.0.3']);
    expect(svc.received).toEqual(['1 10.0.0.1 -', '2 10.0.0.2 -', '3 10.0.0.3 -']);
    expect(await s.end()).toBe(0);
  });

  it('answers BH, with its channel-ID, for each request left unanswered when the service drops', async () => {
    // Requests 1 and 3 are left unanswered.
    const svc = await service((line, socket) => {
      if (!/^[13] /.test(line)) echo(line, socket);
    });
    const s = shim(true);
    s.send('1 alice\n2 bob\n3 carol\n');
    await svc.until(() => svc.received.length === 3);
    expect(await s.until(1)).toEqual(['2 OK user=bob']);
    // Half a reply, then the connection is gone: Squid must see neither that half nor a silence.
    svc.connections[0]?.end('1 OK us');
    const lines = await s.until(3);
    expect(lines.slice(1).sort()).toEqual([`1 ${DOWN}`, `3 ${DOWN}`]);
    expect(s.alive).toBe(true);
    // The service still listens: the shim connects again, and the half reply is not glued to the next one.
    const id = await askUntilServed(s, 4, 'dave');
    expect(s.lines.at(-1)).toBe(`${id} OK user=dave`);
    expect(svc.connections).toHaveLength(2);
  });

  it('survives writing to a connection the service has closed (SIGPIPE is ignored)', async () => {
    const svc = await service(echo);
    const s = shim(true);
    s.send('1 alice\n');
    expect(await s.until(1)).toEqual(['1 OK user=alice']);
    // Frozen, the shim sees the close and the next request in the same wake-up, and writes the request first.
    s.child.kill('SIGSTOP');
    svc.connections[0]?.destroy();
    s.send('2 bob\n');
    await new Promise((resolve) => setTimeout(resolve, 100));
    s.child.kill('SIGCONT');
    expect(await s.until(2)).toEqual(['1 OK user=alice', `2 ${DOWN}`]);
    expect(s.alive).toBe(true);
  });

  it('counts unanswered requests without channel-IDs', async () => {
    const svc = await service();
    const s = shim(false);
    s.send('YR TlRMTVNTUAABAAAA\n');
    await svc.until(() => svc.received.length === 1);
    svc.connections[0]?.end('TT TlRMTV');
    expect(await s.until(1)).toEqual([DOWN]);
    // Down now: a new request is answered at once, and nothing more is owed for the first.
    s.send('KK TlRMTVNTUAADAAAA\n');
    expect(await s.until(2)).toEqual([DOWN, DOWN]);
    expect(s.alive).toBe(true);
  });

  it('writes a line the service starts with # to stderr (cache.log), not to Squid, and owes nothing for it', async () => {
    await service((line, socket) => {
      const id = /^\d+ /.exec(line)?.[0] ?? '';
      socket.write(`#doorman: basic: RATE_LIMITED account="alice"\n${id}ERR message=RATE_LIMITED\n`);
    });
    const s = shim(true);
    s.send('7 alice guess 127.0.0.2\n');
    expect(await s.until(1)).toEqual(['7 ERR message=RATE_LIMITED']);
    expect(s.stderr).toContain('doorman: basic: RATE_LIMITED account="alice"\n');
    // Without channel-IDs the # line is not taken for the answer either.
    const t = shim(false);
    t.send('bob guess 127.0.0.3\n');
    expect(await t.until(1)).toEqual(['ERR message=RATE_LIMITED']);
    expect(await t.end()).toBe(0);
  });

  it('answers BH while the service is down, stays alive, and uses the service once it is back', async () => {
    const s = shim(true);
    s.send('1 10.0.0.1 -\n');
    expect(await s.until(1)).toEqual([`1 ${DOWN}`]);
    s.send('2 10.0.0.1 -\n');
    expect(await s.until(2)).toEqual([`1 ${DOWN}`, `2 ${DOWN}`]);
    expect(s.stderr).toMatch(/session\.sock: No such file or directory; answering BH until it is up/);
    const svc = await service(echo);
    const id = await askUntilServed(s, 3, '10.0.0.1');
    expect(svc.received).toEqual([`${id} 10.0.0.1`]);
    expect(s.alive).toBe(true);
    expect(await s.end()).toBe(0);
  });

  it('answers an overlong line BH with its channel-ID, skips it and relays the next', async () => {
    const svc = await service(echo);
    const s = shim(true);
    const long = 'A'.repeat(70 * 1024);
    // In pieces, as a pipe delivers it.
    s.send(`7 ${long.slice(0, 30_000)}`);
    s.send(long.slice(30_000));
    s.send('\n8 ok\n');
    expect(await s.until(2)).toEqual(['7 BH message=request%20line%20too%20long', '8 OK user=ok']);
    expect(svc.received).toEqual(['8 ok']);
    expect(s.stderr).toMatch(/request line longer than \d+ bytes: answered BH/);
  });

  it('answers BH for a reply too long to frame, in place of that reply, and relays the next', async () => {
    await service((line, socket) => {
      const id = line.split(' ')[0];
      socket.write(id === '5' ? `5 OK user=${'x'.repeat(70 * 1024)}\n` : `${id} OK user=short\n`);
    });
    const s = shim(true);
    s.send('5 a\n');
    s.send('6 b\n');
    expect(await s.until(2)).toEqual(['5 BH message=reply%20too%20long', '6 OK user=short']);
  });

  it('keeps a bounded table of channel-IDs: one request too many is answered BH at once', async () => {
    const svc = await service();
    const s = shim(true);
    s.send(Array.from({ length: 4097 }, (_, i) => `${i + 1} 10.0.0.1 -\n`).join(''));
    expect(await s.until(1)).toEqual(['4097 BH message=too%20many%20requests%20in%20flight']);
    await svc.until(() => svc.received.length === 4096);
    // The table still answers for every request it holds when the service drops.
    svc.connections[0]?.destroy();
    expect(await s.until(4097)).toHaveLength(4097);
    expect(new Set(s.lines).size).toBe(4097);
  });

  it('relays a line of a Negotiate token as long as Squid sends (64 KiB)', async () => {
    const svc = await service((line, socket) => socket.write(`AF ${line.length} alice\n`));
    const s = shim(false);
    const token = 'B'.repeat(64 * 1024);
    s.send(`YR ${token}\n`);
    expect(await s.until(1)).toEqual([`AF ${token.length + 3} alice`]);
    expect(svc.received).toEqual([`YR ${token}`]);
  });
});
