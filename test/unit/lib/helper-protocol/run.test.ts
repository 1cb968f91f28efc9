import { PassThrough, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { err, ok } from '../../../../lib/helper-protocol/message.ts';
import type { HelperReply, HelperRequest } from '../../../../lib/helper-protocol/message.ts';
import { runHelper } from '../../../../lib/helper-protocol/run.ts';
import type { HelperOptions } from '../../../../lib/helper-protocol/run.ts';
import { squidReadsReply } from './squid-model.ts';

/** A reply line as Squid accepts it: optional channel, result, escaped kv-pairs. */
const REPLY_LINE = /^(\d+ )?(OK|ERR|BH)( [A-Za-z0-9_-]+=[A-Za-z0-9\-._~%]*)*$/;

interface Harness {
  input: PassThrough;
  /** Every output.write, in order. */
  writes: string[];
  logs: string[];
  done: Promise<void>;
  /** Set once `done` has resolved. */
  finished: () => boolean;
  /** All output so far, as lines (LF dropped). */
  lines: () => string[];
}

type Handle = HelperOptions['handle'];

/** runHelper on a PassThrough input and an output that records each write separately. */
function start(handle: Handle, channelIds: boolean, extra: Partial<HelperOptions> = {}): Harness {
  const input = new PassThrough();
  const writes: string[] = [];
  const logs: string[] = [];
  const output = new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, callback) {
      writes.push(chunk.toString());
      callback();
    },
  });
  let finished = false;
  const done = runHelper({
    input,
    output,
    handle,
    channelIds,
    log: (line) => logs.push(line),
    ...extra,
  }).then(() => {
    finished = true;
  });
  const lines = () => {
    const all = writes.join('');
    expect(all === '' || all.endsWith('\n')).toBe(true);
    return all === '' ? [] : all.slice(0, -1).split('\n');
  };
  return { input, writes, logs, done, finished: () => finished, lines };
}

/** A promise with its resolve/reject outside. */
function deferred<T>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Deterministic pseudo-random numbers in [0, 1). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x1_0000_0000;
  };
}

/** Answers OK user=<first field>, ERR for "nobody". */
const echo = (request: HelperRequest): HelperReply =>
  request.fields[0] === 'nobody' ? err() : ok([['user', request.fields[0] ?? '']]);

/** Two turns of the event loop: answers that settle together are written on the turn after. */
const tick = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

describe('with channel-IDs', () => {
  it('answers each request with its channel; async replies go out as they settle, in any order', async () => {
    const pending = new Map<string, ReturnType<typeof deferred<HelperReply>>>();
    const h = start((request) => {
      const d = deferred<HelperReply>();
      pending.set(request.channel ?? '?', d);
      return d.promise;
    }, true);
    h.input.write('1 alice\n2 bob\n3 carol\n');
    await tick();
    expect(h.lines()).toEqual([]);
    pending.get('3')?.resolve(ok([['user', 'carol']]));
    await tick();
    expect(h.lines()).toEqual(['3 OK user=carol']);
    pending.get('1')?.resolve(ok([['user', 'alice']]));
    pending.get('2')?.resolve(err());
    h.input.end();
    await h.done;
    expect(h.lines()).toEqual(['3 OK user=carol', '1 OK user=alice', '2 ERR']);
  });

  it('matches every reply to its request by channel, with random delays', async () => {
    const next = random(7);
    const h = start(async (request) => {
      await sleep(Math.floor(next() * 8));
      return echo(request);
    }, true);
    const requests = Array.from({ length: 60 }, (_, i) => `${i} user${i}\n`).join('');
    for (let i = 0; i < requests.length; i += 37) h.input.write(requests.slice(i, i + 37));
    h.input.end();
    await h.done;
    const replies = h.lines();
    expect(replies).toHaveLength(60);
    expect(new Set(replies)).toEqual(new Set(Array.from({ length: 60 }, (_, i) => `${i} OK user=user${i}`)));
  });

  it('answers BH for a handler that throws or rejects, and goes on with the next line', async () => {
    const h = start((request) => {
      if (request.fields[0] === 'throw') throw new Error('boom');
      if (request.fields[0] === 'reject') return Promise.reject(new Error('async boom'));
      return echo(request);
    }, true);
    h.input.write('1 throw\n2 alice\n3 reject\n4 bob\n');
    h.input.end();
    await h.done;
    const replies = h.lines();
    expect(replies).toHaveLength(4);
    for (const channel of ['1', '3']) {
      const reply = replies.find((l) => l.startsWith(`${channel} `)) ?? '';
      expect(squidReadsReply(reply, true)).toMatchObject({ channel, result: 'BH' });
    }
    expect(replies).toContain('2 OK user=alice');
    expect(replies).toContain('4 OK user=bob');
    expect(h.logs.join('\n')).toMatch(/boom/);
    expect(h.logs.join('\n')).toMatch(/async boom/);
  });

  it("logs a reply's cache.log line (stand-alone) or sends it to the shim as a # line before the reply", async () => {
    const refuse = (request: HelperRequest): Promise<HelperReply> =>
      Promise.resolve({
        ...err('RATE_LIMITED'),
        cacheLog: `basic: RATE_LIMITED ${request.fields[0]}\r\nforged`,
      });
    const alone = start(refuse, true);
    alone.input.end('1 alice\n');
    await alone.done;
    expect(alone.lines()).toEqual(['1 ERR message=RATE_LIMITED']);
    expect(alone.logs).toEqual(['basic: RATE_LIMITED alice\r\nforged']);
    const behindShim = start(refuse, true, { cacheLogInline: true });
    behindShim.input.end('2 bob\n');
    await behindShim.done;
    // One line whatever the text holds: a line break in it cannot forge a reply.
    expect(behindShim.lines()).toEqual([
      '#doorman: basic: RATE_LIMITED bob  forged',
      '2 ERR message=RATE_LIMITED',
    ]);
    expect(behindShim.logs).toEqual([]);
  });

  it('answers BH when a handler throws or rejects with something that is not an Error', async () => {
    const h = start((request) => {
      if (request.fields[0] === 'undefined') throw undefined;
      if (request.fields[0] === 'null') return Promise.reject(null);
      if (request.fields[0] === 'string') throw 'just a string';
      return echo(request);
    }, true);
    h.input.write('1 undefined\n2 null\n3 string\n4 alice\n');
    h.input.end();
    await h.done;
    const replies = h.lines().sort();
    expect(replies.map((l) => squidReadsReply(l, true)).map((r) => [r.channel, r.result])).toEqual([
      ['1', 'BH'],
      ['2', 'BH'],
      ['3', 'BH'],
      ['4', 'OK'],
    ]);
  });

  it('answers BH when a reply cannot be formatted (bad key), sync or async, and goes on', async () => {
    const bad: HelperReply = { result: 'OK', pairs: [['not a key', 'x']] };
    const h = start((request) => {
      if (request.fields[0] === 'bad') return bad;
      if (request.fields[0] === 'bad-async') return Promise.resolve(bad);
      return echo(request);
    }, true);
    h.input.write('1 bad\n2 bad-async\n3 alice\n');
    h.input.end();
    await h.done;
    const replies = h.lines().sort();
    expect(replies.map((l) => squidReadsReply(l, true)).map((r) => [r.channel, r.result])).toEqual([
      ['1', 'BH'],
      ['2', 'BH'],
      ['3', 'OK'],
    ]);
  });

  it('answers an overlong line with BH on its channel, also when it arrives in many chunks', async () => {
    const h = start(echo, true, { maxLineBytes: 64 });
    h.input.write(`5 ${'x'.repeat(200)}\n6 alice\n`);
    h.input.write('7 ');
    for (let i = 0; i < 50; i++) h.input.write('y'.repeat(100));
    h.input.write('\n8 bob\n');
    h.input.end();
    await h.done;
    const replies = h.lines();
    expect(replies.map((l) => squidReadsReply(l, true))).toEqual([
      { channel: '5', result: 'BH', notes: [['message', 'request line too long']], rest: '' },
      { channel: '6', result: 'OK', notes: [['user', 'alice']], rest: '' },
      { channel: '7', result: 'BH', notes: [['message', 'request line too long']], rest: '' },
      { channel: '8', result: 'OK', notes: [['user', 'bob']], rest: '' },
    ]);
    expect(h.logs.some((l) => /too long/.test(l))).toBe(true);
  });

  it('answers BH without a channel for a line without one, and goes on', async () => {
    const h = start(echo, true);
    h.input.write('garbage\n\n9 alice\n');
    h.input.end();
    await h.done;
    const replies = h.lines();
    expect(replies).toHaveLength(3);
    expect(squidReadsReply(replies[0] ?? '', true)).toMatchObject({ channel: undefined, result: 'BH' });
    expect(squidReadsReply(replies[1] ?? '', true)).toMatchObject({ channel: undefined, result: 'BH' });
    expect(replies[2]).toBe('9 OK user=alice');
  });
});

describe('without channel-IDs', () => {
  it('keeps request order for a mix of sync and async handlers with random delays', async () => {
    const next = random(42);
    const h = start((request) => {
      const n = Number(request.fields[0]?.slice(4));
      if (n % 3 === 0) return echo(request);
      if (n % 7 === 0) throw new Error('boom');
      const delay = Math.floor(next() * 10);
      return sleep(delay).then(() => echo(request));
    }, false);
    const requests = Array.from({ length: 80 }, (_, i) => `user${i}\n`).join('');
    const chunks = random(3);
    for (let i = 0; i < requests.length;) {
      const size = 1 + Math.floor(chunks() * 40);
      h.input.write(requests.slice(i, i + size));
      i += size;
      if (chunks() < 0.3) await sleep(Math.floor(chunks() * 5));
    }
    h.input.end();
    await h.done;
    const replies = h.lines();
    expect(replies).toHaveLength(80);
    replies.forEach((reply, n) => {
      if (n % 3 !== 0 && n % 7 === 0) expect(reply, `reply ${n}`).toMatch(/^BH /);
      else expect(reply, `reply ${n}`).toBe(`OK user=user${n}`);
    });
  });

  it('holds a later sync answer behind an earlier async one, across chunks', async () => {
    const slow = deferred<HelperReply>();
    const h = start((request) => (request.fields[0] === 'slow' ? slow.promise : echo(request)), false);
    h.input.write('a\nslow\nb\n');
    await tick();
    h.input.write('c\n');
    await tick();
    expect(h.lines()).toEqual(['OK user=a']);
    slow.resolve(ok([['user', 'slow']]));
    h.input.end();
    await h.done;
    expect(h.lines()).toEqual(['OK user=a', 'OK user=slow', 'OK user=b', 'OK user=c']);
  });

  it('keeps request order when the next input arrives while earlier replies are being written', async () => {
    // Input emitted from a microtask (a stream resumed after back-pressure, a PassThrough written by
    // promise code) must not overtake replies that are already queued.
    const slow = deferred<HelperReply>();
    const h = start((request) => (request.fields[0] === 'slow' ? slow.promise : echo(request)), false);
    h.input.write('slow\nb\n');
    slow.resolve(ok([['user', 'slow']]));
    let sent = false;
    for (let i = 0; i < 50 && !sent; i++) {
      await Promise.resolve();
      if (h.writes.join('').includes('user=slow')) {
        h.input.write('c\n');
        sent = true;
      }
    }
    expect(sent).toBe(true);
    h.input.end();
    await h.done;
    expect(h.lines()).toEqual(['OK user=slow', 'OK user=b', 'OK user=c']);
  });

  it('answers a throwing handler and an overlong line with BH in their place', async () => {
    const h = start(
      (request) => {
        if (request.fields[0] === 'throw') throw new Error('boom');
        return request.fields[0] === 'async' ? Promise.resolve(ok([['user', 'async']])) : echo(request);
      },
      false,
      { maxLineBytes: 16 },
    );
    h.input.write(`a\nthrow\nasync\n${'z'.repeat(40)}\nb\n`);
    h.input.end();
    await h.done;
    expect(h.lines().map((l) => squidReadsReply(l, false).result)).toEqual(['OK', 'BH', 'OK', 'BH', 'OK']);
    expect(h.lines()[4]).toBe('OK user=b');
  });
});

describe('I/O', () => {
  /** Requests with channel-IDs, garbage and an overlong line, all answered synchronously. */
  const STREAM = Buffer.from(
    [
      '0 alice -',
      '1 J%C3%BCrgen%20M%C3%BCller -',
      'garbage',
      '',
      '2 nobody -',
      `3 ${'x'.repeat(80)}`,
      '4 caf%E9 -',
      '5 bob\r',
      '6',
      '',
    ].join('\n'),
    'latin1',
  );

  async function run(chunks: readonly Buffer[], channelIds = true): Promise<Harness> {
    const h = start(echo, channelIds, { maxLineBytes: 48 });
    for (const chunk of chunks) h.input.write(chunk);
    h.input.end();
    await h.done;
    return h;
  }

  it('gives the same output for input split at every byte boundary', async () => {
    const whole = (await run([STREAM])).lines();
    expect(whole).toHaveLength(9);
    expect(whole[1]).toBe('1 OK user=J%C3%BCrgen%20M%C3%BCller');
    for (let i = 1; i < STREAM.length; i++) {
      const split = await run([STREAM.subarray(0, i), STREAM.subarray(i)]);
      expect(split.lines(), `split at ${i}`).toEqual(whole);
    }
    const bytes = await run(Array.from(STREAM, (b) => Buffer.from([b])));
    expect(bytes.lines()).toEqual(whole);
  });

  it('writes the synchronous answers to one chunk in one write', async () => {
    const h = start(echo, true);
    h.input.write('1 a\n2 b\n3 nobody\n4 c\n5');
    await tick();
    expect(h.writes).toEqual(['1 OK user=a\n2 OK user=b\n3 ERR\n4 OK user=c\n']);
    h.input.write(' d\n6 e\n');
    await tick();
    expect(h.writes).toHaveLength(2);
    expect(h.writes[1]).toBe('5 OK user=d\n6 OK user=e\n');
    h.input.end();
    await h.done;
  });

  it('writes asynchronous answers that settle together in one write', async () => {
    const pending: Array<ReturnType<typeof deferred<HelperReply>>> = [];
    const h = start(() => {
      const d = deferred<HelperReply>();
      pending.push(d);
      return d.promise;
    }, true);
    h.input.write('1 a\n2 b\n3 c\n');
    await tick();
    for (const d of pending) d.resolve(ok());
    await tick();
    expect(h.writes).toEqual(['1 OK\n2 OK\n3 OK\n']);
    h.input.end();
    await h.done;
  });

  it('writes nothing for a chunk that completes no line', async () => {
    const h = start(echo, true);
    h.input.write('1 al');
    h.input.write('ice');
    await tick();
    expect(h.writes).toEqual([]);
    h.input.end();
    await h.done;
    expect(h.writes).toEqual([]);
  });

  it('resolves only after input ends and every answer is written', async () => {
    for (const channelIds of [true, false]) {
      const slow = deferred<HelperReply>();
      const h = start((request) => (request.fields[0] === 'slow' ? slow.promise : echo(request)), channelIds);
      h.input.write(channelIds ? '1 slow\n2 a\n' : 'slow\na\n');
      await tick();
      expect(h.finished()).toBe(false);
      h.input.end();
      await sleep(5);
      expect(h.finished()).toBe(false);
      slow.resolve(ok([['user', 'slow']]));
      await h.done;
      expect(h.lines()).toHaveLength(2);
      expect(h.lines().some((l) => l.endsWith('OK user=slow'))).toBe(true);
    }
  });

  it('resolves when input ends without any request', async () => {
    const h = start(echo, true);
    h.input.end();
    await h.done;
    expect(h.writes).toEqual([]);
  });

  it('never writes anything but reply lines, whatever comes in', async () => {
    const junk = Buffer.concat([
      Buffer.from('1 alice\n\0\0\0\n\r\n \n2\t10.0.0.5\n%%%\n3 %ZZ\n'),
      Buffer.from([0xff, 0xfe, 0x0a, 0x34, 0x20, 0xc3, 0x0a]),
      Buffer.from(`5 ${'q'.repeat(5000)}\n99999999999999 x\n6 "quoted" \\ \n7 bob`),
    ]);
    for (const channelIds of [true, false]) {
      const h = start(
        (request) => (request.fields[0] === 'boom' ? Promise.reject(new Error('x')) : echo(request)),
        channelIds,
        { maxLineBytes: 1024 },
      );
      for (let i = 0; i < junk.length; i += 13) h.input.write(junk.subarray(i, i + 13));
      h.input.end();
      await h.done;
      const lines = h.lines();
      expect(lines.length).toBe(12);
      for (const line of lines) expect(line, JSON.stringify(line)).toMatch(REPLY_LINE);
    }
  });

  it('calls beforeBatch before and afterBatch after the answers to each chunk', async () => {
    const events: string[] = [];
    const h = start(
      (request) => {
        events.push(`handle ${request.channel}`);
        return echo(request);
      },
      true,
      { beforeBatch: () => events.push('before'), afterBatch: () => events.push(`after ${h.writes.length}`) },
    );
    h.input.write('1 a\n2 b\n');
    h.input.write('3 c\n');
    h.input.end();
    await h.done;
    expect(events).toEqual(['before', 'handle 1', 'handle 2', 'after 1', 'before', 'handle 3', 'after 2']);
  });

  it('stops reading while the output is full and answers everything once it drains', async () => {
    const input = new PassThrough();
    const written: string[] = [];
    const output = new Writable({
      highWaterMark: 64,
      decodeStrings: false,
      write(chunk: string, _encoding, callback) {
        written.push(chunk);
        setTimeout(callback, 1);
      },
    });
    const done = runHelper({ input, output, handle: echo, channelIds: false, log: () => {} });
    const requests = Array.from({ length: 300 }, (_, i) => `u${i}\n`);
    for (let i = 0; i < requests.length; i += 10) input.write(requests.slice(i, i + 10).join(''));
    input.end();
    await done;
    await new Promise<void>((resolve) => output.end(resolve));
    expect(written.join('')).toBe(requests.map((r) => `OK user=${r}`).join(''));
  });
});
