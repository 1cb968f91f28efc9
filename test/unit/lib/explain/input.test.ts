import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../lib/errors.ts';
import { parseExplainInput } from '../../../../lib/explain/input.ts';

const refusal = (ip: string | undefined, mac?: string) => {
  try {
    parseExplainInput(ip, mac);
  } catch (error) {
    if (error instanceof InvalidInputError) return { field: error.field, message: error.message };
    throw error;
  }
  throw new Error('accepted');
};

describe('parseExplainInput: the client to explain', () => {
  it('an address in any spelling, a MAC with ":" or "-"', () => {
    expect(parseExplainInput(' 10.0.0.5 ', undefined)).toEqual({ ip: '10.0.0.5', mac: undefined });
    expect(parseExplainInput('::ffff:10.0.0.5', '3A-48-7A-63-96-26')).toEqual({
      ip: '10.0.0.5',
      mac: '3a:48:7a:63:96:26',
    });
    expect(parseExplainInput('2001:DB8::5', '')).toEqual({ ip: '2001:db8::5', mac: undefined });
  });

  it('names the field, the value and what is allowed', () => {
    expect(refusal(undefined)).toEqual({
      field: 'ip',
      message: "ip: required: the client's IPv4 or IPv6 address",
    });
    expect(refusal('10.0.0.256')).toEqual({
      field: 'ip',
      message:
        'ip: "10.0.0.256" is not an IP address (allowed: IPv4 like 10.0.0.5, or IPv6 like 2001:db8::5)',
    });
    expect(refusal('10.0.0.5', 'aa:bb')).toEqual({
      field: 'mac',
      message:
        'mac: "aa:bb" is not a MAC address (allowed: six hex pairs joined by ":" or "-", like 3a:48:7a:63:96:26)',
    });
    expect(refusal('10.0.0.5', '00:00:00:00:00:00').message).toContain("is a zero address, not a device's");
    expect(refusal('10.0.0.5', 'ff:ff:ff:ff:ff:ff').message).toContain('is a broadcast address');
    expect(refusal('x'.repeat(500)).message).toContain('…');
  });
});
