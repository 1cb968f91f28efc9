import { describe, expect, it } from 'vitest';
import { helperSocket, runDir, seamlessPaths } from '../../../../lib/seamless/paths.ts';
import { memberSmbConf } from '../../../../lib/seamless/samba-config.ts';

describe('seamlessPaths', () => {
  it("puts root's files beside the state directory, not in it, where the member smb.conf points Samba", () => {
    const paths = seamlessPaths({ stateDir: '/var/lib/doorman/', sambaDir: null });
    expect(paths).toEqual({
      sambaDir: '/var/lib/doorman-samba',
      smbConf: '/var/lib/doorman-samba/smb.conf',
      krb5Conf: '/var/lib/doorman-samba/krb5.conf',
      keytab: '/var/lib/doorman-samba/http.keytab',
      winbindPrivilegedDir: '/var/lib/doorman-samba/state/winbindd_privileged',
      rcacheDir: '/var/lib/doorman/rcache',
    });
    const conf = memberSmbConf({
      serverVersion: '2012',
      netbiosDomain: 'EXAMPLE',
      realm: 'EXAMPLE.TEST',
      proxyHostName: 'proxy.example.test',
      sambaDir: paths.sambaDir,
    });
    expect(conf).toContain(`dedicated keytab file = FILE:${paths.keytab}\n`);
    expect(conf).toContain('state directory = /var/lib/doorman-samba/state\n');
  });

  it('takes a sambaDir that is set as it is', () => {
    expect(seamlessPaths({ stateDir: '/var/lib/doorman', sambaDir: '/srv/samba' }).keytab).toBe(
      '/srv/samba/http.keytab',
    );
  });

  it('names one socket per helper kind in <stateDir>/run', () => {
    expect(runDir('/s')).toBe('/s/run');
    expect(helperSocket('/s', 'negotiate')).toBe('/s/run/negotiate.sock');
    expect(helperSocket('/s', 'session')).toBe('/s/run/session.sock');
  });
});
