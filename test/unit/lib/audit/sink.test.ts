import { readFileSync, renameSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { auditRecord } from '../../../../lib/audit/event.ts';
import { auditSinks } from '../../../../lib/audit/sink.ts';
import { useTempDir } from '../../../support/temp-dir.ts';

const record = (user: string) =>
  auditRecord(
    { kind: 'api.login', actor: 'api-key:wifi', user, address: '10.0.0.5' },
    Date.UTC(2026, 0, 1),
    'proxy1',
  );
const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { user: string }).user);

describe('the audit file sink', () => {
  const tmp = useTempDir('doorman-audit-sink-');

  it("appends JSON lines to a file it creates 0640 (under the services' umask 077 too), and follows a rotation (the path renamed away)", async () => {
    const umask = process.umask(0o077);
    onTestFinished(() => void process.umask(umask));
    const path = join(tmp.dir, 'audit.log');
    const logs: string[] = [];
    const sink = auditSinks({ file: path, syslog: false }, { log: (l) => logs.push(l) });
    sink?.ship([record('a'), record('b')]);
    await vi.waitFor(() => expect(lines(path)).toEqual(['a', 'b']));
    expect(statSync(path).mode & 0o777).toBe(0o640);
    renameSync(path, `${path}.1`);
    sink?.ship([record('c')]);
    await vi.waitFor(() => expect(lines(path)).toEqual(['c']));
    expect(statSync(path).mode & 0o777).toBe(0o640);
    expect(lines(`${path}.1`)).toEqual(['a', 'b']);
    await sink?.close();
    expect(logs).toEqual([]);
  });

  it('a sink that cannot write drops, counts and says so, and never throws into ship()', async () => {
    const logs: string[] = [];
    const sink = auditSinks(
      { file: join(tmp.dir, 'missing-dir', 'audit.log'), syslog: false },
      { log: (l) => logs.push(l) },
    );
    expect(() => sink?.ship([record('a'), record('b')])).not.toThrow();
    await vi.waitFor(() => expect(sink?.dropped).toBe(2));
    expect(logs).toEqual([expect.stringMatching(/^audit: 2 event\(s\) not written to the file sink/)]);
    await sink?.close();
  });

  it('a slow sink holds at most its queue: what does not fit is dropped and counted', async () => {
    const path = join(tmp.dir, 'audit.log');
    const logs: string[] = [];
    const sink = auditSinks({ file: path, syslog: false }, { log: (l) => logs.push(l), queueMax: 3 });
    // The first batch is being written; four more arrive meanwhile, one does not fit.
    sink?.ship([record('a')]);
    sink?.ship([record('b'), record('c'), record('d'), record('e')]);
    expect(sink?.dropped).toBe(1);
    await vi.waitFor(() => expect(lines(path)).toEqual(['a', 'b', 'c', 'd']));
    expect(logs).toEqual([expect.stringContaining('queue full')]);
    await sink?.close();
  });

  it('none configured: no sink', () => {
    expect(auditSinks({ file: null, syslog: false }, { log: () => undefined })).toBeUndefined();
  });
});

describe('the audit syslog sink', () => {
  const tmp = useTempDir('doorman-audit-syslog-');

  it('sends one datagram an event to the socket: authpriv.info, tag doorman-audit, the JSON line', async () => {
    const path = join(tmp.dir, 'log.sock');
    const require = createRequire(import.meta.url);
    const unix = require('unix-dgram') as {
      createSocket(
        type: 'unix_dgram',
        listener: (buf: Buffer) => void,
      ): { bind(p: string): void; close(): void };
    };
    const got: string[] = [];
    const server = unix.createSocket('unix_dgram', (buf) => got.push(buf.toString()));
    server.bind(path);
    try {
      const sink = auditSinks({ file: null, syslog: true }, { log: () => undefined, syslogPath: path });
      sink?.ship([record('a'), record('b')]);
      await vi.waitFor(() => expect(got).toHaveLength(2));
      expect(got[0]).toMatch(
        /^<86>\w{3} [ \d]\d \d\d:\d\d:\d\d doorman-audit\[\d+\]: \{"at":"2026-01-01T00:00:00.000Z".*"user":"a"/,
      );
      await sink?.close();
    } finally {
      server.close();
    }
  });
});
