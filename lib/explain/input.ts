import { InvalidInputError, showValue } from '../errors.ts';
import { normaliseIp } from '../net/address.ts';
import { classifyMac } from '../net/mac-class.ts';

/** The longest value read from a field: an IPv6 address with an IPv4 tail is 45 characters, a MAC 17. */
const MAX_FIELD = 64;

export interface ExplainInput {
  /** normaliseIp form. */
  ip: string;
  /** A device's MAC (unicast EUI-48), lower case with ':'; undefined: look it up as the portal does. */
  mac: string | undefined;
}

/**
 * The client to explain, from the command line or the Explain screen's form. Throws InvalidInputError naming
 * the field (ip, mac), the value given and what is allowed.
 */
export function parseExplainInput(ip: string | undefined, mac: string | undefined): ExplainInput {
  const givenIp = (ip ?? '').trim();
  if (givenIp === '') throw new InvalidInputError('ip', "required: the client's IPv4 or IPv6 address");
  const address = givenIp.length > MAX_FIELD ? undefined : normaliseIp(givenIp);
  if (address === undefined)
    throw new InvalidInputError(
      'ip',
      `${showValue(givenIp)} is not an IP address (allowed: IPv4 like 10.0.0.5, or IPv6 like 2001:db8::5)`,
    );
  const givenMac = (mac ?? '').trim();
  if (givenMac === '') return { ip: address, mac: undefined };
  const cls = givenMac.length > MAX_FIELD ? ({ kind: 'invalid' } as const) : classifyMac(givenMac);
  if (cls.kind !== 'unicast')
    throw new InvalidInputError(
      'mac',
      `${showValue(givenMac)} is ${cls.kind === 'invalid' ? 'not a MAC address' : `a ${cls.kind === 'none' ? 'zero' : cls.kind} address, not a device's`} (allowed: six hex pairs joined by ":" or "-", like 3a:48:7a:63:96:26)`,
    );
  return { ip: address, mac: cls.mac };
}
