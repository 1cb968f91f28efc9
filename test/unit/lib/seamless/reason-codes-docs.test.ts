import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KerberosRejectCodes } from '../../../../lib/seamless/reject-codes.ts';
import { TokenErrorCodes } from '../../../../lib/seamless/spnego.ts';

/** The seamless sign-on page: what an administrator reads to make sense of cache.log. */
const section = readFileSync(
  join(import.meta.dirname, '..', '..', '..', '..', 'docs', 'seamless.md'),
  'utf8',
);

describe("docs/seamless.md's reason codes agree with what cache.log shows", () => {
  it.each([...KerberosRejectCodes])('names the Kerberos refusal %s', (code) => {
    expect(section).toContain(`\`${code}\``);
  });

  it.each([...TokenErrorCodes])('names the token refusal %s', (code) => {
    expect(section).toContain(`\`${code}\``);
  });

  it('shows both forms of the line', () => {
    expect(section).toContain('`Kerberos token refused (CODE): …`');
    expect(section).toMatch(/\(NOT_BASE64\)`/);
  });
});
