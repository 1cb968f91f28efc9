import { normaliseIp, normaliseMac } from './address.ts';
import type { NeighbourEntry, NeighbourListing } from './neighbour-table.ts';

/**
 * The kernel's IPv4 neighbour (ARP) table as /proc/net/arp shows it (net/ipv4/arp.c, arp_format_neigh_entry):
 * a header line, then one line per entry:
 *
 *   IP address       HW type     Flags       HW address            Mask     Device
 *   10.91.0.2        0x1         0x2         3a:48:7a:63:96:26     *        lan0
 *   10.91.0.9        0x1         0x0         00:00:00:00:00:00     *        lan0
 *
 * Flags (arp_state_to_flags): ATF_COM (0x2) once the address is resolved (NUD_VALID: REACHABLE, STALE,
 * DELAY, PROBE), with ATF_PERM (0x4) for a PERMANENT entry; 0 while INCOMPLETE or FAILED, when the hardware
 * address is all zeros. NOARP entries are not listed. Read as a file, so an IPv4 lookup starts no process.
 */

/** 80 bytes a line: 1 MiB is about 13,000 entries. Longer is refused, not cut. */
export const MAX_PROC_ARP = 1024 * 1024;

const ATF_COM = 0x2;
const ATF_PERM = 0x4;

export function parseProcArp(text: string, maxLength = MAX_PROC_ARP): NeighbourListing {
  if (text.length > maxLength) {
    return { ok: false, reason: `/proc/net/arp is ${text.length} characters, over the ${maxLength} cap` };
  }
  const lines = text.split('\n');
  if (!(lines[0] ?? '').startsWith('IP address')) {
    return { ok: false, reason: '/proc/net/arp does not start with its "IP address" header line' };
  }
  const entries: NeighbourEntry[] = [];
  for (const line of lines.slice(1)) {
    // Fixed columns separated by runs of spaces; a device name never holds a space.
    const fields = line.trim().split(/ +/);
    if (fields.length !== 6) continue;
    const [dst, , flagsText, lladdr, , dev] = fields as [string, string, string, string, string, string];
    const ip = normaliseIp(dst);
    const flags = /^0x[0-9a-f]{1,8}$/i.test(flagsText) ? parseInt(flagsText, 16) : Number.NaN;
    if (ip === undefined || Number.isNaN(flags)) continue;
    entries.push({
      ip,
      mac: normaliseMac(lladdr),
      lladdr,
      state: (flags & ATF_PERM) !== 0 ? 'PERMANENT' : (flags & ATF_COM) !== 0 ? 'REACHABLE' : 'INCOMPLETE',
      dev,
      router: false,
    });
  }
  return { ok: true, entries };
}
