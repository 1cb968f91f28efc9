import { DoormanError } from '../lib/errors.ts';

/**
 * Reading a password for the command line: from a terminal without echo, otherwise the first line of stdin
 * (`printf '%s\n' "$PW" | doorman admin passwd --user root`). Never from argv, which any local user can read
 * in /proc and which lands in shell history.
 */

/** What one chunk of input did to the line being read. */
export type LineState = { done: false } | { done: true; line: string } | { aborted: true };

/**
 * Keystrokes of a terminal in raw mode, one line of them: Enter ends it, Backspace removes the last character,
 * Ctrl-U the whole line, Ctrl-C aborts, Ctrl-D on an empty line ends input (an empty line). Pure: no I/O.
 */
export class KeystrokeLine {
  #chars: string[] = [];
  readonly #maxChars: number;

  constructor(maxChars: number) {
    this.#maxChars = maxChars;
  }

  push(chunk: string): LineState {
    for (const char of chunk) {
      switch (char) {
        case '\r':
        case '\n':
          return { done: true, line: this.#chars.join('') };
        case '\u0003': // Ctrl-C
          return { aborted: true };
        case '\u0004': // Ctrl-D
          if (this.#chars.length === 0) return { done: true, line: '' };
          break;
        case '\u007f': // Backspace (DEL)
        case '\b':
          this.#chars.pop();
          break;
        case '\u0015': // Ctrl-U
          this.#chars = [];
          break;
        default:
          // Other control characters (arrow keys' escape sequences...) are not part of a password.
          if (char >= ' ' && this.#chars.length < this.#maxChars) this.#chars.push(char);
      }
    }
    return { done: false };
  }
}

/**
 * The first line of a byte stream: up to the first LF (a CR before it dropped), or to the end of the input.
 * At most maxBytes are read: a longer line is refused rather than cut.
 */
export async function readFirstLine(
  input: AsyncIterable<Buffer | string>,
  maxBytes: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    const lf = bytes.indexOf(0x0a);
    const part = lf < 0 ? bytes : bytes.subarray(0, lf);
    chunks.push(part);
    size += part.length;
    if (size > maxBytes) throw new DoormanError('INVALID_INPUT', `password: longer than ${maxBytes} bytes`);
    if (lf >= 0) break;
  }
  const line = Buffer.concat(chunks).toString('utf8');
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/** Minimal view of process.stdin as a terminal, so the raw-mode shell can be driven by a test. */
export interface TtyInput extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

/** Prompt on `output` and read one line from the terminal `input` without echoing it. */
export function promptHidden(
  input: TtyInput,
  output: NodeJS.WritableStream,
  prompt: string,
  maxChars: number,
) {
  return new Promise<string>((resolve, reject) => {
    const line = new KeystrokeLine(maxChars);
    const finish = () => {
      input.off('data', onData);
      input.off('end', onEnd);
      input.setRawMode?.(false);
      input.pause();
      output.write('\n');
    };
    const onData = (chunk: Buffer | string) => {
      const state = line.push(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      if ('aborted' in state) {
        finish();
        reject(new DoormanError('INVALID_INPUT', 'password: interrupted, nothing changed'));
      } else if (state.done) {
        finish();
        resolve(state.line);
      }
    };
    const onEnd = () => {
      finish();
      resolve('');
    };
    output.write(prompt);
    input.setRawMode?.(true);
    input.on('data', onData);
    input.on('end', onEnd);
    input.resume();
  });
}
