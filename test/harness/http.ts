import { request } from 'node:http';

export interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface RequestOptions {
  method?: string;
  /** Source address of the client (any 127.0.0.0/8 address works on lo; "::1" for IPv6). */
  from?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Send through this HTTP proxy (host:port, IPv6 host in brackets) as an explicit-proxy client. */
  proxy?: { host: string; port: number };
}

/** One HTTP request from a chosen source address, directly or through a proxy; no keep-alive. */
export function http(url: string, options: RequestOptions = {}): Promise<Response> {
  const target = new URL(url);
  const viaProxy = options.proxy !== undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: viaProxy ? options.proxy?.host : target.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: viaProxy ? options.proxy?.port : Number(target.port || 80),
        path: viaProxy ? url : target.pathname + target.search,
        method: options.method ?? 'GET',
        headers: { connection: 'close', ...(viaProxy ? { host: target.host } : {}), ...options.headers },
        ...(options.from === undefined ? {} : { localAddress: options.from }),
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A urlencoded form body, as curl -d sends it. */
export function form(fields: Record<string, string>): { body: string; headers: Record<string, string> } {
  return {
    body: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  };
}

/** Just enough of a browser for the admin screens: one cookie jar, forms posted urlencoded. */
export function browser(
  baseUrl: () => string,
  options: { proxy?: { host: string; port: number } } = {},
): (path: string, fields?: Record<string, string>) => Promise<Response> {
  const jar = new Map<string, string>();
  return async (path, fields) => {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await http(`${baseUrl()}${path}`, {
      method: fields ? 'POST' : 'GET',
      ...(options.proxy ? { proxy: options.proxy } : {}),
      headers: {
        ...(cookie ? { cookie } : {}),
        ...(fields ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(fields ? { body: new URLSearchParams(fields).toString() } : {}),
    });
    const setCookie = res.headers['set-cookie'];
    for (const line of Array.isArray(setCookie) ? setCookie : []) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      if (/Max-Age=0/i.test(line)) jar.delete(pair.slice(0, eq));
      else jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  };
}
