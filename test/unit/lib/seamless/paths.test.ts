import { describe, expect, it } from 'vitest';
import { helperSocket, runDir, seamlessPaths } from '../../../../lib/seamless/paths.ts';
import { memberSmbConf } from '../../../../lib/seamless/samba-config.ts';

describe('seamlessPaths', () => {
  it('puts everything under the state directory, where the member smb.conf points Samba', () => {
    const paths = seamlessPaths('/var/lib/doorman');
    expect(paths).toEqual({
      sambaDir: '/var/lib/doorman/samba',
      smbConf: '/var/lib/doorman/samba/smb.conf',
      krb5Conf: '/var/lib/doorman/samba/krb5.conf',
      keytab: '/var/lib/doorman/samba/http.keytab',
      winbindPrivilegedDir: '/var/lib/doorman/samba/state/winbindd_privileged',
      rcacheDir: '/var/lib/doorman/rcache',
    });
    const conf = memberSmbConf({
      serverVersion: '2012',
      netbiosDomain: 'EXAMPLE',
      realm: 'EXAMPLE.TEST',
      proxyHostName: 'proxy.example.test',
      stateDir: '/var/lib/doorman',
    });
    expect(conf).toContain(`dedicated keytab file = FILE:${paths.keytab}\n`);
    expect(conf).toContain('state directory = /var/lib/doorman/samba/state\n');
  });

  it('names one socket per helper kind in <stateDir>/run', () => {
    expect(runDir('/s')).toBe('/s/run');
    expect(helperSocket('/s', 'negotiate')).toBe('/s/run/negotiate.sock');
    expect(helperSocket('/s', 'session')).toBe('/s/run/session.sock');
  });
});
