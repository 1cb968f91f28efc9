import { adminArgument } from './join.ts';
import { parseSeamlessSettings, type SeamlessSettings } from './settings.ts';

/**
 * The child trusts nothing the parent (the service user's process, which faces the network) says beyond the
 * dialogue's meaning: the settings are written back into the dialogue's fields and checked again here, as root,
 * with the same rules, and only what that check returns is used. A parent that sent a domain or a user name the
 * dialogue would refuse (a line break for smb.conf, an option for net) gets the problems, and nothing runs.
 */
export function recheckSettings(settings: SeamlessSettings, password: Buffer): SeamlessSettings {
  const checked = parseSeamlessSettings({
    serverVersion: settings.serverVersion,
    domain: settings.domain,
    netbiosDomain: settings.netbiosDomain,
    adminUser: adminArgument(settings.adminUser),
    // Only checked for its form here; the parent's Buffer is the one used (and zeroed).
    adminPassword: password.length === 0 ? '' : 'x',
  });
  if (!checked.ok) {
    throw new Error(
      `refused settings: ${checked.problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`,
    );
  }
  checked.password.fill(0);
  if (checked.settings.realm !== settings.realm) {
    throw new Error(
      `refused settings: realm: ${JSON.stringify(settings.realm)} is not the domain upper-cased`,
    );
  }
  return checked.settings;
}
