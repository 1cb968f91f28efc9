import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NODE } from '../../harness/helper-process.ts';
import { buildShim, SHIM_DOWN as DOWN, SHIM_LATE as LATE } from '../../harness/shim.ts';
import { askUntilServed, echo, useShimLab } from '../../harness/shim-service.ts';

beforeAll(buildShim);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** authd restarting, gone, or stuck: the shim holds, re-sends, and answers BH only past its bounds. */
describe('doorman-shim when the service goes away', () => {
  const lab = useShimLab('doorman-shim-outage-');

  it('holds requests while the service restarts and has the next one answer them, not BH', async () => {
    const first = await lab.service(echo);
    const s = lab.shim(true);
    expect(await s.ask('1 alice')).toBe('1 OK user=alice');
    await first.close();
    s.send('2 bob\n3 carol\n');
    await sleep(300);
    expect(s.lines).toHaveLength(1);
    const next = await lab.service(echo);
    expect(await s.until(3)).toEqual(['1 OK user=alice', '2 OK user=bob', '3 OK user=carol']);
    expect(next.received).toEqual(['2 bob', '3 carol']);
    expect(s.stderr).toMatch(/session\.sock: [^\n]*; reconnecting, holding requests for up to 10000 ms/);
  });

  it('sends what a dropped connection owed again on the next (--concurrent), never half a reply', async () => {
    // On the first connection requests 1 and 3 are left unanswered.
    const svc = await lab.service((line, socket) => {
      if (socket !== svc.connections[0] || !/^[13] /.test(line)) echo(line, socket);
    });
    const s = lab.shim(true);
    s.send('1 alice\n2 bob\n3 carol\n');
    await svc.until(() => svc.received.length === 3);
    expect(await s.until(1)).toEqual(['2 OK user=bob']);
    // Half a reply, then the connection is gone: Squid must see neither that half nor a BH.
    svc.connections[0]?.end('1 OK us');
    expect((await s.until(3)).slice(1).sort()).toEqual(['1 OK user=alice', '3 OK user=carol']);
    expect(svc.connections).toHaveLength(2);
    expect(svc.received.slice(3).sort()).toEqual(['1 alice', '3 carol']);
    expect(await s.ask('4 dave')).toBe('4 OK user=dave');
  });

  it('survives writing to a connection the service has closed (SIGPIPE is ignored)', async () => {
    const svc = await lab.service(echo);
    const s = lab.shim(true);
    expect(await s.ask('1 alice')).toBe('1 OK user=alice');
    // Frozen, the shim sees the close and the next request in the same wake-up, and writes the request first.
    s.child.kill('SIGSTOP');
    svc.connections[0]?.destroy();
    s.send('2 bob\n');
    await sleep(100);
    s.child.kill('SIGCONT');
    expect(await s.until(2)).toEqual(['1 OK user=alice', '2 OK user=bob']);
    expect(s.alive).toBe(true);
  });

  it('without --concurrent: BH for the request the dropped connection owed (its handshake died), new ones held', async () => {
    const first = await lab.service();
    const s = lab.shim(false);
    s.send('YR TlRMTVNTUAABAAAA\n');
    await first.until(() => first.received.length === 1);
    first.connections[0]?.write('TT TlRMTV');
    await first.close();
    expect(await s.until(1)).toEqual([DOWN]);
    s.send('YR TlRMTVNTUAABAAAB\n');
    await sleep(300);
    expect(s.lines).toEqual([DOWN]);
    const next = await lab.service((line, socket) => socket.write(`AF ${line.slice(-1)} alice\n`));
    expect(await s.until(2)).toEqual([DOWN, 'AF B alice']);
    expect(next.received).toEqual(['YR TlRMTVNTUAABAAAB']);
  });

  it('past the hold: BH for held requests and new ones, tries again about once a second, and is served once back', async () => {
    const s = lab.shim(true, { holdMs: 300 });
    s.send('1 10.0.0.1 -\n');
    expect(await s.until(1)).toEqual([`1 ${DOWN}`]);
    expect(await s.ask('2 10.0.0.1 -')).toBe(`2 ${DOWN}`);
    expect(s.stderr).toMatch(/session\.sock: No such file or directory; holding requests for up to 300 ms/);
    expect(s.stderr).toMatch(/session\.sock: down for 300 ms: answering BH until it is back/);
    const svc = await lab.service(echo);
    const id = await askUntilServed(s, 3, '10.0.0.1');
    expect(svc.received).toEqual([`${id} 10.0.0.1`]);
    expect(await s.end()).toBe(0);
  });

  it('caps the bytes it holds: a request beyond 1 MiB is answered BH at once, the others are kept', async () => {
    const s = lab.shim(true);
    const line = (id: number) => `${id} ${'A'.repeat(64_000 - String(id).length - 2)}\n`;
    // 16 of 64,000 bytes fit in 1 MiB, the 17th does not.
    s.send(Array.from({ length: 18 }, (_, i) => line(i + 1)).join(''));
    expect(await s.until(2)).toEqual([
      '17 BH message=too%20many%20bytes%20in%20flight',
      '18 BH message=too%20many%20bytes%20in%20flight',
    ]);
    const svc = await lab.service((l, socket) => socket.write(`${l.split(' ')[0]} OK\n`));
    expect((await s.until(18)).slice(2)).toEqual(Array.from({ length: 16 }, (_, i) => `${i + 1} OK`));
    expect(svc.received).toHaveLength(16);
  });

  it('answers BH past the deadline when the service never answers, reconnects, and sends the rest again', async () => {
    // The first connection is never answered (a stuck authd); the ones after it are.
    const svc = await lab.service((line, socket) => {
      if (socket !== svc.connections[0]) echo(line, socket);
    });
    const s = lab.shim(true, { deadlineMs: 1500 });
    s.send('1 alice\n');
    await svc.until(() => svc.received.length === 1);
    await sleep(700);
    s.send('2 bob\n');
    // 1 is answered BH at its deadline; 2, owed too, goes on the new connection and is answered there.
    expect(await s.until(2)).toEqual([`1 ${LATE}`, '2 OK user=bob']);
    expect(svc.connections).toHaveLength(2);
    // A late answer on the old connection cannot reach Squid: the shim has closed it.
    svc.connections[0]?.write('1 OK user=alice\n');
    expect(await s.ask('3 carol')).toBe('3 OK user=carol');
    expect(s.lines).toEqual([`1 ${LATE}`, '2 OK user=bob', '3 OK user=carol']);
    expect(s.stderr).toMatch(/a request unanswered in time was answered BH; reconnecting/);
  });

  it('answers BH past the deadline for one slow request of a live service, keeps the connection, drops the late reply', async () => {
    const svc = await lab.service((line, socket) => {
      if (line.startsWith('1 ')) setTimeout(() => echo(line, socket), 1700);
      else echo(line, socket);
    });
    const s = lab.shim(true, { deadlineMs: 1500 });
    s.send('1 alice\n');
    await svc.until(() => svc.received.length === 1);
    await sleep(700);
    expect(await s.ask('2 bob')).toBe('2 OK user=bob');
    expect(await s.until(2)).toEqual(['2 OK user=bob', `1 ${LATE}`]);
    // The late reply comes on the same connection, and is dropped by its channel-ID.
    await sleep(400);
    expect(await s.ask('3 carol')).toBe('3 OK user=carol');
    expect(s.lines).toEqual(['2 OK user=bob', `1 ${LATE}`, '3 OK user=carol']);
    expect(svc.connections).toHaveLength(1);
    expect(s.stderr).toContain('a reply to no request owed (channel-ID "1"): dropped');
  });

  describe('a stopped service with a full backlog', () => {
    let stopped: ReturnType<typeof spawn> | undefined;
    const queued: Socket[] = [];
    afterEach(() => {
      for (const socket of queued.splice(0)) socket.destroy();
      stopped?.kill('SIGKILL');
      stopped = undefined;
    });

    it('does not block the shim in connect(): requests are held, then answered BH', async () => {
      const listen = `require('net').createServer().listen({ path: process.argv[1], backlog: 1 }, () => console.log('up'))`;
      const child = spawn(NODE, ['-e', listen, lab.socket()]);
      stopped = child;
      await new Promise((resolve) => child.stdout.once('data', resolve));
      child.kill('SIGSTOP');
      // Fill its backlog: connect until the kernel refuses (EAGAIN) rather than queues.
      for (let full = false; !full;) {
        const socket = connect(lab.socket());
        queued.push(socket);
        full = await new Promise<boolean>((resolve) => {
          socket.once('connect', () => resolve(false)).once('error', () => resolve(true));
        });
      }
      const s = lab.shim(true, { holdMs: 300 });
      expect(await s.ask('1 alice')).toBe(`1 ${DOWN}`);
      expect(s.stderr).toMatch(/Resource temporarily unavailable; holding requests/);
      expect(s.alive).toBe(true);
    });
  });
});
