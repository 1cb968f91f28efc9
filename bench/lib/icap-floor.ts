/**
 * The floor for any ICAP service in Node on this machine: a server that parses nothing (it finds the end of
 * each REQMOD by its second blank line, which holds for the kit's bodiless requests only) and answers every
 * one with a constant 204. Not a service: a yardstick for what node:net itself costs per request, next to
 * c-icap and Doorman in bench/icap.sh.
 *
 *   node bench/lib/icap-floor.ts --port P [--host 127.0.0.1]
 */
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { host: { type: 'string', default: '127.0.0.1' }, port: { type: 'string' } },
});
const answer = Buffer.from(
  'ICAP/1.0 204 No Content\r\nISTag: "floor-1"\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\n' +
    'Encapsulated: null-body=0\r\n\r\n',
  'latin1',
);
const END = Buffer.from('\r\n\r\n');
createServer((socket) => {
  let pending: Buffer = Buffer.alloc(0);
  let blanks = 0;
  socket.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let from = 0;
    for (;;) {
      const at = pending.indexOf(END, from);
      if (at < 0) break;
      from = at + 4;
      // the ICAP head, then the encapsulated HTTP head: two blank lines per request
      if (++blanks % 2 === 0) socket.write(answer);
    }
    pending = pending.subarray(from);
  });
  socket.on('error', () => socket.destroy());
}).listen(Number(values.port), values.host);
