import { describe, expect, it } from 'vitest';
import { MAX_REASON_CHARS, parseNtlmAuthReply } from '../../../../lib/seamless/ntlm-auth-reply.ts';

/** ntlm_auth's reply layouts (lab REPORT.md §6.4), each helper protocol's own. */
describe('parseNtlmAuthReply: squid-2.5-ntlmssp', () => {
  it('reads TT with its token, AF with a user name that may hold spaces, NA and BH with their reasons', () => {
    expect(parseNtlmAuthReply('ntlmssp', 'TT TlRMTVNTUAACAAAA')).toEqual({
      result: 'TT',
      token: 'TlRMTVNTUAACAAAA',
    });
    expect(parseNtlmAuthReply('ntlmssp', 'AF EXAMPLE\\alice  smith')).toEqual({
      result: 'AF',
      user: 'EXAMPLE\\alice smith',
    });
    expect(parseNtlmAuthReply('ntlmssp', 'NA NT_STATUS_LOGON_FAILURE')).toEqual({
      result: 'NA',
      reason: 'NT_STATUS_LOGON_FAILURE',
    });
    expect(parseNtlmAuthReply('ntlmssp', 'BH NT_STATUS_UNSUCCESSFUL')).toEqual({
      result: 'BH',
      reason: 'NT_STATUS_UNSUCCESSFUL',
    });
  });
});

describe('parseNtlmAuthReply: gss-spnego', () => {
  it('reads the token field before the argument, * meaning none', () => {
    expect(parseNtlmAuthReply('gss-spnego', 'TT oRswGaADCgEB *')).toEqual({
      result: 'TT',
      token: 'oRswGaADCgEB',
    });
    expect(parseNtlmAuthReply('gss-spnego', 'AF oRswGaADCgEA EXAMPLE\\alice smith')).toEqual({
      result: 'AF',
      user: 'EXAMPLE\\alice smith',
      token: 'oRswGaADCgEA',
    });
    expect(parseNtlmAuthReply('gss-spnego', 'AF * alice')).toEqual({ result: 'AF', user: 'alice' });
    expect(parseNtlmAuthReply('gss-spnego', 'NA * NT_STATUS_WRONG_PASSWORD')).toEqual({
      result: 'NA',
      reason: 'NT_STATUS_WRONG_PASSWORD',
    });
    expect(parseNtlmAuthReply('gss-spnego', 'BH * no memory')).toEqual({ result: 'BH', reason: 'no memory' });
  });
});

describe('parseNtlmAuthReply: what is not a reply', () => {
  it('answers invalid for TT without a token, AF without a user, an unknown code and an empty line', () => {
    expect(parseNtlmAuthReply('ntlmssp', 'TT')).toEqual({
      result: 'invalid',
      message: 'ntlm_auth answered TT without a token',
    });
    expect(parseNtlmAuthReply('gss-spnego', 'TT * *')).toMatchObject({ result: 'invalid' });
    expect(parseNtlmAuthReply('gss-spnego', 'AF *')).toEqual({
      result: 'invalid',
      message: 'ntlm_auth accepted the client but named no user',
    });
    expect(parseNtlmAuthReply('ntlmssp', 'YR TlRMTVNTUAABAAAA')).toEqual({
      result: 'invalid',
      message: 'ntlm_auth answered "YR": expected TT, AF, NA or BH',
    });
    expect(parseNtlmAuthReply('ntlmssp', `${'X'.repeat(40)} y`)).toEqual({
      result: 'invalid',
      message: `ntlm_auth answered "${'X'.repeat(16)}": expected TT, AF, NA or BH`,
    });
    expect(parseNtlmAuthReply('ntlmssp', '')).toEqual({
      result: 'invalid',
      message: 'ntlm_auth answered an empty line: expected TT, AF, NA or BH',
    });
  });

  it('cuts a reason longer than MAX_REASON_CHARS', () => {
    const reply = parseNtlmAuthReply('ntlmssp', `NA ${'x'.repeat(MAX_REASON_CHARS + 10)}`);
    expect(reply).toEqual({ result: 'NA', reason: `${'x'.repeat(MAX_REASON_CHARS)}…` });
  });
});
