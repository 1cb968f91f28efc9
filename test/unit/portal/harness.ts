import { request, type IncomingHttpHeaders } from 'node:http';
import { ManualClock } from '../../../lib/clock.ts';
import { configSchema, type ConfigInput } from '../../../lib/config/schema.ts';
import { ProxyKeyCheck } from '../../../lib/security/proxy-key.ts';
import { ApiKeyStore } from '../../../lib/store/api-key-store.ts';
import { openDatabase, type Db } from '../../../lib/store/database.ts';
import { SessionStore } from '../../../lib/store/session-store.ts';
import { openSqliteStore } from '../../../lib/store/sqlite-store.ts';
import type { AuditRecord } from '../../../lib/audit/event.ts';
import type { Store } from '../../../lib/store/store.ts';
import { createApp } from '../../../portal/app.ts';
import { startServer, type ListenAddress, type RunningServer } from '../../../portal/server.ts';

/** A portal on a real socket, an in-memory DB, a clock that moves when told, and one live API key. */
export interface Portal {
  server: RunningServer;
  db: Db;
  clock: ManualClock;
  sessions: SessionStore;
  apiKeys: ApiKeyStore;
  key: string;
  logs: string[];
  /** The whole store (its audit trail: box 'test-box'), and the audit events shipped once committed. */
  store: Store;
  shipped: AuditRecord[];
  /** Send a request to the first (or given) listening address. */
  send(options: SendOptions): Promise<Reply>;
  /** POST a urlencoded form to `path` as client `from` (a loopback address). */
  post(path: string, form: Record<string, string> | string, from?: string): Promise<Reply>;
  close(): Promise<void>;
}

export interface SendOptions {
  method?: string;
  path: string;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
  /** Source address, so one test can be several clients. */
  from?: string;
  /** Which listening address to use; default the first. */
  via?: number;
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: unknown;
}

export const FORM = 'application/x-www-form-urlencoded';

/** The proxy key the test portal knows: a trusted proxy proves with it that it wrote X-Doorman-Client. */
export const PROXY_KEY = 'TestProxyKey-0123456789_abcdefghijklmnopqrs';

export async function startPortal(
  config: ConfigInput = {},
  listen: ListenAddress[] = [{ host: '127.0.0.1', port: 0 }],
): Promise<Portal> {
  const db = openDatabase(':memory:');
  const clock = new ManualClock();
  const sessions = new SessionStore(db, clock);
  const apiKeys = new ApiKeyStore(db, clock);
  const { key } = apiKeys.create('tests');
  // No directory is applied here: its password file is never read.
  const shipped: AuditRecord[] = [];
  const store = openSqliteStore(db, {
    passwordFile: '/nonexistent/directory-bind-password',
    clock,
    audit: { box: 'test-box', ship: (records) => shipped.push(...records) },
  });
  const logs: string[] = [];
  const app = createApp({
    // No trusted proxy unless a test says so: requests from 127.0.0.1 are then plain clients.
    config: configSchema.parse({ trustedProxies: [], ...config }),
    proxyKey: new ProxyKeyCheck(PROXY_KEY),
    sessions: store.sessions,
    apiKeys: store.apiKeys,
    audit: store.audit,
    clock,
    log: (l) => logs.push(l),
  });
  const server = await startServer(app, listen);

  const send = (options: SendOptions): Promise<Reply> => {
    const target = server.addresses[options.via ?? 0];
    if (target === undefined) throw new Error(`no listening address ${options.via}`);
    return sendTo(target, options);
  };
  const post = (path: string, form: Record<string, string> | string, from?: string) =>
    send({
      method: 'POST',
      path,
      headers: { 'Content-Type': FORM },
      body: typeof form === 'string' ? form : new URLSearchParams(form).toString(),
      ...(from === undefined ? {} : { from }),
    });
  const close = async () => {
    await server.close();
    await store.close();
  };
  return { server, db, clock, sessions, apiKeys, key, logs, store, shipped, send, post, close };
}

export function sendTo(target: ListenAddress, options: SendOptions): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: options.headers ?? {},
        agent: false,
        ...(options.from === undefined ? {} : { localAddress: options.from }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

interface Cookie {
  value: string;
  path: string;
}

/**
 * A browser as far as the web app cares: a cookie jar honouring Path and Max-Age=0 around `send` (which
 * fixes the source address). The admin and splash harnesses add their own page walks.
 */
export class Browser {
  readonly cookies = new Map<string, Cookie>();
  readonly #send: (options: SendOptions) => Promise<Reply>;

  constructor(send: (options: SendOptions) => Promise<Reply>) {
    this.#send = send;
  }

  async send(options: SendOptions): Promise<Reply> {
    const cookie = [...this.cookies]
      .filter(([, c]) => options.path.startsWith(c.path))
      .map(([name, c]) => `${name}=${c.value}`)
      .join('; ');
    const headers = { ...options.headers, ...(cookie === '' ? {} : { Cookie: cookie }) };
    const reply = await this.#send({ ...options, headers });
    for (const line of reply.headers['set-cookie'] ?? []) {
      const [pair = '', ...attributes] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const path = attributes.find((a) => a.startsWith('Path='))?.slice(5) ?? '/';
      if (attributes.includes('Max-Age=0')) this.cookies.delete(name);
      else this.cookies.set(name, { value: pair.slice(eq + 1), path });
    }
    return reply;
  }

  get(path: string): Promise<Reply> {
    return this.send({ path });
  }

  post(path: string, form: Record<string, string> | string): Promise<Reply> {
    return this.send({
      method: 'POST',
      path,
      headers: { 'Content-Type': FORM },
      body: typeof form === 'string' ? form : new URLSearchParams(form).toString(),
    });
  }
}
