import { form, http } from './http.ts';

/**
 * Identified clients under steady load through a real Squid, and what an event did to them: every request
 * of every client counted by status, its latency, and the longest time in which no request of any client was
 * answered 200 (the gap an event opened). Shared by the tests (which assert the denials of an event) and
 * bench/authd-events.sh (which prints the figures).
 */
export interface LoadFigures {
  requests: number;
  /** Requests of identified clients answered anything but 200. */
  denied: number;
  byStatus: Record<number, number>;
  maxLatencyMs: number;
  /** The longest interval between two 200 answers (from the first to the last), ms. */
  longestGapMs: number;
}

/** `count` client addresses, 127.0.1.<first>..., each logged in (the login API) as user<i>. */
export async function loginClients(
  doorman: { doormanUrl: string; apiKey: string },
  count: number,
  first = 10,
): Promise<string[]> {
  const addresses = Array.from({ length: count }, (_, i) => `127.0.1.${first + i}`);
  for (const [i, from] of addresses.entries()) {
    const f = form({ api_key: doorman.apiKey, username: `user${i}` });
    const login = await http(`${doorman.doormanUrl}api/login/`, {
      method: 'POST',
      from,
      body: f.body,
      headers: f.headers,
    });
    if (login.status !== 200) throw new Error(`login of ${from}: ${login.status} ${login.body}`);
  }
  return addresses;
}

export interface LoadOptions {
  /** Squid's explicit-proxy port on 127.0.0.1. */
  squidPort: number;
  /** The URL fetched through Squid. */
  url: string;
  addresses: readonly string[];
  /** Load before the event starts, ms. */
  beforeMs?: number;
  /** Load after the event has finished, ms. */
  afterMs?: number;
}

/** Each address fetches `url` through Squid in a loop (one request at a time) while `event` runs. */
export async function underLoad(options: LoadOptions, event: () => Promise<void>): Promise<LoadFigures> {
  const byStatus: Record<number, number> = {};
  const okAt: number[] = [];
  let requests = 0;
  let maxLatencyMs = 0;
  let going = true;
  const clients = options.addresses.map(async (from) => {
    while (going) {
      const started = performance.now();
      let status: number;
      try {
        status = (await http(options.url, { from, proxy: { host: '127.0.0.1', port: options.squidPort } }))
          .status;
      } catch {
        status = 0; // no HTTP answer at all
      }
      const done = performance.now();
      requests += 1;
      byStatus[status] = (byStatus[status] ?? 0) + 1;
      maxLatencyMs = Math.max(maxLatencyMs, done - started);
      if (status === 200) okAt.push(done);
    }
  });
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  try {
    await pause(options.beforeMs ?? 500);
    await event();
    await pause(options.afterMs ?? 1000);
  } finally {
    going = false;
    await Promise.all(clients);
  }
  okAt.sort((a, b) => a - b);
  let longestGapMs = 0;
  for (let i = 1; i < okAt.length; i++)
    longestGapMs = Math.max(longestGapMs, (okAt[i] ?? 0) - (okAt[i - 1] ?? 0));
  return {
    requests,
    denied: requests - (byStatus[200] ?? 0),
    byStatus,
    maxLatencyMs: Math.round(maxLatencyMs),
    longestGapMs: Math.round(longestGapMs),
  };
}
