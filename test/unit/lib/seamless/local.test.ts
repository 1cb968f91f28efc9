import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../lib/config/load.ts';
import * as source from '../../../../lib/seamless/local.ts';
import { configuredSquid } from '../../../../lib/seamless/local.ts';
import type { RunRequest } from '../../../../lib/seamless/run-command.ts';

const root = resolve(import.meta.dirname, '../../../..');

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

describe('squidRegenerator', () => {
  // serve's root child runs this module compiled (dist/lib/seamless/local.js), and dist/ holds no cli/: from
  // either place the include is made by the source CLI, as bin/doorman runs it.
  it('runs doorman squid-conf from cli/main.ts, whether it runs from the source or from dist/', async () => {
    const compiled = (await import(
      pathToFileURL(resolve(root, 'dist/lib/seamless/local.js')).href
    )) as typeof source;
    for (const module of [source, compiled]) {
      const asked: RunRequest[] = [];
      const regenerate = module.squidRegenerator(
        { include: '/nonexistent/doorman.conf' },
        async (request) => {
          asked.push(request);
          return { code: 1, stdout: '', stderr: 'stop here' };
        },
      );
      expect(await regenerate()).toMatchObject({ ok: false });
      expect(asked).toHaveLength(1);
      expect(asked[0]?.args).toContain(resolve(root, 'cli/main.ts'));
      expect(asked[0]?.args).toContain('squid-conf');
    }
  });
});
