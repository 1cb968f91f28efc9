import type { Clock } from '../clock.ts';
import { parseStatefulRequest, type StatefulScheme } from '../helper-protocol/negotiate.ts';
import { normaliseIp } from '../net/address.ts';
import { addressOf, type Handshake } from './handshake.ts';
import { resultOfReply, type LastSeamlessResults } from './last-results.ts';

/**
 * A handshake that leaves its final result in `results` under the client's address (Squid's `key_extras
 * "%>a"`, on every YR and KK), for `doorman explain`. Outside the state machine on purpose: it reads the
 * lines in and out and changes neither. A handshake without an address (a Squid without key_extras) records
 * nothing.
 */
export function recordedHandshake(
  handshake: Handshake,
  scheme: StatefulScheme,
  results: LastSeamlessResults,
  clock: Clock,
): Handshake {
  let address: string | undefined;
  return {
    ...handshake,
    async handle(line) {
      const parsed = parseStatefulRequest(line);
      if (parsed.ok) {
        const from = addressOf(parsed.request.extras);
        address = from === undefined ? address : (normaliseIp(from) ?? address);
      }
      const reply = await handshake.handle(line);
      if (address !== undefined) {
        const result = resultOfReply(scheme, reply, clock.now());
        if (result !== undefined) results.record(address, result);
      }
      return reply;
    },
  };
}
