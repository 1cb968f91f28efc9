import { describe, expect, it } from 'vitest';
import { acceptsHtml, MAX_ACCEPT } from '../../../icap-server/accept-header.ts';
import { BROWSER_ACCEPT } from './portal-fixtures.ts';

describe('acceptsHtml', () => {
  it.each([
    [undefined, true],
    ['*/*', true],
    ['text/*', true],
    ['text/html', true],
    ['TEXT/HTML;Q=0.5', true],
    [BROWSER_ACCEPT, true],
    ['application/json, */*;q=0.01', true],
    ['text/html;q=0.001', true],
    ['', false],
    ['application/json', false],
    ['image/*', false],
    ['text/plain', false],
    ['text/html;q=0', false],
    ['text/html;q=0.000', false],
    // the most specific range decides
    ['text/html;q=0, */*', false],
    ['text/*;q=0, */*', false],
    ['*/*;q=0, text/html', true],
    ['text/*;q=0, text/html;q=0.1', true],
    // malformed members are skipped
    ['text/html;q=2', false],
    ['text/html;q=1.5, application/json', false],
    ['text/html;q=abc', false],
    ['texthtml', false],
    // a quoted parameter with a comma and a semicolon stays one member
    ['application/json;x="a,text/html;b", image/png', false],
    ['text/html;level="1,2";q=0.7', true],
    ['application/json;x="a\\",text/html,b"', false],
    // the same range twice: the more generous one counts
    ['text/html;q=0.5, text/html;q=0', true],
    ['text/html;q=0, text/html;q=0.5', true],
  ])('%j → %s', (accept, expected) => {
    expect(acceptsHtml(accept)).toBe(expected);
  });

  it(`refuses a header over ${MAX_ACCEPT} characters, in time linear in its length`, () => {
    const pad = `${'x'.repeat(MAX_ACCEPT - 'text/html'.length - 2)}, text/html`;
    expect(acceptsHtml(pad.slice(1))).toBe(true);
    expect(acceptsHtml(`x${pad}`)).toBe(false);
    // worst cases at the cap: all quotes, all separators
    expect(acceptsHtml('"'.repeat(MAX_ACCEPT))).toBe(false);
    expect(acceptsHtml(';'.repeat(MAX_ACCEPT))).toBe(false);
    expect(acceptsHtml(',\\'.repeat(MAX_ACCEPT / 2))).toBe(false);
  });
});
