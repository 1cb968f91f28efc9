import { run } from './run.ts';

export interface CurlResult {
  status: number;
  headers: string;
}

/**
 * A request through a proxy with real curl (the client Squid admins test with), optionally with Basic proxy
 * credentials. Returns the final status and the response headers.
 */
export async function curlViaProxy(
  url: string,
  proxy: string,
  options: { user?: string; from?: string; extra?: string[] } = {},
): Promise<CurlResult> {
  const args = ['-s', '-o', '/dev/null', '-D', '-', '-w', '%{http_code}', '--max-time', '15', '-x', proxy];
  if (options.user !== undefined) args.push('--proxy-user', options.user, '--proxy-basic');
  if (options.from !== undefined) args.push('--interface', options.from);
  const { stdout } = await run('curl', [...args, ...(options.extra ?? []), url], { allowFailure: true });
  const status = Number(stdout.slice(-3));
  return { status, headers: stdout.slice(0, -3) };
}
