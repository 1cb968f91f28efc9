import type { RequestListener } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type ListenAddress, type RunningServer } from '../../../portal/server.ts';
import { sendTo } from './harness.ts';

const hello: RequestListener = (_req, res) => res.end('hi');
const app = { callback: () => hello };

let running: RunningServer | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await running?.close();
  running = undefined;
});

interface Client {
  socket: Socket;
  /** Everything the server sent. */
  received: () => string;
  closed: Promise<void>;
  isClosed: () => boolean;
}

/** A TCP connection from `from`, resolved once connected; it sends nothing unless told. */
function open(target: ListenAddress, from: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: target.host, port: target.port, localAddress: from });
    sockets.push(socket);
    let data = '';
    let closed = false;
    socket.on('data', (d: Buffer) => (data += d.toString()));
    const whenClosed = new Promise<void>((done) =>
      socket.once('close', () => {
        closed = true;
        done();
      }),
    );
    socket.once('error', () => {});
    socket.once('connect', () =>
      resolve({ socket, received: () => data, closed: whenClosed, isClosed: () => closed }),
    );
    socket.once('error', reject);
  });
}

const REQUEST = 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

describe('connection limits', () => {
  it('closes idle connections over the per-address cap at once; another address is still served', async () => {
    running = await startServer(app, [{ host: '127.0.0.1', port: 0 }], {
      maxConnections: 100,
      maxConnectionsPerAddress: 3,
    });
    const target = running.addresses[0] as ListenAddress;
    // Connected one after the other, so the server accepts them in this order.
    const idle: Client[] = [];
    for (let i = 0; i < 3; i++) idle.push(await open(target, '127.0.0.2'));
    const extra: Client[] = [];
    for (let i = 0; i < 2; i++) {
      const client = await open(target, '127.0.0.2');
      // Asking on an extra connection gets no answer: it is closed before a byte is read.
      client.socket.write(REQUEST);
      extra.push(client);
    }
    await Promise.all(extra.map((c) => c.closed));
    expect(extra.map((c) => c.received())).toEqual(['', '']);

    const other = await sendTo(target, { path: '/', from: '127.0.0.3' });
    expect(other.text).toBe('hi');
    // The three within the cap are still open, and still served.
    expect(idle.map((c) => c.isClosed())).toEqual([false, false, false]);
    const first = idle[0] as Client;
    first.socket.write(REQUEST);
    await first.closed;
    expect(first.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nhi$/);
    // A connection closing frees its place.
    const again = await open(target, '127.0.0.2');
    again.socket.write(REQUEST);
    await again.closed;
    expect(again.received()).toMatch(/^HTTP\/1\.1 200 OK/);
  });

  it('closes connections over the total cap, shared by every listening address', async () => {
    running = await startServer(
      app,
      [
        { host: '127.0.0.1', port: 0 },
        { host: '127.0.0.1', port: 0 },
      ],
      { maxConnections: 2, maxConnectionsPerAddress: 100 },
    );
    const [a, b] = running.addresses as [ListenAddress, ListenAddress];
    const held = [await open(a, '127.0.0.2'), await open(b, '127.0.0.3')];
    const over = await open(b, '127.0.0.4');
    over.socket.write(REQUEST);
    await over.closed;
    expect(over.received()).toBe('');
    expect(held.map((c) => c.isClosed())).toEqual([false, false]);
  });

  it('holds trusted proxies only to the total', async () => {
    running = await startServer(app, [{ host: '127.0.0.1', port: 0 }], {
      maxConnections: 100,
      maxConnectionsPerAddress: 1,
      unlimitedAddresses: ['127.0.0.5'],
    });
    const target = running.addresses[0] as ListenAddress;
    const held = [await open(target, '127.0.0.5'), await open(target, '127.0.0.5')];
    expect((await sendTo(target, { path: '/', from: '127.0.0.5' })).text).toBe('hi');
    expect(held.map((c) => c.isClosed())).toEqual([false, false]);
  });
});
