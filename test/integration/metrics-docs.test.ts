import { execFile as execFileCb } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../harness/lab.ts';

const execFile = promisify(execFileCb);

/** docs/metrics.md's examples are what Prometheus' own tool accepts: the alert rules and the scrape config. */
const page = readFileSync(join(ROOT, 'docs', 'metrics.md'), 'utf8');
/** The page's YAML blocks, each without the indent of its list item. */
const yamlBlocks = [...page.matchAll(/^( *)```yaml\n([\s\S]*?)^ *```/gm)].map(([, indent = '', body = '']) =>
  body
    .split('\n')
    .map((line) => line.slice(indent.length))
    .join('\n'),
);
const dir = mkdtempSync(join(tmpdir(), 'doorman-metrics-docs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('docs/metrics.md', () => {
  it('its alert rules pass promtool check rules, each naming only metrics Doorman has', async () => {
    const rules = yamlBlocks.find((b) => b.startsWith('groups:'));
    expect(rules).toBeDefined();
    const file = join(dir, 'doorman.yml');
    writeFileSync(file, rules ?? '');
    const { stdout } = await execFile('promtool', ['check', 'rules', file]);
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
    const named = new Set([...(rules ?? '').matchAll(/\b(doorman_[a-z_]+)/g)].map((m) => m[1]));
    const defined = new Set(
      [...readdirText(join(ROOT, 'lib', 'metrics')).matchAll(/'(doorman_[a-z_]+)'/g)].map((m) => m[1]),
    );
    for (const name of named) expect(defined, name).toContain(name);
  });

  it('its scrape config passes promtool check config', async () => {
    const scrape = yamlBlocks.find((b) => b.startsWith('scrape_configs:'));
    expect(scrape).toBeDefined();
    const file = join(dir, 'prometheus.yml');
    writeFileSync(file, scrape ?? '');
    const { stdout } = await execFile('promtool', ['check', 'config', file]);
    expect(stdout).toContain('SUCCESS');
  });
});

/** Every .ts file of a directory, one text. */
function readdirText(path: string): string {
  return readdirSync(path)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(join(path, f), 'utf8'))
    .join('\n');
}
