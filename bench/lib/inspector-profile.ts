import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

const TOP = join(import.meta.dirname, 'cpuprofile-top.ts');

/**
 * `work` under V8's CPU profiler in this process (node:inspector), only it: the profile goes to `file`
 * (.cpuprofile) and bench/lib/cpuprofile-top.ts's summary to `file`.txt and stdout.
 */
export async function profiled<T>(file: string, work: () => Promise<T>): Promise<T> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    writeFileSync(file, JSON.stringify(profile));
    const root = join(import.meta.dirname, '..', '..');
    const summary = execFileSync(process.execPath, [TOP, file, '--top', '20', '--root', root], {
      encoding: 'utf8',
    });
    writeFileSync(`${file}.txt`, summary);
    console.log(summary);
  }
}
