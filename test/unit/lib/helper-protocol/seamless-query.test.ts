import { describe, expect, it } from 'vitest';
import { parseReply, parseRequest } from '../../../../lib/helper-protocol/message.ts';
import {
  formatSeamlessAnswer,
  formatSeamlessQuery,
  parseSeamlessAnswer,
  seamlessQueryOf,
} from '../../../../lib/helper-protocol/seamless-query.ts';

const request = (line: string) => {
  const parsed = parseRequest(line, true);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.request;
};

describe('the seamless-last query', () => {
  it('a request names one address; a lookup is no query', () => {
    expect(formatSeamlessQuery('0', '2001:db8::5')).toBe('0 seamless-last 2001%3Adb8%3A%3A5\n');
    expect(seamlessQueryOf(request('0 seamless-last 2001%3Adb8%3A%3A5'))).toEqual({ address: '2001:db8::5' });
    expect(seamlessQueryOf(request('3 10.0.0.5 -'))).toBeUndefined();
    expect(seamlessQueryOf(request('3 seamless-last'))).toEqual({ address: undefined });
    expect(seamlessQueryOf(request('3 seamless-last 10.0.0.5 more'))).toEqual({ address: undefined });
  });

  it('an answer round-trips through the helper reply format', () => {
    const result = {
      scheme: 'negotiate',
      outcome: 'BH',
      reason: 'CLOCK_SKEW',
      user: undefined,
      at: 1_780_000_000_000,
    } as const;
    const line = formatSeamlessAnswer('4', result);
    expect(line).toBe('4 OK scheme=negotiate outcome=BH reason=CLOCK_SKEW at=1780000000000\n');
    expect(parseSeamlessAnswer(line.trimEnd())).toEqual({ kind: 'result', result });
    const named = { scheme: 'ntlm', outcome: 'OK', reason: undefined, user: 'al ice', at: 5 } as const;
    expect(parseSeamlessAnswer(formatSeamlessAnswer('0', named).trimEnd())).toEqual({
      kind: 'result',
      result: named,
    });
  });

  it('none seen, refused, malformed', () => {
    expect(formatSeamlessAnswer('0', undefined)).toBe('0 ERR message=none\n');
    expect(parseSeamlessAnswer('0 ERR message=none')).toEqual({ kind: 'none' });
    expect(parseSeamlessAnswer('0 BH message=not%20an%20IP%20address')).toEqual({
      kind: 'refused',
      message: 'not an IP address',
    });
    expect(parseSeamlessAnswer('0 OK scheme=basic outcome=OK at=1')).toMatchObject({ kind: 'malformed' });
    expect(parseSeamlessAnswer('0 OK scheme=ntlm outcome=OK at=soon')).toMatchObject({ kind: 'malformed' });
    expect(parseSeamlessAnswer('garbage')).toMatchObject({ kind: 'malformed' });
  });
});

describe('parseReply: a reply line as Squid reads it', () => {
  it('result and decoded pairs; words without "=" skipped', () => {
    const reply = parseReply('12 OK user=al%20ice junk message=x', true);
    expect(reply?.channel).toBe('12');
    expect(reply?.result).toBe('OK');
    expect([...(reply?.pairs ?? [])]).toEqual([
      ['user', 'al ice'],
      ['message', 'x'],
    ]);
    expect(parseReply('ERR', false)?.result).toBe('ERR');
  });

  it('no reply: another result word, no channel-ID, a value that is not UTF-8', () => {
    expect(parseReply('0 TT abc', true)).toBeUndefined();
    expect(parseReply('OK user=a', true)).toBeUndefined();
    expect(parseReply('0 OK user=%FF', true)).toBeUndefined();
  });
});
