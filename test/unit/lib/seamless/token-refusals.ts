import { expect } from 'vitest';
import { TokenError, type TokenErrorCode } from '../../../../lib/seamless/spnego.ts';

/** `refusal` and `expectRefused` for a token reader that throws TokenError (spnego.ts, ap-req.ts). */
export function refusalsOf<T>(read: (input: T) => unknown) {
  const refusal = (input: T): TokenError => {
    try {
      read(input);
    } catch (error) {
      if (error instanceof TokenError) return error;
      throw error;
    }
    throw new Error('the token was accepted');
  };
  const expectRefused = (input: T, code: TokenErrorCode, message: RegExp | string): void => {
    const error = refusal(input);
    expect({ code: error.code, name: error.name }).toEqual({ code, name: 'TokenError' });
    expect(error.message).toMatch(message);
  };
  return { refusal, expectRefused };
}
