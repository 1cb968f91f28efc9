import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import type { Handshake } from '../../../../lib/seamless/handshake.ts';
import { LastSeamlessResults } from '../../../../lib/seamless/last-results.ts';
import { recordedHandshake } from '../../../../lib/seamless/recorded-handshake.ts';

/** A handshake that answers from a script and counts what else is asked of it. */
function scripted(...replies: string[]) {
  const calls = { leaseDeadline: 0, close: 0, lines: [] as string[] };
  const handshake: Handshake = {
    handle: (line) => {
      calls.lines.push(line);
      return Promise.resolve(replies.shift() ?? 'BH message=none%20left\n');
    },
    leaseDeadline: () => (calls.leaseDeadline++, 42),
    releaseIfExpired: () => Promise.resolve(false),
    close: () => (calls.close++, Promise.resolve()),
  };
  return { handshake, calls };
}

describe('recordedHandshake: the final result under the client address', () => {
  it("records the NTLM handshake's end under the address of its YR and KK, not the challenge", async () => {
    const clock = new ManualClock(1000);
    const results = new LastSeamlessResults();
    const { handshake, calls } = scripted('TT Q0hBTExFTkdF\n', 'OK user=bob\n');
    const recorded = recordedHandshake(handshake, 'ntlm', results, clock);
    expect(await recorded.handle('YR TlRMTVNTUAABAAAA 10.0.0.7')).toBe('TT Q0hBTExFTkdF\n');
    expect(results.get('10.0.0.7')).toBeUndefined();
    clock.advance(5);
    expect(await recorded.handle('KK TlRMTVNTUAADAAAA 10.0.0.7')).toBe('OK user=bob\n');
    expect(results.get('10.0.0.7')).toEqual({
      scheme: 'ntlm',
      outcome: 'OK',
      reason: undefined,
      user: 'bob',
      at: 1005,
    });
    // The rest is the handshake's own, untouched.
    expect(calls.lines).toEqual(['YR TlRMTVNTUAABAAAA 10.0.0.7', 'KK TlRMTVNTUAADAAAA 10.0.0.7']);
    expect(recorded.leaseDeadline()).toBe(42);
    await recorded.close();
    expect(calls.close).toBe(1);
  });

  it('an address in any spelling is kept in normaliseIp form; none sent: nothing recorded', async () => {
    const results = new LastSeamlessResults();
    const clock = new ManualClock(1);
    const { handshake } = scripted(
      'BH message=Kerberos%20token%20refused%20(EXPIRED)%3A%20x\n',
      'OK token=* user=a\n',
    );
    const recorded = recordedHandshake(handshake, 'negotiate', results, clock);
    await recorded.handle('YR YIIBAQ== %3A%3Affff%3A10.0.0.8');
    expect(results.get('10.0.0.8')).toMatchObject({ outcome: 'BH', reason: 'EXPIRED' });
    const bare = recordedHandshake(scripted('OK token=* user=a\n').handshake, 'negotiate', results, clock);
    await bare.handle('YR YIIBAQ==');
    expect(results.size).toBe(1);
  });
});
