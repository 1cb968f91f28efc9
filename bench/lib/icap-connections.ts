/**
 * The memory of an ICAP server holding many open connections: VmRSS of PID (from /proc) before, then after
 * COUNT connections are opened and each has had one OPTIONS answered (so the server has read from every
 * one and holds its parser state), then again once they are closed.
 *
 *   node bench/lib/icap-connections.ts --port P --pid PID [--host 127.0.0.1] [--count 1000] [--label TEXT]
 *
 * Prints one JSON line. Loopback only; bounded (count ≤ 10,000, 60 s in all).
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    pid: { type: 'string' },
    count: { type: 'string', default: '1000' },
    label: { type: 'string', default: 'icap open connections' },
  },
});
const host = values.host;
const port = Number(values.port);
const pid = Number(values.pid);
const count = Number(values.count);
if (!/^127\.|^::1$|^localhost$/.test(host) || !Number.isInteger(port) || !Number.isInteger(pid)) {
  console.error('usage: icap-connections.ts --port P --pid PID [--host 127.x.x.x] [--count N]');
  process.exit(2);
}
if (!Number.isInteger(count) || count < 1 || count > 10_000) {
  console.error(`--count ${values.count}: expected 1 to 10000`);
  process.exit(2);
}
setTimeout(() => {
  console.error('gave up after 60 s');
  process.exit(1);
}, 60_000).unref();

/** VmRSS and VmHWM of the process, kB. */
function memory(): { rss_kb: number; hwm_kb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss_kb: field('VmRSS'), hwm_kb: field('VmHWM') };
}

const options = `OPTIONS icap://${host}:${port}/reqmod ICAP/1.0\r\nHost: ${host}:${port}\r\n\r\n`;

/** Open one connection and have one OPTIONS answered on it; the connection stays open. */
function openOne(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port }, () => socket.write(options));
    let got = '';
    const onData = (data: Buffer) => {
      got += data.toString('latin1');
      if (got.includes('\r\n\r\n')) {
        socket.off('data', onData);
        if (!got.startsWith('ICAP/1.0 200')) reject(new Error(`OPTIONS answered ${got.split('\r\n')[0]}`));
        else resolve(socket);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`closed after ${JSON.stringify(got.slice(0, 80))}`)));
  });
}

const before = memory();
const sockets: Socket[] = [];
// 50 at a time: the server's listen backlog is not what is measured here.
for (let i = 0; i < count; i += 50) {
  const batch = await Promise.all(Array.from({ length: Math.min(50, count - i) }, openOne));
  sockets.push(...batch);
}
// Let the server settle (a GC may run), then read it with every connection open.
await new Promise((r) => setTimeout(r, 500));
const open = memory();
for (const socket of sockets) {
  socket.removeAllListeners('close');
  socket.destroy();
}
await new Promise((r) => setTimeout(r, 500));
const after = memory();
console.log(
  JSON.stringify({
    label: values.label,
    connections: sockets.length,
    rss_kb_before: before.rss_kb,
    rss_kb_open: open.rss_kb,
    rss_kb_after_close: after.rss_kb,
    kb_per_connection: Math.round(((open.rss_kb - before.rss_kb) / sockets.length) * 10) / 10,
    hwm_kb: after.hwm_kb,
  }),
);
