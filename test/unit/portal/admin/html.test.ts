import { describe, expect, it } from 'vitest';
import { escapeHtml, html, Html } from '../../../../portal/admin/html.ts';

describe('html``', () => {
  it('escapes every interpolated string, in text and in attributes', () => {
    const hostile = `<script>alert("x")</script> & 'y'`;
    expect(html`<p title="${hostile}">${hostile}</p>`.toString()).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;">' +
        '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;</p>',
    );
  });

  it('escapes & first, so nothing is escaped twice or left half-escaped', () => {
    expect(escapeHtml('&lt;')).toBe('&amp;lt;');
    expect(escapeHtml('a&b<c>d"e\'f')).toBe('a&amp;b&lt;c&gt;d&quot;e&#39;f');
  });

  it('inserts Html made by the tag as it is, and lists item by item', () => {
    // `h`, not `html`: Prettier would reformat an html`` template and the expected string with it.
    const h = html;
    const item = (s: string) => h`<li>${s}</li>`;
    expect(h`<ul>${['a', '<b>'].map(item)}</ul>`.toString()).toBe('<ul><li>a</li><li>&lt;b&gt;</li></ul>');
  });

  it('renders nothing for undefined, null and false, and numbers as text', () => {
    const maybe = (on: boolean) => on && html`<b>on</b>`;
    expect(html`${undefined}${null}${maybe(false)}${maybe(true)}${42}`.toString()).toBe('<b>on</b>42');
  });

  it('cannot be fooled into trusting a string', () => {
    // Html has no public way in: neither its constructor nor the tag called as a function.
    const Ctor = Html as unknown as new (mint: symbol, text: string) => Html;
    expect(() => new Ctor(Symbol('Html'), '<script>')).toThrow(TypeError);
    const tag = html as unknown as (strings: string[], ...values: unknown[]) => Html;
    expect(() => tag(['<script>'])).toThrow(TypeError);
    // A string that looks like markup is still just text.
    expect(html`${'<b>'}`.toString()).toBe('&lt;b&gt;');
  });
});
