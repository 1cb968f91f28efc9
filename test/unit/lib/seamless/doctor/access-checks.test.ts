import { describe, expect, it } from 'vitest';
import { checkKeytabAccess, checkPrivilegedPipe } from '../../../../../lib/seamless/doctor/access-checks.ts';
import { unavailable } from '../../../../../lib/seamless/doctor/check-result.ts';
import { CONTEXT, GOOD, PROXY, stat } from './lab-setup.ts';

describe('keytab-access', () => {
  it('passes for the lab: root:proxy 0640', () => {
    expect(checkKeytabAccess(CONTEXT, { file: GOOD.keytabFile, user: PROXY })).toMatchObject({
      status: 'ok',
      detail:
        '/var/lib/doorman/samba/http.keytab (uid 0, gid 13, mode 0640) is readable by proxy, not by others',
    });
  });

  it('fails on the lab break (chmod 600), with the fix', () => {
    const result = checkKeytabAccess(CONTEXT, { file: stat(0o100600, 0, 13), user: PROXY });
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      '/var/lib/doorman/samba/http.keytab (uid 0, gid 13, mode 0600): proxy may not read it',
      'chown root:proxy /var/lib/doorman/samba/http.keytab; chmod 640 /var/lib/doorman/samba/http.keytab',
    ]);
  });

  it('fails on the wrong group, and on a world-readable keytab', () => {
    expect(checkKeytabAccess(CONTEXT, { file: stat(0o100640, 0, 0), user: PROXY }).detail).toContain(
      'proxy may not read it',
    );
    expect(checkKeytabAccess(CONTEXT, { file: stat(0o100644, 0, 13), user: PROXY }).detail).toBe(
      '/var/lib/doorman/samba/http.keytab (uid 0, gid 13, mode 0644): anyone on this host may read or write it, and impersonate the proxy with its keys',
    );
    expect(checkKeytabAccess(CONTEXT, { file: stat(0o040750, 0, 13), user: PROXY }).detail).toContain(
      'it is a directory, not a file',
    );
  });

  it('is skipped when the keytab or the user is missing', () => {
    expect(checkKeytabAccess(CONTEXT, { file: unavailable('ENOENT'), user: PROXY }).status).toBe('skipped');
    expect(
      checkKeytabAccess(CONTEXT, { file: GOOD.keytabFile, user: unavailable('no such user') }),
    ).toMatchObject({
      status: 'skipped',
      detail: "Squid's helper user could not be looked up: no such user",
    });
  });
});

describe('priv-pipe', () => {
  it('passes for the lab: root:proxy 0750', () => {
    expect(checkPrivilegedPipe(CONTEXT, { file: GOOD.privilegedPipeDir, user: PROXY }).status).toBe('ok');
  });

  it('fails on the lab break (chgrp root), with the fix', () => {
    const result = checkPrivilegedPipe(CONTEXT, { file: stat(0o040750, 0, 0), user: PROXY });
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      '/var/lib/doorman/samba/state/winbindd_privileged (uid 0, gid 0, mode 0750): proxy may not enter it (not its owner, and not in its group 0)',
      'chgrp proxy /var/lib/doorman/samba/state/winbindd_privileged; chmod 0750 /var/lib/doorman/samba/state/winbindd_privileged',
    ]);
  });

  it('fails on a mode other than 0750, even one that lets proxy in', () => {
    expect(checkPrivilegedPipe(CONTEXT, { file: stat(0o040755, 0, 13), user: PROXY }).detail).toBe(
      '/var/lib/doorman/samba/state/winbindd_privileged (uid 0, gid 13, mode 0755): mode 0755, but winbindd wants 0750',
    );
    expect(checkPrivilegedPipe(CONTEXT, { file: stat(0o100750, 0, 13), user: PROXY }).detail).toContain(
      'it is a file, not a directory',
    );
  });
});
