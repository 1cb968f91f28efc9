import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, anchors, docPages, links, readDoc } from '../../support/markdown.ts';

/**
 * Every relative link in README.md and docs/ leads somewhere: the file exists and, for a Markdown page, the
 * anchor is one of its headings. Moving a section breaks links silently on GitHub; here it fails.
 */
const external = /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i;

function broken(page: string): string[] {
  const problems: string[] = [];
  for (const { line, target } of links(readDoc(page))) {
    if (external.test(target)) continue;
    const hash = target.indexOf('#');
    const path = hash < 0 ? target : target.slice(0, hash);
    const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const file = path === '' ? page : normalize(join(dirname(page), decodeURIComponent(path)));
    const where = `${page}:${line}: ${target}`;
    if (file.startsWith('..') || !existsSync(join(ROOT, file))) {
      problems.push(`${where}: no file ${file}`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!file.endsWith('.md') || statSync(join(ROOT, file)).isDirectory()) {
      problems.push(`${where}: an anchor into ${file}, which is no Markdown page`);
    } else if (!anchors(readDoc(file)).has(anchor)) {
      problems.push(`${where}: ${file} has no heading #${anchor}`);
    }
  }
  return problems;
}

describe('the links of the documentation', () => {
  it.each(docPages())('%s: every relative link resolves to a file and a heading', (page) => {
    expect(broken(page)).toEqual([]);
  });

  it('the README links every page in docs/ (its list of where to go next)', () => {
    const linked = new Set(links(readDoc('README.md')).map(({ target }) => target.split('#')[0]));
    const missing = docPages()
      .filter((page) => page !== 'README.md')
      .filter((page) => !linked.has(page));
    expect(missing).toEqual([]);
  });
});
