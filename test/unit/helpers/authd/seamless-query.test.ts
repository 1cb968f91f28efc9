import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { withSeamlessQuery } from '../../../../helpers/authd/seamless-query.ts';
import { ok } from '../../../../lib/helper-protocol/message.ts';
import { runHelper } from '../../../../lib/helper-protocol/run.ts';
import { LastSeamlessResults } from '../../../../lib/seamless/last-results.ts';

/** The session socket's handlers with the query, driven as authd drives them (runHelper, channel-IDs). */
async function exchange(lines: string[], results: LastSeamlessResults) {
  const looked: string[][] = [];
  const handlers = withSeamlessQuery(
    { handle: (request) => (looked.push(request.fields), ok([['user', 'alice']])) },
    results,
  );
  const input = new PassThrough();
  const output = new PassThrough();
  let answer = '';
  output.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  const done = runHelper({ input, output, channelIds: true, log: () => {}, ...handlers });
  input.end(lines.map((l) => `${l}\n`).join(''));
  await done;
  return { answer, looked };
}

describe('withSeamlessQuery: the query beside the session lookups', () => {
  it('answers the query from memory and passes lookups on untouched', async () => {
    const results = new LastSeamlessResults();
    results.record('10.0.0.7', {
      scheme: 'negotiate',
      outcome: 'ERR',
      reason: 'REFUSED',
      user: undefined,
      at: 9,
    });
    const { answer, looked } = await exchange(
      [
        '1 10.0.0.5 -',
        '2 seamless-last 10.0.0.7',
        '3 seamless-last %3A%3Affff%3A10.0.0.7',
        '4 seamless-last 10.0.0.8',
        '5 seamless-last nope',
      ],
      results,
    );
    expect(answer).toBe(
      [
        '1 OK user=alice',
        '2 OK scheme=negotiate outcome=ERR reason=REFUSED at=9',
        '3 OK scheme=negotiate outcome=ERR reason=REFUSED at=9',
        '4 ERR message=none',
        '5 BH message=seamless-last%3A%20expected%20one%20IP%20address',
        '',
      ].join('\n'),
    );
    expect(looked).toEqual([['10.0.0.5', '-']]);
  });
});
