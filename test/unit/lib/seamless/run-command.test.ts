import { describe, expect, it } from 'vitest';
import {
  describeFailure,
  lastLines,
  MAX_OUTPUT_BYTES,
  passwordLine,
  spawnRunner,
} from '../../../../lib/seamless/run-command.ts';

describe('spawnRunner', () => {
  it('writes stdin to the child, then zeroes the Buffer it was given', async () => {
    const stdin = passwordLine(Buffer.from('S3cret'));
    const outcome = await spawnRunner({
      command: 'sh',
      args: ['-c', 'read line; printf "got %s" "$line"'],
      stdin,
    });
    expect(outcome).toEqual({ code: 0, stdout: 'got S3cret', stderr: '' });
    expect(stdin.every((byte) => byte === 0)).toBe(true);
  });

  it('passes the given variables and never PASSWD or PASSWD_FD from our own environment', async () => {
    process.env.PASSWD = 'leaked';
    process.env.PASSWD_FD = '3';
    try {
      const outcome = await spawnRunner({
        command: 'sh',
        args: ['-c', 'printf "%s|%s|%s" "${PASSWD-unset}" "${PASSWD_FD-unset}" "$KRB5_CONFIG"'],
        env: { KRB5_CONFIG: '/x/krb5.conf' },
      });
      expect(outcome.stdout).toBe('unset|unset|/x/krb5.conf');
    } finally {
      delete process.env.PASSWD;
      delete process.env.PASSWD_FD;
    }
  });

  it('reports a missing command, a non-zero exit and a timeout, without throwing', async () => {
    expect((await spawnRunner({ command: '/nonexistent/net', args: [] })).error).toBe('ENOENT');
    const failed = await spawnRunner({ command: 'sh', args: ['-c', 'echo oops >&2; exit 3'] });
    expect(failed).toEqual({ code: 3, stdout: '', stderr: 'oops\n' });
    const slow = await spawnRunner({ command: 'sleep', args: ['10'], timeoutMs: 50 });
    expect(slow).toMatchObject({ code: null, error: 'timed out after 50 ms' });
  });

  it('keeps at most MAX_OUTPUT_BYTES of output', async () => {
    const outcome = await spawnRunner({
      command: 'head',
      args: ['-c', String(MAX_OUTPUT_BYTES * 2), '/dev/zero'],
    });
    expect(outcome.stdout.length).toBe(MAX_OUTPUT_BYTES);
  });
});

describe('describeFailure', () => {
  it('names the command, how it ended and its last lines, without options', () => {
    expect(
      describeFailure(
        { command: 'net', args: ['ads', 'join', '-U', 'Administrator'] },
        { code: 255, stdout: '', stderr: 'line 1\nFailed to join domain: Constraint violation\n' },
      ),
    ).toBe('net ads join failed (exit code 255): line 1 / Failed to join domain: Constraint violation');
    expect(lastLines(`${'x'.repeat(700)}\n`, 3)).toHaveLength(601);
  });
});
