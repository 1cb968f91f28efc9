import { execFile as execFileCb } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { http } from './http.ts';
import { freePort, start, terminate, waitForPort } from './processes.ts';

const execFile = promisify(execFileCb);

/**
 * Debian's real Prometheus (package prometheus, scripts/install-system.sh test) on loopback, in a directory
 * of its own, scraping one target every second: for the tests that prove what it makes of Doorman's metrics.
 */
export interface Prometheus {
  url: string;
  /** An instant query's single value, or undefined when it has no result (yet). */
  value(query: string): Promise<number | undefined>;
  /** Wait until `query` has a value that `until` accepts; rejects with the last one after `timeoutMs`. */
  waitFor(query: string, until: (value: number) => boolean, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

export async function startPrometheus(target: {
  hostPort: string;
  metricsPath?: string;
  tokenFile?: string;
}): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'doorman-prometheus-'));
  const port = await freePort('127.0.0.1', []);
  const config = join(dir, 'prometheus.yml');
  // JSON is YAML: no YAML writer needed.
  const job: Record<string, unknown> = {
    job_name: 'doorman',
    scrape_interval: '1s',
    scrape_timeout: '1s',
    metrics_path: target.metricsPath ?? '/metrics',
    static_configs: [{ targets: [target.hostPort] }],
    ...(target.tokenFile === undefined
      ? {}
      : { authorization: { type: 'Bearer', credentials_file: target.tokenFile } }),
  };
  writeFileSync(config, JSON.stringify({ global: { scrape_interval: '1s' }, scrape_configs: [job] }));
  await execFile('promtool', ['check', 'config', config]);
  const server = start('prometheus', [
    `--config.file=${config}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
  const url = `http://127.0.0.1:${port}/`;
  try {
    await waitForPort('127.0.0.1', port, 20_000, server.child);
  } catch (error) {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(error as Error).message}\n--- prometheus stderr:\n${server.stderr()}`);
  }
  const value = async (query: string): Promise<number | undefined> => {
    const res = await http(`${url}api/v1/query?query=${encodeURIComponent(query)}`);
    if (res.status !== 200) return undefined;
    const body = JSON.parse(res.body) as { data?: { result?: Array<{ value: [number, string] }> } };
    const first = body.data?.result?.[0];
    return first === undefined ? undefined : Number(first.value[1]);
  };
  return {
    url,
    value,
    async waitFor(query, until, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      let last: number | undefined;
      for (;;) {
        last = await value(query);
        if (last !== undefined && until(last)) return last;
        if (Date.now() > deadline)
          throw new Error(`${query}: ${String(last)} after ${timeoutMs} ms\n${server.stderr().slice(-2000)}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
    stop: async () => {
      await terminate(server, 5000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `promtool check metrics` on a scrape's text: its complaints (lint included), empty when it passes. */
export async function promtoolCheckMetrics(text: string): Promise<string> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve(code === 0 ? out.trim() : `exit ${code}: ${out.trim()}`));
    child.stdin.end(text);
  });
}

/** The value of one series in a scrape's text (`name{labels}` exactly as written), or undefined. */
export function sampleOf(text: string, series: string): number | undefined {
  for (const line of text.split('\n'))
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return undefined;
}
