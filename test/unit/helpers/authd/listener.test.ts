import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listenHelperSockets, makeRunDir } from '../../../../helpers/authd/listener.ts';
import { ok } from '../../../../lib/helper-protocol/message.ts';
import { runHelper } from '../../../../lib/helper-protocol/run.ts';
import { useTempDir } from '../../../support/temp-dir.ts';

/** A client of one socket, as a shim is: lines out, reply lines kept; `closed` once the server closes it. */
function client(path: string) {
  const socket: Socket = connect(path);
  const lines: string[] = [];
  let partial = '';
  let wake = () => {};
  socket.on('data', (d: Buffer) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
    wake();
  });
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const until = async (count: number) => {
    while (lines.length < count) await new Promise<void>((resolve) => (wake = resolve));
  };
  return { socket, lines, closed, connected, until };
}

describe('listenHelperSockets', () => {
  const tmp = useTempDir('doorman-listener-');

  it('answers what was read before close(), then closes every connection and removes the sockets', async () => {
    const path = join(tmp.dir, 'session.sock');
    // Answers wait until the test lets them go: a request in flight when the stop comes.
    const held: Array<() => void> = [];
    const listener = await listenHelperSockets(
      [
        {
          path,
          handler: (input, output) =>
            runHelper({
              input,
              output,
              channelIds: true,
              log: () => {},
              handle: (request) =>
                new Promise((resolve) => held.push(() => resolve(ok([['user', request.fields[0] ?? '']])))),
            }),
        },
      ],
      () => {},
    );
    expect(statSync(path).mode & 0o777).toBe(0o660);
    const c = client(path);
    await c.connected;
    c.socket.write('1 alice\n');
    while (held.length === 0) await new Promise((r) => setTimeout(r, 5));
    expect(listener.connections()).toBe(1);
    const closing = listener.close(5000);
    // Stopped: no new connection, no socket file; the request already read is still answered.
    expect(existsSync(path)).toBe(false);
    held[0]?.();
    await closing;
    await c.closed;
    expect(c.lines).toEqual(['1 OK user=alice']);
    expect(listener.connections()).toBe(0);
  });

  it('closes a connection answered in full whose peer never closes its end (half-open), without waiting for it', async () => {
    const path = join(tmp.dir, 'group.sock');
    const listener = await listenHelperSockets(
      [
        {
          path,
          handler: (input, output) =>
            runHelper({ input, output, channelIds: true, log: () => {}, handle: () => ok() }),
        },
      ],
      () => {},
    );
    // A peer that keeps its end open and stops reading: nothing of it may hold the stop (the grace is long).
    const peer = connect({ path, allowHalfOpen: true });
    await new Promise((resolve) => peer.once('connect', resolve));
    peer.write('1 staff alice\n');
    await new Promise((resolve) => peer.once('data', resolve));
    peer.pause();
    await listener.close(60_000);
    expect(listener.connections()).toBe(0);
    peer.destroy();
  });

  it('cuts connections whose answers are not done within the grace period', async () => {
    const path = join(tmp.dir, 'basic.sock');
    let asked = false;
    const listener = await listenHelperSockets(
      [
        {
          path,
          handler: (input, output) =>
            runHelper({
              input,
              output,
              channelIds: true,
              log: () => {},
              handle: () => {
                asked = true;
                return new Promise(() => {});
              },
            }),
        },
      ],
      () => {},
    );
    const c = client(path);
    await c.connected;
    c.socket.write('1 alice secret\n');
    // In flight when the stop comes (read, never answered): only the grace period ends it.
    while (!asked) await new Promise((r) => setTimeout(r, 5));
    await listener.close(50);
    await c.closed;
    expect(c.lines).toEqual([]);
  });

  it('replaces a socket an earlier authd left, refuses one that answers, and anything that is not a socket', async () => {
    const path = join(tmp.dir, 'group.sock');
    const first = await listenHelperSockets([{ path, handler: async () => {} }], () => {});
    // Another authd answering there: refused, and its file left alone.
    await expect(listenHelperSockets([{ path, handler: async () => {} }], () => {})).rejects.toMatchObject({
      code: 'ALREADY_RUNNING',
    });
    // Killed outright, an authd leaves its socket file with nobody listening: kept under a second name while
    // the listener closes (which removes the file), then put back.
    linkSync(path, `${path}.left`);
    await first.close(10);
    renameSync(`${path}.left`, path);
    expect(lstatSync(path).isSocket()).toBe(true);
    const second = await listenHelperSockets([{ path, handler: async () => {} }], () => {});
    await second.close(10);
    expect(existsSync(path)).toBe(false);
    const file = join(tmp.dir, 'ntlm.sock');
    writeFileSync(file, 'not a socket');
    await expect(listenHelperSockets([{ path: file, handler: async () => {} }], () => {})).rejects.toThrow(
      `${file} exists and is not a socket: remove it, or move stateDir`,
    );
  });

  it('keeps the files a successor listens on when closing with keepFiles, and says when they are gone', async () => {
    const path = join(tmp.dir, 'session.sock');
    const listener = await listenHelperSockets([{ path, handler: async () => {} }], () => {});
    expect(listener.missing()).toBeUndefined();
    const ino = lstatSync(path).ino;
    await listener.close(10, true);
    expect(lstatSync(path).ino).toBe(ino);
    const again = await listenHelperSockets([{ path, handler: async () => {} }], () => {});
    unlinkSync(path);
    expect(again.missing()).toBe(path);
    await again.close(10);
  });
});

describe('makeRunDir', () => {
  const tmp = useTempDir('doorman-run-dir-');

  it('makes the run directory 0750 whatever the umask, and mends the mode of an existing one', () => {
    const dir = join(tmp.dir, 'run');
    const mask = process.umask(0o077);
    try {
      makeRunDir(dir);
    } finally {
      process.umask(mask);
    }
    expect(statSync(dir).mode & 0o777).toBe(0o750);
    const other = join(tmp.dir, 'other');
    mkdirSync(other, { mode: 0o700 });
    makeRunDir(other);
    expect(statSync(other).mode & 0o777).toBe(0o750);
  });
});
