import { describe, expect, it } from 'vitest';
import { seamlessPaths } from '../../../../lib/seamless/paths.ts';
import { memberSmbConfPath } from '../../../../lib/seamless/not-enabled.ts';

describe('memberSmbConfPath', () => {
  it("is seamlessPaths's smb.conf, for a sambaDir given or beside stateDir", () => {
    const dirs = [
      { stateDir: '/var/lib/doorman', sambaDir: null },
      { stateDir: '/var/lib/doorman//', sambaDir: null },
      { stateDir: '/srv/d', sambaDir: '/srv/samba' },
      { stateDir: '/srv/d/', sambaDir: '/srv/samba/' },
      { stateDir: '/', sambaDir: null },
    ];
    for (const d of dirs) expect(memberSmbConfPath(d), JSON.stringify(d)).toBe(seamlessPaths(d).smbConf);
    expect(memberSmbConfPath({ stateDir: '/var/lib/doorman', sambaDir: null })).toBe(
      '/var/lib/doorman-samba/smb.conf',
    );
  });
});
