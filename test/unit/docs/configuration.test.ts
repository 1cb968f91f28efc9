import { describe, expect, it } from 'vitest';
import type * as z from 'zod';
import { configSchema } from '../../../lib/config/schema.ts';
import { readDoc } from '../../support/markdown.ts';

/**
 * The configuration reference (docs/configuration.md) names every key of the schema: a key added to the code
 * without a line in the reference fails here. (test/unit/lib/config/load.test.ts holds the defaults.)
 */
function keys(schema: z.core.$ZodType, prefix: string): string[] {
  const def = schema._zod.def;
  switch (def.type) {
    case 'default':
    case 'prefault':
    case 'optional':
      return keys((def as z.core.$ZodDefaultDef).innerType, prefix);
    case 'nullable': {
      // An object or null ({"host", "port"} or none) is one setting: documented as a whole.
      const inner = (def as z.core.$ZodNullableDef).innerType;
      return inner._zod.def.type === 'object' ? [] : keys(inner, prefix);
    }
    case 'object':
      return Object.entries((def as z.core.$ZodObjectDef).shape).flatMap(([name, inner]) => {
        const path = prefix === '' ? name : `${prefix}.${name}`;
        const below = keys(inner, path);
        return below.length === 0 ? [path] : below;
      });
    case 'union':
      return [...new Set((def as z.core.$ZodUnionDef).options.flatMap((option) => keys(option, prefix)))];
    default:
      return [];
  }
}

const documented = (() => {
  const page = readDoc('docs/configuration.md');
  const table = page.slice(page.indexOf('| key |'));
  return new Set([...table.matchAll(/`([a-zA-Z.]+)`/g)].map((match) => match[1]));
})();

describe('the configuration reference', () => {
  const all = keys(configSchema, '');

  it('finds the keys of the schema', () => {
    expect(all).toContain('squid.intercept.tls.mode');
    expect(all).toContain('store.passwordFile');
  });

  it.each(all)('documents %s in its table', (key) => {
    expect(documented).toContain(key);
  });
});
