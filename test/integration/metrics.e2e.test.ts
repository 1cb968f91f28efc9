import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookupUser } from '../../lib/system/service-user.ts';
import { form, http } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { freePort } from '../harness/processes.ts';
import { promtoolCheckMetrics, sampleOf, startPrometheus, type Prometheus } from '../harness/prometheus.ts';

/**
 * The metrics end to end: a real Squid and `doorman serve` with its metrics listener and a token file, logins
 * through the API and lookups through Squid counted exactly, the scrape checked by promtool and scraped by a
 * real Prometheus.
 */
const TOKEN = 'metrics-test-token-0123456789abcdef';
let lab: Lab;
let metricsPort: number;
let tokenDir: string;
let tokenFile: string;
let prometheus: Prometheus | undefined;

beforeAll(async () => {
  // The token file is the service user's and 0600 (serve runs as it); its directory only traversable.
  tokenDir = mkdtempSync(join(tmpdir(), 'doorman-metrics-token-'));
  chmodSync(tokenDir, 0o711);
  tokenFile = join(tokenDir, 'token');
  writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  const proxy = lookupUser('proxy');
  chownSync(tokenFile, proxy.uid, proxy.gid);
  metricsPort = await freePort('127.0.0.1', []);
  lab = await startLab({
    config: { metrics: { listen: { host: '127.0.0.1', port: metricsPort }, tokenFile } },
  });
}, 60_000);
afterAll(async () => {
  await prometheus?.stop();
  await lab?.stop();
  rmSync(tokenDir, { recursive: true, force: true });
});

/** A scrape with the token, another one, or (null) none. */
const scrape = (url = `http://127.0.0.1:${metricsPort}/metrics`, token: string | null = TOKEN) =>
  http(url, token === null ? {} : { headers: { authorization: `Bearer ${token}` } });

const login = (username: string, from: string) => {
  const f = form({ api_key: lab.apiKey, username });
  return http(`${lab.doormanUrl}api/login/`, { method: 'POST', from, body: f.body, headers: f.headers });
};
const browse = (from: string) =>
  http(`${lab.originUrl}page?from=${from}`, { from, proxy: { host: '127.0.0.1', port: lab.squidPort } });

/** The session lookups answered so far, every answer. */
const sessionLookups = (text: string) =>
  ['OK', 'ERR', 'BH'].reduce(
    (sum, answer) => sum + (sampleOf(text, `doorman_lookups_total{kind="session",answer="${answer}"}`) ?? 0),
    0,
  );

describe('metrics of a running box', () => {
  it('counts N logins through the API and M lookups through Squid exactly', async () => {
    const before = (await scrape()).body;
    const logins = sampleOf(before, 'doorman_logins_total{source="api"}');
    const lookups = sessionLookups(before);
    expect(logins).toBe(0);
    const N = 4;
    const M = 7;
    for (let i = 0; i < N; i++) expect((await login(`user${i}`, `127.0.0.${20 + i}`)).status).toBe(200);
    // M requests through Squid, from logged-in clients and one that is not: each one lookup (ttl 0).
    for (let i = 0; i < M; i++) await browse(i < M - 1 ? `127.0.0.${20 + (i % N)}` : '127.0.0.99');
    const after = (await scrape()).body;
    expect(sampleOf(after, 'doorman_logins_total{source="api"}')).toBe(N);
    expect(sessionLookups(after) - lookups).toBe(M);
    expect(sampleOf(after, 'doorman_lookups_total{kind="session",answer="ERR"}')).toBeGreaterThanOrEqual(1);
    expect(sampleOf(after, 'doorman_sessions_live{source="api"}')).toBe(N);
    expect(sampleOf(after, 'doorman_authd_up')).toBe(1);
    expect(sampleOf(after, 'doorman_store_connected{engine="sqlite"}')).toBe(1);
    // Each process's memory, by a bounded label.
    expect(sampleOf(after, 'process_resident_memory_bytes{process="serve"}')).toBeGreaterThan(0);
    expect(sampleOf(after, 'process_resident_memory_bytes{process="authd"}')).toBeGreaterThan(0);
    // No user name or client address anywhere in the scrape.
    expect(after).not.toMatch(/user0|127\.0\.0\.2[0-3]/);
  });

  it('passes promtool check metrics', async () => {
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await promtoolCheckMetrics(res.body)).toBe('');
  });

  it('asks for the bearer token: 401 without or with a wrong one, 200 with it', async () => {
    const none = await scrape(undefined, null);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="doorman metrics"');
    expect((await scrape(undefined, 'wrong')).status).toBe(401);
    expect((await scrape(undefined, TOKEN)).status).toBe(200);
  });

  it('serves {baseUrl}metrics on the web app only with the token (set here)', async () => {
    expect((await scrape(`${lab.doormanUrl}metrics`, null)).status).toBe(401);
    const res = await scrape(`${lab.doormanUrl}metrics`);
    expect(res.status).toBe(200);
    expect(res.body).toContain('doorman_logins_total');
  });

  it('is scraped by a real Prometheus: up is 1 and the login counter is there', async () => {
    prometheus = await startPrometheus({ hostPort: `127.0.0.1:${metricsPort}`, tokenFile });
    await prometheus.waitFor('up{job="doorman"}', (v) => v === 1);
    expect(await prometheus.waitFor('doorman_logins_total{source="api"}', (v) => v === 4)).toBe(4);
    expect(await prometheus.waitFor('doorman_authd_up', (v) => v === 1)).toBe(1);
  });

  it('says doorman_authd_up 0 while authd does not answer, and still answers', async () => {
    // Stopped (SIGSTOP), not ended: serve's supervisor would start another within a second.
    const pid = Number(readFileSync(join(lab.dir, 'state', 'run', 'authd.pid'), 'utf8').trim());
    process.kill(pid, 'SIGSTOP');
    try {
      const res = await scrape();
      expect(res.status).toBe(200);
      expect(sampleOf(res.body, 'doorman_authd_up')).toBe(0);
      expect(sampleOf(res.body, 'doorman_logins_total{source="api"}')).toBe(4);
      expect(res.body).not.toContain('process="authd"');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });
});

describe('metrics by default', () => {
  let plain: Lab;
  beforeAll(async () => {
    plain = await startLab();
  }, 60_000);
  afterAll(async () => {
    await plain?.stop();
  });

  it('are not served on the public listener, and authd opens no socket for them', async () => {
    const res = await http(`${plain.doormanUrl}metrics`);
    expect(res.status).toBe(404);
    expect(res.body).not.toContain('doorman_');
    expect(existsSync(join(plain.dir, 'state', 'authd-metrics.sock'))).toBe(false);
    expect(existsSync(join(lab.dir, 'state', 'authd-metrics.sock'))).toBe(true);
  });
});
