import { describe, expect, it } from 'vitest';
import {
  bh,
  channelOf,
  err,
  formatCacheLogLine,
  formatReply,
  MAX_CACHE_LOG_CHARS,
  ok,
  parseRequest,
} from '../../../../lib/helper-protocol/message.ts';
import { squidEscapeField, squidReadsReply } from './squid-model.ts';

/** A request line as Squid 5 writes it for `%SRC %>eui` (LF stripped): channel, escaped fields, acl args or "-". */
const requestLine = (
  channel: number | undefined,
  fields: readonly string[],
  aclArgs: readonly string[] = [],
): string =>
  [
    ...(channel === undefined ? [] : [String(channel)]),
    ...fields.map(squidEscapeField),
    ...(aclArgs.length === 0 ? ['-'] : aclArgs.map(squidEscapeField)),
  ].join(' ');

describe('parseRequest', () => {
  it('takes the channel-ID off the front when channel-IDs are on', () => {
    expect(parseRequest(requestLine(7, ['10.0.0.5', 'aa:bb:cc:dd:ee:ff']), true)).toEqual({
      ok: true,
      request: { channel: '7', fields: ['10.0.0.5', 'aa:bb:cc:dd:ee:ff', '-'] },
    });
    expect(parseRequest('0 10.0.0.5', true)).toEqual({
      ok: true,
      request: { channel: '0', fields: ['10.0.0.5'] },
    });
    expect(parseRequest('123456789 10.0.0.5', true)).toMatchObject({
      ok: true,
      request: { channel: '123456789' },
    });
  });

  it("takes channel-IDs past 10^9 up to Squid's 64-bit maximum, and echoes them as written", () => {
    for (const channel of ['1000000000', '9007199254740993', '18446744073709551615']) {
      const parsed = parseRequest(`${channel} 10.0.0.5 -`, true);
      expect(parsed).toEqual({ ok: true, request: { channel, fields: ['10.0.0.5', '-'] } });
      expect(formatReply(channel, ok([['user', 'alice']]))).toBe(`${channel} OK user=alice\n`);
      expect(channelOf(`${channel} ${'x'.repeat(100)}`, true)).toBe(channel);
    }
  });

  it('has no channel without channel-IDs: a leading number is a field', () => {
    expect(parseRequest(requestLine(undefined, ['10.0.0.5', '-']), false)).toEqual({
      ok: true,
      request: { channel: undefined, fields: ['10.0.0.5', '-', '-'] },
    });
    expect(parseRequest('7 10.0.0.5', false)).toEqual({
      ok: true,
      request: { channel: undefined, fields: ['7', '10.0.0.5'] },
    });
  });

  it('URL-decodes every field (not the channel)', () => {
    const line = requestLine(3, ['10.0.0.5', 'Jürgen Müller', 'a+b%c', '"quoted" \\ back'], ['group one']);
    expect(line).not.toMatch(/[^\x21-\x7e ]/);
    expect(parseRequest(line, true)).toEqual({
      ok: true,
      request: {
        channel: '3',
        fields: ['10.0.0.5', 'Jürgen Müller', 'a+b%c', '"quoted" \\ back', 'group one'],
      },
    });
  });

  it('keeps the trailing "-" Squid 5 appends when the acl has no arguments (the caller ignores it)', () => {
    const parsed = parseRequest('4 10.0.0.5 -', true);
    expect(parsed).toEqual({ ok: true, request: { channel: '4', fields: ['10.0.0.5', '-'] } });
  });

  it('treats runs of spaces and leading/trailing spaces as one separator', () => {
    expect(parseRequest('  5   10.0.0.5    -  ', true)).toEqual({
      ok: true,
      request: { channel: '5', fields: ['10.0.0.5', '-'] },
    });
  });

  it('gives an empty field list for a channel alone or an empty line without channel-IDs', () => {
    expect(parseRequest('9', true)).toEqual({ ok: true, request: { channel: '9', fields: [] } });
    expect(parseRequest('', false)).toEqual({ ok: true, request: { channel: undefined, fields: [] } });
  });

  it('fails without a channel when the line does not start with a channel-ID', () => {
    for (const line of [
      '',
      '   ',
      '10.0.0.5 -',
      'x 10.0.0.5',
      '-1 10.0.0.5',
      '123456789012345678901 10.0.0.5',
      '1a 10.0.0.5',
    ]) {
      const parsed = parseRequest(line, true);
      expect(parsed.ok, JSON.stringify(line)).toBe(false);
      expect(parsed).toMatchObject({ ok: false, channel: undefined });
      expect((parsed as { message: string }).message).toMatch(/channel-ID/);
    }
  });

  it('fails with the channel when a field is not UTF-8', () => {
    expect(parseRequest('12 caf%E9 -', true)).toEqual({
      ok: false,
      channel: '12',
      message: expect.stringMatching(/UTF-8/),
    });
    expect(parseRequest('caf%E9', false)).toEqual({
      ok: false,
      channel: undefined,
      message: expect.any(String),
    });
  });
});

describe('formatReply', () => {
  it('echoes the channel and ends with LF', () => {
    expect(formatReply('17', ok())).toBe('17 OK\n');
    expect(formatReply('0', err())).toBe('0 ERR\n');
    expect(formatReply(undefined, ok())).toBe('OK\n');
    expect(formatReply(undefined, { result: 'BH' })).toBe('BH\n');
  });

  it('writes kv-pairs in order with escaped values', () => {
    expect(formatReply('3', ok([['user', 'alice']]))).toBe('3 OK user=alice\n');
    expect(
      formatReply(
        '3',
        ok([
          ['user', 'Jürgen Müller'],
          ['clt_conn_tag', 'a b'],
          ['x_', '"\\=%'],
        ]),
      ),
    ).toBe('3 OK user=J%C3%BCrgen%20M%C3%BCller clt_conn_tag=a%20b x_=%22%5C%3D%25\n');
    expect(formatReply(undefined, err('no session'))).toBe('ERR message=no%20session\n');
    expect(formatReply('8', bh('DB down: "x"'))).toBe('8 BH message=DB%20down%3A%20%22x%22\n');
  });

  it('produces replies Squid reads back as sent (result, channel, every pair)', () => {
    const pairs: Array<[string, string]> = [
      ['user', 'DOMAIN\\Zoë "Z" O\'Brien'],
      ['group', 'a=b c'],
      ['tag_', '😀 100%'],
      ['empty', ''],
    ];
    const read = squidReadsReply(formatReply('42', ok(pairs)), true);
    expect(read).toEqual({ channel: '42', result: 'OK', notes: pairs, rest: '' });
    expect(squidReadsReply(formatReply(undefined, bh('line too long')), false)).toEqual({
      channel: undefined,
      result: 'BH',
      notes: [['message', 'line too long']],
      rest: '',
    });
  });

  it('writes a single line with no control characters whatever the values hold', () => {
    const line = formatReply('1', ok([['user', 'a\nb\r\n2 OK user=mallory']]));
    expect(line.indexOf('\n')).toBe(line.length - 1);
    // eslint-disable-next-line no-control-regex
    expect(line).not.toMatch(/[\x00-\x09\x0b-\x1f]/);
    expect(squidReadsReply(line, true).notes).toEqual([['user', 'a\nb\r\n2 OK user=mallory']]);
  });

  it('rejects key names Squid would not read as keys', () => {
    for (const key of ['', 'us er', 'user=', 'a"b', 'ü', 'a.b', 'a\nb', '%41']) {
      expect(() => formatReply('1', ok([[key, 'x']])), JSON.stringify(key)).toThrow(TypeError);
    }
    expect(formatReply('1', ok([['A-z_0', 'x']]))).toBe('1 OK A-z_0=x\n');
  });
});

describe('channelOf', () => {
  it('finds the channel-ID at the start of an overlong line head', () => {
    expect(channelOf('42 10.0.0.5 xxxxxxxxxxxxxxxxxxxx', true)).toBe('42');
    expect(channelOf('7', true)).toBe('7');
    expect(channelOf('123456789 ', true)).toBe('123456789');
  });

  it('is undefined without channel-IDs or when the head does not start with one', () => {
    expect(channelOf('42 10.0.0.5', false)).toBeUndefined();
    expect(channelOf('xxxxxxxxxxxx', true)).toBeUndefined();
    expect(channelOf('123456789012345678901 x', true)).toBeUndefined();
    expect(channelOf('', true)).toBeUndefined();
  });
});

describe('ok / err / bh', () => {
  it('build the replies', () => {
    expect(ok()).toEqual({ result: 'OK' });
    expect(ok([['user', 'a']])).toEqual({ result: 'OK', pairs: [['user', 'a']] });
    expect(err()).toEqual({ result: 'ERR' });
    expect(err('why')).toEqual({ result: 'ERR', pairs: [['message', 'why']] });
    expect(bh('why')).toEqual({ result: 'BH', pairs: [['message', 'why']] });
  });
});

describe('formatCacheLogLine', () => {
  it('makes one line of any text, capped, that no reply could be taken for', () => {
    expect(formatCacheLogLine('basic: RATE_LIMITED account="a"')).toBe(
      '#doorman: basic: RATE_LIMITED account="a"\n',
    );
    expect(formatCacheLogLine('a\r\nOK user=x\u0085b\u2028c\u0000d')).toBe('#doorman: a  OK user=x b c d\n');
    expect(formatCacheLogLine('x'.repeat(5000))).toHaveLength('#doorman: \n'.length + MAX_CACHE_LOG_CHARS);
  });
});
