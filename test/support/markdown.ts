import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The checkout's root, where README.md and docs/ are. */
export const ROOT = join(import.meta.dirname, '..', '..');

/** The documentation an admin reads: README.md and every page in docs/, as paths relative to ROOT. */
export function docPages(): string[] {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...pages];
}

export const readDoc = (page: string): string => readFileSync(join(ROOT, page), 'utf8');

/**
 * The page line for line, each line of a fenced code block emptied, so that a `# comment` in a shell block is not
 * taken for a heading. `unclosed`: a block still open at the end (the rest of the page would show as code).
 */
export function fences(markdown: string): { lines: string[]; unclosed: boolean } {
  let fence: string | undefined;
  const lines = markdown.split('\n').map((line) => {
    const opens = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (opens?.[1]?.startsWith(fence)) fence = undefined;
      return '';
    }
    if (opens?.[1] !== undefined) {
      fence = opens[1];
      return '';
    }
    return line;
  });
  return { lines, unclosed: fence !== undefined };
}

export const outsideFences = (markdown: string): string[] => fences(markdown).lines;

/** The text outside code, fenced or inline, line for line: a `[x](y)` shown as code is no link. */
export const prose = (markdown: string): string[] =>
  outsideFences(markdown).map((line) => line.replace(/`[^`]*`/g, ''));

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, each space a hyphen. */
export function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every heading's anchor in a page, numbered as GitHub numbers repeats (`x`, `x-1`, ...). */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const line of outsideFences(markdown)) {
    const level = /^#{1,6} /.exec(line);
    if (level === null) continue;
    const base = slug(line.slice(level[0].length));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n === 0 ? base : `${base}-${n}`);
  }
  return found;
}

export interface Link {
  line: number;
  target: string;
}

/** The targets of inline links and images, `[text](target)`, outside code. */
export function links(markdown: string): Link[] {
  const found: Link[] = [];
  prose(markdown).forEach((text, i) => {
    for (const match of text.matchAll(/\]\(([^()\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (match[1] !== undefined) found.push({ line: i + 1, target: match[1] });
    }
  });
  return found;
}

/** The first paragraph after the page's title: what the reader will have done once through the page. */
export function opening(markdown: string): string {
  const lines = markdown.split('\n');
  const title = lines.findIndex((line) => line.startsWith('# '));
  const rest = lines.slice(title + 1);
  const start = rest.findIndex((line) => line.trim() !== '');
  const end = rest.findIndex((line, i) => i > start && line.trim() === '');
  return rest
    .slice(start, end < 0 ? undefined : end)
    .join(' ')
    .replace(/\s+/g, ' ');
}
