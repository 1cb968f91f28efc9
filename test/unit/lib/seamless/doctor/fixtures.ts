/**
 * Real outputs from the lab (../shared/lab/REPORT.md §6.1 and §6.5, seamless/5-doctor-checks.sh), used as the
 * doctor's inputs. The keytab's entry lines are the lab's `klist -ket http.keytab` verbatim, under MIT klist's
 * own two header lines.
 */
export const KLIST_HEADER = [
  'Keytab name: FILE:/tmp/lab-seamless/samba/member/http.keytab',
  'KVNO Timestamp         Principal',
  '---- ----------------- --------------------------------------------------------',
];

export const LAB_KEYTAB_LINES = [
  '   1 11/22/26 21:28:36 HTTP/proxy.example.test@EXAMPLE.TEST (aes256-cts-hmac-sha1-96) ',
  '   1 11/22/26 21:28:36 HTTP/PROXY@EXAMPLE.TEST (aes256-cts-hmac-sha1-96) ',
  '   1 11/22/26 21:28:36 HTTP/proxy.example.test@EXAMPLE.TEST (aes128-cts-hmac-sha1-96) ',
  '   1 11/22/26 21:28:36 HTTP/PROXY@EXAMPLE.TEST (aes128-cts-hmac-sha1-96) ',
  '   1 11/22/26 21:28:36 HTTP/proxy.example.test@EXAMPLE.TEST (DEPRECATED:arcfour-hmac) ',
  '   1 11/22/26 21:28:36 HTTP/PROXY@EXAMPLE.TEST (DEPRECATED:arcfour-hmac) ',
];

export const klistOutput = (lines: readonly string[]) => `${[...KLIST_HEADER, ...lines].join('\n')}\n`;

/** `net ads info -P` (good) and under `faketime -f '+10m'` (the local clock 10 minutes fast). */
export const NET_ADS_INFO_GOOD = [
  'LDAP server: 127.0.0.1',
  'LDAP server name: dc1.example.test',
  'Realm: EXAMPLE.TEST',
  'Bind Path: dc=EXAMPLE,dc=TEST',
  'LDAP port: 389',
  'Server time: Sun, 22 Nov 2026 21:33:45 UTC',
  'KDC server: 127.0.0.1',
  'Server time offset: 0',
  'Last machine account password change: Sun, 22 Nov 2026 21:28:35 UTC',
].join('\n');
export const NET_ADS_INFO_SKEWED = 'Server time offset: -600\n';

/** The rootDSE's currentTime, anonymous ldapsearch. */
export const CURRENT_TIME = '20261122213345.0Z';

/** `id proxy` on Debian. */
export const ID_PROXY = 'uid=13(proxy) gid=13(proxy) groups=13(proxy)\n';
