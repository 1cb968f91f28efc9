import { describe, expect, it } from 'vitest';
import { splashPaths } from '../../../../portal/splash/paths.ts';
import { connectedPage, formPage, noticePage, paragraphs } from '../../../../portal/splash/views/pages.ts';

const paths = splashPaths('/');
const NASTY = `<script>alert("x")</script>&'`;
const ESCAPED = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;';

describe('splash views', () => {
  it('split the policy into paragraphs at blank lines, any line ends', () => {
    expect(paragraphs('a\r\nb\r\n\r\n  \nc\rd\n\n')).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    expect(paragraphs('')).toEqual([]);
  });

  it('escape every value they show', () => {
    const form = formPage({
      paths,
      mode: 'registration',
      csrf: NASTY,
      url: NASTY,
      sig: NASTY,
      policy: NASTY,
      username: NASTY,
      device: { mac: NASTY, randomised: true },
      clearDate: NASTY,
      message: { code: 'wrong_password', tone: 'error', text: NASTY },
    });
    const notice = noticePage({
      paths,
      title: NASTY,
      message: { code: 'bad_request', tone: 'error', text: NASTY },
      link: { href: NASTY, text: NASTY },
    });
    const connected = connectedPage({
      paths,
      username: NASTY,
      next: NASTY,
      device: { mac: NASTY, randomised: false },
    });
    for (const page of [form, notice, connected]) {
      expect(page).not.toContain('<script');
      expect(page).toContain(ESCAPED);
    }
  });

  it('give each form field a label and the fields in order: name, password, policy, box, button', () => {
    const page = formPage({ paths, mode: 'authentication', csrf: 't', url: '', sig: '', policy: 'Be kind.' });
    const order = ['id="username"', 'id="password"', 'id="policy"', 'id="agree"', 'id="continue"'].map((id) =>
      page.indexOf(id),
    );
    expect(order.every((at, i) => at > 0 && (i === 0 || at > (order[i - 1] as number)))).toBe(true);
    for (const id of ['username', 'password', 'agree']) expect(page).toContain(`<label for="${id}">`);
    expect(page.match(/<h1>/g)).toHaveLength(1);
  });

  it('shows the agreement mode without sign-in fields, and no box to tick without a policy', () => {
    const agreement = formPage({ paths, mode: 'agreement', csrf: 't', url: '', sig: '', policy: 'Be kind.' });
    expect(agreement).not.toContain('id="username"');
    expect(agreement).not.toContain('id="agree"');
    const noPolicy = formPage({ paths, mode: 'authentication', csrf: 't', url: '', sig: '', policy: '  ' });
    expect(noPolicy).not.toContain('id="agree"');
    expect(noPolicy).not.toContain('id="policy"');
  });
});
