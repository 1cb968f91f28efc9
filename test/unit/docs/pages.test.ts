import { describe, expect, it } from 'vitest';
import { docPages, fences, opening, readDoc } from '../../support/markdown.ts';

/**
 * Each page in docs/ is an admin's task (/work/shared/style.md 14): it opens with what the reader will have
 * done by its end. Design notes explain how and why instead, and say so in their title.
 */
const isDesignNote = (markdown: string): boolean => /^# .*: design$/m.test(markdown);

const taskPages = docPages().filter((page) => page !== 'README.md' && !isDesignNote(readDoc(page)));

describe('the pages in docs/', () => {
  it.each(taskPages)('%s opens with what the reader will have done at its end', (page) => {
    expect(opening(readDoc(page))).toMatch(/^(?:At|By) the end of this page\b/);
  });

  it.each(docPages())('%s closes every code block it opens', (page) => {
    expect(fences(readDoc(page)).unclosed).toBe(false);
  });

  it('has task pages at all', () => {
    expect(taskPages.length).toBeGreaterThan(5);
  });
});
