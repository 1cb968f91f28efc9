import { describe, expect, it } from 'vitest';
import { unixSocketTable } from '../../../../helpers/authd/bound-paths.ts';
import { handoverValue, inheritedFds, matchKinds } from '../../../../helpers/authd/listen-fds.ts';

const expected = {
  session: '/s/run/session.sock',
  basic: '/s/run/basic.sock',
  group: '/s/run/group.sock',
  negotiate: '/s/run/negotiate.sock',
  ntlm: '/s/run/ntlm.sock',
};

describe('inheritedFds', () => {
  it("reads systemd's LISTEN_FDS for this pid, from descriptor 3, with LISTEN_FDNAMES", () => {
    expect(inheritedFds({ LISTEN_FDS: '2', LISTEN_PID: '42', LISTEN_FDNAMES: 'session:basic' }, 42)).toEqual({
      from: 'systemd',
      fds: [
        { fd: 3, name: 'session' },
        { fd: 4, name: 'basic' },
      ],
    });
  });

  it('ignores variables meant for another pid, and reads none when unset', () => {
    expect(inheritedFds({ LISTEN_FDS: '2', LISTEN_PID: '41' }, 42)).toBeUndefined();
    expect(inheritedFds({}, 42)).toBeUndefined();
  });

  it("reads a predecessor's DOORMAN_LISTEN_FDS, kind=fd pairs", () => {
    expect(inheritedFds({ DOORMAN_LISTEN_FDS: 'session=4,ntlm=5' }, 42)).toEqual({
      from: 'handover',
      fds: [
        { fd: 4, name: 'session' },
        { fd: 5, name: 'ntlm' },
      ],
    });
  });

  it('refuses malformed values with code LISTEN_FDS, naming them', () => {
    expect(() => inheritedFds({ LISTEN_FDS: 'x', LISTEN_PID: '42' }, 42)).toThrow(
      'LISTEN_FDS="x": expected a count',
    );
    expect(() => inheritedFds({ LISTEN_FDS: '2', LISTEN_PID: '42', LISTEN_FDNAMES: 'a' }, 42)).toThrow(
      'LISTEN_FDNAMES has 1 names for LISTEN_FDS=2',
    );
    expect(() => inheritedFds({ DOORMAN_LISTEN_FDS: 'shell=4' }, 42)).toThrow(
      expect.objectContaining({
        code: 'LISTEN_FDS',
        message: 'DOORMAN_LISTEN_FDS: "shell=4" is not kind=fd',
      }),
    );
  });
});

describe('matchKinds', () => {
  it('matches by FileDescriptorName=, else by the bound path', () => {
    const byKind = matchKinds(
      [
        { fd: 3, name: 'doorman-authd.socket' },
        { fd: 4, name: 'group' },
      ],
      expected,
      (fd) => (fd === 3 ? '/s/run/session.sock' : undefined),
    );
    expect([...byKind]).toEqual([
      ['session', 3],
      ['group', 4],
    ]);
  });

  it('refuses a descriptor of no kind, two of one kind, and none for the session lookup', () => {
    expect(() => matchKinds([{ fd: 3, name: 'x' }], expected, () => '/elsewhere.sock')).toThrow(
      /descriptor 3 \(name "x", path \/elsewhere\.sock\) is no helper's/,
    );
    expect(() =>
      matchKinds(
        [
          { fd: 3, name: 'session' },
          { fd: 4, name: 'session' },
        ],
        expected,
        () => undefined,
      ),
    ).toThrow('two descriptors for session (3 and 4)');
    expect(() => matchKinds([{ fd: 3, name: 'basic' }], expected, () => undefined)).toThrow(
      'no descriptor for the session lookup',
    );
  });

  it('names the successor its descriptors', () => {
    expect(
      handoverValue(
        new Map([
          ['session', 4],
          ['basic', 5],
        ] as const),
      ),
    ).toBe('session=4,basic=5');
  });
});

describe('unixSocketTable', () => {
  it("reads each bound socket's inode and path from /proc/net/unix, skipping unbound ones", () => {
    const text = [
      'Num       RefCount Protocol Flags    Type St Inode Path',
      '0000000000000000: 00000002 00000000 00010000 0001 01 31337 /var/lib/doorman/run/session.sock',
      '0000000000000000: 00000003 00000000 00000000 0001 03 31338',
      '0000000000000000: 00000002 00000000 00010000 0001 01 31339 @abstract',
      '',
    ].join('\n');
    expect(unixSocketTable(text)).toEqual([
      ['31337', '/var/lib/doorman/run/session.sock'],
      ['31339', '@abstract'],
    ]);
  });
});
