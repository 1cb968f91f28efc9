import { join } from 'node:path';
import { httpKeytabPath, sambaDir } from './samba-config.ts';

/**
 * Where seamless authentication keeps its files, all under Doorman's state directory, so one `stateDir`
 * setting moves everything and nothing is written to /etc/samba, /var/lib/samba or /etc/krb5.keytab. The
 * directories inside `samba/` are the ones samba-config.ts writes into smb.conf (private, lock, state, cache,
 * pid): keep the two in step.
 */
export interface SeamlessPaths {
  /** `<stateDir>/samba`: smb.conf, krb5.conf, the keytab and Samba's own state. */
  sambaDir: string;
  smbConf: string;
  krb5Conf: string;
  /** The HTTP/-only keytab (samba-config.ts httpKeytabPath): root:<helper group> 0640. */
  keytab: string;
  /**
   * winbindd's privileged pipe directory: winbindd makes it in smb.conf's `state directory` with mode 0750;
   * Squid's helper user reaches it through its group (lab trap 11).
   */
  winbindPrivilegedDir: string;
  /** The Kerberos replay cache of the acceptor (KRB5RCACHEDIR), owned by the helper user. */
  rcacheDir: string;
}

export function seamlessPaths(stateDir: string): SeamlessPaths {
  const samba = sambaDir(stateDir);
  return {
    sambaDir: samba,
    smbConf: join(samba, 'smb.conf'),
    krb5Conf: join(samba, 'krb5.conf'),
    keytab: httpKeytabPath(stateDir),
    winbindPrivilegedDir: join(samba, 'state', 'winbindd_privileged'),
    rcacheDir: join(stateDir, 'rcache'),
  };
}

/** The kinds of helper Squid runs, each relayed by the shim to authd over a socket of its own. */
export const HELPER_KINDS = ['session', 'basic', 'group', 'negotiate', 'ntlm'] as const;
export type HelperKind = (typeof HELPER_KINDS)[number];

/** `<stateDir>/run`: authd's sockets (mode 0750, group = the helper user's). */
export function runDir(stateDir: string): string {
  return join(stateDir, 'run');
}

/** `<stateDir>/run/<kind>.sock`: the socket the shim for `kind` connects to. */
export function helperSocket(stateDir: string, kind: HelperKind): string {
  return join(runDir(stateDir), `${kind}.sock`);
}
