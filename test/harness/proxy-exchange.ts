import type { Socket } from 'node:net';

/**
 * One GET through an explicit proxy on a keep-alive connection the caller holds (NTLM's legs must share it):
 * resolves with the response head once the whole response is in (its Content-Length body too, so the next
 * request on the connection starts clean); rejects when the connection fails or closes first.
 */
export function proxyExchange(
  socket: Socket,
  request: { url: string; host: string; authorization: string },
): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/^Content-Length: (\d+)/im.exec(text.slice(0, end))?.[1] ?? 0);
      if (Buffer.byteLength(text, 'latin1') < end + 4 + length) return;
      done();
      resolve(text.slice(0, end));
    };
    const onEnd = (error?: Error) =>
      reject(error ?? new Error(`closed after ${JSON.stringify(text.slice(0, 200))}`));
    const done = () => {
      socket.off('data', onData);
      socket.off('error', onEnd);
      socket.off('close', onEnd);
    };
    socket.on('data', onData);
    socket.once('error', onEnd);
    socket.once('close', () => onEnd());
    socket.write(
      `GET ${request.url} HTTP/1.1\r\nHost: ${request.host}\r\nProxy-Connection: keep-alive\r\n` +
        `Proxy-Authorization: ${request.authorization}\r\n\r\n`,
    );
  });
}
