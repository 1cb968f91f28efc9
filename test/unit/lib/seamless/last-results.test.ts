import { describe, expect, it } from 'vitest';
import {
  LastSeamlessResults,
  resultOfReply,
  type SeamlessResult,
} from '../../../../lib/seamless/last-results.ts';

const result = (at: number, over: Partial<SeamlessResult> = {}): SeamlessResult => ({
  scheme: 'negotiate',
  outcome: 'OK',
  reason: undefined,
  user: 'alice',
  at,
  ...over,
});

describe('LastSeamlessResults: the last result per address, bounded', () => {
  it('keeps the last result of each address', () => {
    const results = new LastSeamlessResults(4);
    results.record('10.0.0.5', result(1));
    results.record('10.0.0.5', result(2, { outcome: 'BH', reason: 'CLOCK_SKEW', user: undefined }));
    expect(results.get('10.0.0.5')).toEqual(
      result(2, { outcome: 'BH', reason: 'CLOCK_SKEW', user: undefined }),
    );
    expect(results.get('10.0.0.6')).toBeUndefined();
    expect(results.size).toBe(1);
  });

  it('past its size the least recently recorded address goes first', () => {
    const results = new LastSeamlessResults(3);
    for (const [i, ip] of ['10.0.0.1', '10.0.0.2', '10.0.0.3'].entries()) results.record(ip, result(i));
    results.record('10.0.0.1', result(10)); // seen again: now the newest
    results.record('10.0.0.4', result(11));
    expect(results.size).toBe(3);
    expect(results.get('10.0.0.2')).toBeUndefined();
    expect(results.get('10.0.0.1')?.at).toBe(10);
    expect(results.get('10.0.0.3')?.at).toBe(2);
  });

  it('holds 4,096 addresses by default and no more', () => {
    const results = new LastSeamlessResults();
    for (let i = 0; i < 5000; i++) results.record(`10.0.${i >> 8}.${i & 255}`, result(i));
    expect(results.size).toBe(4096);
    expect(results.get('10.0.0.0')).toBeUndefined();
    expect(results.get('10.0.19.135')?.at).toBe(4999);
  });

  it('refuses a size that is not a positive whole number', () => {
    expect(() => new LastSeamlessResults(0)).toThrow(RangeError);
  });
});

describe('resultOfReply: the final reply lines of handshake.ts as results', () => {
  it('OK with the user decoded; a challenge is no result', () => {
    expect(resultOfReply('negotiate', 'OK token=* user=al%20ice\n', 7)).toEqual(
      result(7, { user: 'al ice' }),
    );
    expect(resultOfReply('ntlm', 'OK user=bob\n', 7)).toEqual(result(7, { scheme: 'ntlm', user: 'bob' }));
    expect(resultOfReply('ntlm', 'TT TlRMTVNTUAACAAAA\n', 7)).toBeUndefined();
  });

  it('reason codes from the messages handshake.ts writes', () => {
    const reason = (line: string) => resultOfReply('negotiate', line, 1)?.reason;
    expect(
      reason('BH message=Kerberos%20token%20refused%20(CLOCK_SKEW)%3A%20Clock%20skew%20too%20great\n'),
    ).toBe('CLOCK_SKEW');
    expect(reason('BH message=Kerberos%20token%20refused%20(WRONG_PRINCIPAL)%3A%20x\n')).toBe(
      'WRONG_PRINCIPAL',
    );
    expect(reason('ERR message=NT_STATUS_LOGON_FAILURE\n')).toBe('NT_STATUS_LOGON_FAILURE');
    expect(
      reason(
        'ERR message=the%20principal%20%22a%40B%22%20is%20of%20realm%20%22B%22%2C%20not%20the%20joined%20realm%20%22C%22\n',
      ),
    ).toBe('FOREIGN_REALM');
    expect(reason('ERR\n')).toBe('REFUSED');
    expect(reason('BH message=out%20of%20sequence%3A%20KK%20with%20no%20handshake%20under%20way\n')).toBe(
      'OUT_OF_SEQUENCE',
    );
    expect(reason('BH message=ntlm_auth%3A%20broken%20helper\n')).toBe('NTLM_AUTH');
    expect(reason('BH message=not%20a%20SPNEGO%20token%20(NOT_SPNEGO)\n')).toBe('NOT_SPNEGO');
    expect(reason('BH message=internal%20error%3A%20x\n')).toBe('FAILED');
  });
});
