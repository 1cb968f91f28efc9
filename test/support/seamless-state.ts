import type { SeamlessState } from '../../lib/store/seamless-settings-store.ts';

/**
 * A proxy joined as PROXY (proxy.example.test) to example.test, Windows Server 2012, by Administrator: the
 * state the tests save or expect. A fresh object per call, so that no test changes another's.
 */
export function joinedState(joinedAt = 1): SeamlessState {
  return {
    serverVersion: '2012',
    domain: 'example.test',
    realm: 'EXAMPLE.TEST',
    netbios: 'EXAMPLE',
    adminUser: 'Administrator',
    proxyFqdn: 'proxy.example.test',
    machineName: 'PROXY',
    joinedAt,
  };
}
