import { linkSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { daemonLog, MAX_DAEMON_LOG_BYTES, oneLine, openDaemonLog } from '../../../lib/log.ts';
import { useTempDir } from '../../support/temp-dir.ts';

const tmp = useTempDir('doorman-log-');

describe('oneLine', () => {
  it('joins the lines of a text with " | "', () => {
    expect(oneLine('a\nb\r\nc')).toBe('a | b | c');
    expect(oneLine('plain')).toBe('plain');
  });
});

describe('a daemon log', () => {
  it('appends one line per call, with the time, the program and its pid', () => {
    const path = join(tmp.dir, 'authd.log');
    writeFileSync(path, 'kept\n');
    const log = daemonLog('doorman-authd', path);
    log('first');
    log('two\nlines');
    const lines = readFileSync(path, 'utf8').split('\n');
    expect(lines[0]).toBe('kept');
    expect(lines[1]).toMatch(
      new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z doorman-authd\\[${process.pid}\\]: first$`),
    );
    expect(lines[2]).toMatch(/: two \| lines$/);
  });

  it('starts the file again, keeping one older generation, before a line would take it past its cap', () => {
    const path = join(tmp.dir, 'authd.log');
    writeFileSync(path, 'old\n');
    truncateSync(path, MAX_DAEMON_LOG_BYTES - 10);
    const log = daemonLog('doorman-authd', path);
    log('this line does not fit');
    log('nor is it alone');
    expect(statSync(`${path}.1`).size).toBe(MAX_DAEMON_LOG_BYTES - 10);
    expect(readFileSync(path, 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
  });

  it('keeps one older generation once the file is past its cap', () => {
    const path = join(tmp.dir, 'authd.log');
    writeFileSync(path, 'old\n');
    truncateSync(path, MAX_DAEMON_LOG_BYTES + 1);
    daemonLog('doorman-authd', path)('new');
    expect(statSync(`${path}.1`).size).toBe(MAX_DAEMON_LOG_BYTES + 1);
    expect(readFileSync(path, 'utf8')).toMatch(/: new\n$/);
  });

  it('refuses a link or a second name in its place, writing nothing through it', () => {
    const victim = join(tmp.dir, 'victim');
    writeFileSync(victim, 'untouched\n');
    symlinkSync(victim, join(tmp.dir, 'linked.log'));
    expect(() => openDaemonLog(join(tmp.dir, 'linked.log'))).toThrow(/ELOOP/);
    linkSync(victim, join(tmp.dir, 'hard.log'));
    expect(() => openDaemonLog(join(tmp.dir, 'hard.log'))).toThrow(
      /not a regular file of this user's with one name/,
    );
    expect(readFileSync(victim, 'utf8')).toBe('untouched\n');
  });
});
