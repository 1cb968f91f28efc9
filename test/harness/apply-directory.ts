import type { RunOptions, RunResult } from './run.ts';
import type { SambaAd } from './samba-ad.ts';
import type { Slapd } from './slapd.ts';

/** `doorman directory set` arguments for a test directory over LDAPS, trusting the harness's CA. */
export function directorySetArgs(server: Slapd | SambaAd, extra: readonly string[] = []): string[] {
  const ad = 'realm' in server;
  return [
    'directory',
    'set',
    ...(ad
      ? // AD wants a host name: the DC's certificate is for dc1.example.test, reached by address.
        ['--kind', 'active-directory', '--host', 'dc1.example.test', '--address', server.host]
      : ['--kind', 'open-directory', '--host', server.host, '--port', String(server.ldapsPort)]),
    '--transport',
    'ldaps',
    '--ca-file',
    server.caFile,
    '--base-dn',
    server.baseDn,
    '--bind-dn',
    server.bindDn,
    '--password-stdin',
    ...extra,
  ];
}

/** Save & apply a test directory with the doorman CLI; resolves with its "Found N user groups" output. */
export function applyDirectory(
  doorman: (args: readonly string[], options?: RunOptions) => Promise<RunResult>,
  server: Slapd | SambaAd,
  extra: readonly string[] = [],
): Promise<RunResult> {
  return doorman(directorySetArgs(server, extra), { input: `${server.bindPassword}\n` });
}
