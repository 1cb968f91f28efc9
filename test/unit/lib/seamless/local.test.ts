import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../lib/config/load.ts';
import { configuredSquid } from '../../../../lib/seamless/local.ts';

describe('configuredSquid', () => {
  it('is nothing until squid.seamless.squidInclude names the include (Enable then says what to run)', () => {
    expect(configuredSquid(parseConfig({}, 'test'))).toBeUndefined();
  });

  it('names the include, and the squid.conf to reconfigure when one is given', () => {
    const include = '/etc/squid/conf.d/doorman.conf';
    expect(configuredSquid(parseConfig({ squid: { seamless: { squidInclude: include } } }, 'test'))).toEqual({
      include,
    });
    expect(
      configuredSquid(
        parseConfig(
          { squid: { seamless: { squidInclude: include, squidConf: '/etc/squid/squid.conf' } } },
          'test',
        ),
      ),
    ).toEqual({ include, squidConf: '/etc/squid/squid.conf' });
  });

  it('refuses a path squid.conf cannot hold, naming the field', () => {
    expect(() =>
      parseConfig({ squid: { seamless: { squidInclude: 'relative/doorman.conf' } } }, 'test'),
    ).toThrow(/squid\.seamless\.squidInclude/);
  });
});
