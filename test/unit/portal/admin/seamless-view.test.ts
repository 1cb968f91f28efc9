import { describe, expect, it } from 'vitest';
import { doctorReport } from '../../../../lib/seamless/doctor/report.ts';
import { adminPaths } from '../../../../portal/admin/paths.ts';
import { EMPTY_SEAMLESS_FORM } from '../../../../portal/admin/seamless-form.ts';
import { seamlessPage, type SeamlessView } from '../../../../portal/admin/views/seamless.ts';
import { doctorReportHtml } from '../../../../portal/admin/views/seamless-doctor.ts';
import { progressPage, StepList } from '../../../../portal/admin/views/seamless-progress.ts';
import { html } from '../../../../portal/admin/html.ts';
import { GREEN_CHECKS, PTR_MISSING } from '../../../support/fake-seamless-control.ts';

const paths = adminPaths('/');

describe('StepList', () => {
  it('writes a running step open and closes it with its result, so the marker can be hidden', () => {
    const list = new StepList();
    const chunks = [
      list.step({ id: 'join', title: 'Join the domain', status: 'running' }),
      list.step({ id: 'join', title: 'Join the domain', status: 'ok', detail: 'joined PROXY' }),
      list.end(),
    ];
    expect(chunks[0]).toMatch(/^<ol class="steps" id="seamless-steps"><li class="step" id="step-join">/);
    expect(chunks[0]).toContain('<span class="running">running…</span>');
    expect(chunks[0]).not.toContain('</li>');
    expect(chunks[1]).toMatch(
      /^ <span class="status ok">done<\/span>\s*<p class="detail">joined PROXY<\/p>\s*<\/li>$/,
    );
    expect(chunks[2]).toBe('</ol>');
    // One item for the step: the marker is followed by the result (CSS hides a marker that is not last).
    const whole = chunks.join('');
    expect(whole.match(/<li/g)).toHaveLength(1);
    expect(whole.indexOf('class="running"')).toBeLessThan(whole.indexOf('class="status ok"'));
  });

  it('gives a finished step reported without running an item of its own, with its fix', () => {
    const list = new StepList();
    const out = list.step({
      id: 'kvno',
      title: 'Compare key versions',
      status: 'fail',
      detail: 'keytab 1, DC 2',
      fix: 'Enable again',
    });
    expect(out).toContain('<li class="step" id="step-kvno"><span class="title">Compare key versions</span>');
    expect(out).toContain('<span class="status fail">failed</span>');
    expect(out).toContain('<p class="fix"><strong>Fix:</strong> Enable again</p></li>');
  });

  it('closes an open step when another begins, and never repeats an id', () => {
    const list = new StepList();
    const out = [
      list.step({ id: 'a', title: 'A', status: 'running' }),
      list.step({ id: 'b', title: 'B', status: 'running' }),
      list.step({ id: 'a', title: 'A', status: 'ok' }),
      list.end(),
      list.end(),
      list.step({ id: 'c', title: 'C', status: 'ok' }),
    ].join('');
    expect(out.match(/<li/g)).toHaveLength(3);
    expect(out.match(/<\/li>/g)).toHaveLength(3);
    expect(out.match(/id="step-a"/g)).toHaveLength(1);
    expect(out.endsWith('</ol>')).toBe(true);
  });

  it('escapes what the steps say', () => {
    const out = new StepList().step({ id: 'x"', title: '<b>', status: 'fail', detail: 'a & <i>' });
    expect(out).toContain('id="step-x&quot;"');
    expect(out).toContain('&lt;b&gt;');
    expect(out).toContain('a &amp; &lt;i&gt;');
  });
});

describe('progressPage', () => {
  it('cuts the page around the streamed part: head, then the steps, then tail', () => {
    const { head, tail } = progressPage({
      paths,
      user: 'root',
      csrf: 't',
      title: 'Enable seamless authentication',
      intro: html`<p>Joining <b>example.test</b></p>`,
    });
    expect(head).toMatch(/^<!doctype html>/);
    expect(head).toContain('<h1>Enable seamless authentication</h1>');
    expect(head).toContain('<p>Joining <b>example.test</b></p>');
    expect(head).not.toContain('<!--seamless-progress-->');
    expect(tail).toContain('Back to seamless authentication');
    expect(tail.trimEnd().endsWith('</html>')).toBe(true);
  });
});

describe('doctorReportHtml', () => {
  it('lists each check with its status and, unless it passed, its fix', () => {
    const out = doctorReportHtml(doctorReport([...GREEN_CHECKS, PTR_MISSING])).toString();
    expect(out).toContain('Seamless authentication is not ready');
    expect(out).toContain('2 ok, 1 failed, 0 skipped');
    expect(out).toMatch(
      /<li class="check fail" id="check-dns-ptr">[\s\S]*Failed[\s\S]*has no PTR record[\s\S]*<strong>Fix:<\/strong> add a PTR record/,
    );
    expect(out.match(/class="fix"/g)).toHaveLength(1);
  });
});

describe('seamlessPage', () => {
  const view = (parts: Partial<SeamlessView>): SeamlessView => ({
    paths,
    user: 'root',
    csrf: 'token',
    availability: { ok: true },
    canControl: true,
    values: EMPTY_SEAMLESS_FORM,
    disableUser: '',
    ...parts,
  });

  it('shows the reason and no dialogue while unavailable', () => {
    const page = seamlessPage(
      view({
        availability: {
          ok: false,
          code: 'NOT_WINDOWS_DOMAIN',
          reason: 'the directory service is of the open-directory kind',
        },
      }),
    );
    expect(page).toContain(
      'Enable seamless is unavailable:</strong> the directory service is of the open-directory kind.',
    );
    expect(page).not.toContain('name="adminPassword"');
    expect(page).toMatch(/aria-current="page"\s*>Seamless authentication</);
  });

  it('offers the dialogue, the doctor, and no Disable before a join', () => {
    const page = seamlessPage(view({}));
    expect(page).toContain(`action="${paths.seamlessEnable}"`);
    expect(page).toContain(`action="${paths.seamlessDoctor}"`);
    expect(page).not.toContain(`action="${paths.seamlessDisable}"`);
    expect(page).toContain('<strong>Off.</strong>');
  });

  it('without a control: status only, and says why', () => {
    const page = seamlessPage(view({ canControl: false }));
    expect(page).toContain('id="seamless-no-control"');
    expect(page).not.toContain('<form method="post" action="/admin/seamless');
    expect(page).not.toContain(paths.seamlessDoctor);
  });
});
