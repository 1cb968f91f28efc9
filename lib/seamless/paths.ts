import { join } from 'node:path';
import { besideStateDir } from '../config/load.ts';
import { httpKeytabPath } from './samba-config.ts';

/**
 * Where seamless authentication keeps its files. What root manages (Samba's configuration and private state,
 * the keytab, winbind's privileged pipe) is in `sambaDir`, a root-owned directory outside stateDir: stateDir
 * belongs to the service user, who could plant links there or rename what root made (docs/security.md). Only
 * the replay cache, the acceptor's own, stays in stateDir. The directories inside sambaDir are the ones
 * samba-config.ts writes into smb.conf (private, lock, state, cache, run, log): keep the two in step.
 */
export interface SeamlessPaths {
  /** The root-owned directory: smb.conf, krb5.conf, the keytab and Samba's own state. root:<helper group> 0750. */
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
  /** The Kerberos replay cache of the acceptor (KRB5RCACHEDIR): the helper user's, made by authd as that user. */
  rcacheDir: string;
}

/** The settings that place seamless authentication's files (Config has both). */
export interface SeamlessDirs {
  stateDir: string;
  /** null: `<stateDir>-samba`. */
  sambaDir: string | null;
}

/** The root-owned directory for Samba: as configured, else beside stateDir (/var/lib/doorman-samba). */
export function sambaDirOf(dirs: SeamlessDirs): string {
  return dirs.sambaDir ?? besideStateDir(dirs.stateDir, 'samba');
}

export function seamlessPaths(dirs: SeamlessDirs): SeamlessPaths {
  const samba = sambaDirOf(dirs);
  return {
    sambaDir: samba,
    smbConf: join(samba, 'smb.conf'),
    krb5Conf: join(samba, 'krb5.conf'),
    keytab: httpKeytabPath(samba),
    winbindPrivilegedDir: join(samba, 'state', 'winbindd_privileged'),
    rcacheDir: join(dirs.stateDir, 'rcache'),
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
