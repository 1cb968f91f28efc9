import { beforeAll, describe, expect, it } from 'vitest';
import { buildShim, SHIM_DOWN as DOWN } from '../../harness/shim.ts';
import { echo, useShimLab } from '../../harness/shim-service.ts';

// The binary under test is the one built from this checkout's source.
beforeAll(buildShim);

/** Relaying and framing, each line answered once, and the end of input (the outages: doorman-shim-outage). */
describe('doorman-shim', () => {
  const lab = useShimLab('doorman-shim-');

  it('relays request lines to the socket and reply lines back, split anywhere', async () => {
    const svc = await lab.service(echo);
    const s = lab.shim(true);
    s.send('1 10.0.0.1 -\n2 10.0');
    s.send('.0.2 -\n3 10.0.0.3 -\n');
    expect(await s.until(3)).toEqual(['1 OK user=10.0.0.1', '2 OK user=10.0.0.2', '3 OK user=10.0.0.3']);
    expect(svc.received).toEqual(['1 10.0.0.1 -', '2 10.0.0.2 -', '3 10.0.0.3 -']);
    expect(await s.end()).toBe(0);
  });

  it('answers each request once: a second reply, or one to no request, is dropped (logged)', async () => {
    await lab.service((line, socket) => {
      echo(line, socket);
      echo(line, socket);
      if (line.startsWith('1 ')) socket.write('9 OK user=nobody\n');
    });
    const s = lab.shim(true);
    expect(await s.ask('1 alice')).toBe('1 OK user=alice');
    expect(await s.ask('2 bob')).toBe('2 OK user=bob');
    expect(s.lines).toEqual(['1 OK user=alice', '2 OK user=bob']);
    expect(s.stderr).toContain('a reply to no request owed (channel-ID "9"): dropped');
    expect(s.stderr).toContain('a reply to no request owed (channel-ID "1"): dropped');
    // Without channel-IDs, by order: the second reply to the first request is not taken for the next one's.
    const t = lab.shim(false);
    expect(await t.ask('carol')).toBe('OK user=carol');
    expect(await t.ask('dave')).toBe('OK user=dave');
    expect(await t.end()).toBe(0);
    expect(t.lines).toEqual(['OK user=carol', 'OK user=dave']);
  });

  it('writes a line the service starts with # to stderr (cache.log), not to Squid, and owes nothing for it', async () => {
    await lab.service((line, socket) => {
      const id = /^\d+ /.exec(line)?.[0] ?? '';
      socket.write(`#doorman: basic: RATE_LIMITED account="alice"\n${id}ERR message=RATE_LIMITED\n`);
    });
    const s = lab.shim(true);
    s.send('7 alice guess 127.0.0.2\n');
    expect(await s.until(1)).toEqual(['7 ERR message=RATE_LIMITED']);
    expect(s.stderr).toContain('doorman: basic: RATE_LIMITED account="alice"\n');
    // Without channel-IDs the # line is not taken for the answer either.
    const t = lab.shim(false);
    t.send('bob guess 127.0.0.3\n');
    expect(await t.until(1)).toEqual(['ERR message=RATE_LIMITED']);
    expect(await t.end()).toBe(0);
  });

  it('answers an overlong line BH with its channel-ID, skips it and relays the next', async () => {
    const svc = await lab.service(echo);
    const s = lab.shim(true);
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
    await lab.service((line, socket) => {
      const id = line.split(' ')[0];
      socket.write(id === '5' ? `5 OK user=${'x'.repeat(70 * 1024)}\n` : `${id} OK user=short\n`);
    });
    const s = lab.shim(true);
    s.send('5 a\n');
    s.send('6 b\n');
    expect(await s.until(2)).toEqual(['5 BH message=reply%20too%20long', '6 OK user=short']);
  });

  it('keeps a bounded table of channel-IDs: one request too many is answered BH at once', async () => {
    const svc = await lab.service();
    const s = lab.shim(true, { holdMs: 200 });
    s.send(Array.from({ length: 4097 }, (_, i) => `${i + 1} 10.0.0.1 -\n`).join(''));
    expect(await s.until(1)).toEqual(['4097 BH message=too%20many%20requests%20in%20flight']);
    await svc.until(() => svc.received.length === 4096);
    // The table still answers for every request it holds when the service is gone past the hold.
    await svc.close();
    expect(await s.until(4097)).toHaveLength(4097);
    expect(new Set(s.lines).size).toBe(4097);
    expect(s.lines.slice(1).every((line) => line.endsWith(` ${DOWN}`))).toBe(true);
  });

  it('relays a line of a Negotiate token as long as Squid sends (64 KiB)', async () => {
    const svc = await lab.service((line, socket) => socket.write(`AF ${line.length} alice\n`));
    const s = lab.shim(false);
    const token = 'B'.repeat(64 * 1024);
    s.send(`YR ${token}\n`);
    expect(await s.until(1)).toEqual([`AF ${token.length + 3} alice`]);
    expect(svc.received).toEqual([`YR ${token}`]);
  });

  describe('at the end of its input', () => {
    it('answers every line read before stdin closed, then exits (printf ... | doorman-shim)', async () => {
      // The service takes its time: the shim must wait for the answers it has asked for.
      await lab.service((line, socket) => setTimeout(() => echo(line, socket), 200));
      const s = lab.shim(true);
      s.send('0 127.0.0.1\n1 10.0.0.2\n');
      expect(await s.end()).toBe(0);
      expect(s.lines).toEqual(['0 OK user=127.0.0.1', '1 OK user=10.0.0.2']);
    });

    it('answers a last line without its LF, as a line', async () => {
      await lab.service(echo);
      const s = lab.shim(false);
      s.send('alice');
      expect(await s.end()).toBe(0);
      expect(s.lines).toEqual(['OK user=alice']);
    });

    it('holds a line while the service is down, and exits once the next one has answered it', async () => {
      const s = lab.shim(true);
      s.send('0 127.0.0.1\n');
      const exited = s.end();
      await new Promise((resolve) => setTimeout(resolve, 200));
      await lab.service(echo);
      expect(await exited).toBe(0);
      expect(s.lines).toEqual(['0 OK user=127.0.0.1']);
    });

    it('exits at once when Squid is gone too (stdout closed), with answers still owed', async () => {
      const svc = await lab.service();
      const s = lab.shim(true);
      s.send('0 127.0.0.1\n');
      await svc.until(() => svc.received.length === 1);
      s.child.stdout.destroy();
      // The service never answers, and the deadline is 30 s: only stdout's hang-up ends the shim this soon.
      expect(await s.end()).toBe(0);
    });
  });
});
