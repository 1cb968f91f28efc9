import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../../../lib/clock.ts';
import { configSchema, type ConfigInput } from '../../../../lib/config/schema.ts';
import type { DirectoryError } from '../../../../lib/directory/errors.ts';
import type { PasswordCheck } from '../../../../lib/directory/password-check.ts';
import type { MacLookup } from '../../../../lib/net/mac-lookup.ts';
import { PasswordGuesses } from '../../../../lib/security/password-guesses.ts';
import { PortalUrlSigner } from '../../../../lib/security/portal-url-signature.ts';
import { ProxyKeyCheck } from '../../../../lib/security/proxy-key.ts';
import { openDatabase, type Db } from '../../../../lib/store/database.ts';
import type { Commits } from '../../../../lib/store/group-commit.ts';
import {
  PortalSettingsStore,
  type PortalSettingsPatch,
} from '../../../../lib/store/portal-settings-store.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import { SignInFailureStore } from '../../../../lib/store/sign-in-failure-store.ts';
import { openSqliteStore } from '../../../../lib/store/sqlite-store.ts';
import type { DeviceGroupRepository } from '../../../../lib/store/store.ts';
import { createApp } from '../../../../portal/app.ts';
import { startServer, type RunningServer } from '../../../../portal/server.ts';
import type { DirectorySource, PasswordDirectory } from '../../../../portal/splash/directory-source.ts';
import type { SplashDeps } from '../../../../portal/splash/routes.ts';
import { Browser as PortalBrowser, PROXY_KEY, sendTo, type Reply, type SendOptions } from '../harness.ts';

export const PASSWORD = 'Corr3ct hörse';

/** A directory that knows alice and bob (same password) and counts every question it is asked. */
export class FakeDirectory implements DirectorySource {
  version = 1;
  applied = true;
  /** Set: every check fails with it (the directory is down). */
  down: DirectoryError | undefined;
  readonly calls: Array<{ login: string; password: string }> = [];
  /** Resolved by the test to let a check finish (see hold). */
  #held: Array<() => void> = [];
  hold = false;

  current(): PasswordDirectory | undefined {
    if (!this.applied) return undefined;
    return { version: this.version, checkPassword: (l, p) => this.#check(l, p) };
  }

  release(): void {
    for (const go of this.#held.splice(0)) go();
  }

  async #check(login: string, password: string): Promise<PasswordCheck> {
    this.calls.push({ login, password });
    if (this.hold) await new Promise<void>((resolve) => this.#held.push(resolve));
    if (this.down !== undefined) throw this.down;
    const name = login
      .trim()
      .toLowerCase()
      .replace(/^example\\/, '');
    if (name !== 'alice' && name !== 'bob') return { ok: false, reason: 'unknown-user' };
    if (password !== PASSWORD) return { ok: false, reason: 'wrong-password', user: name };
    return { ok: true, user: name, cached: false };
  }
}

export const ON_LINK_MAC = '3c:22:fb:12:34:56';
export const RANDOM_MAC = '5a:11:22:33:44:55';

/** MAC answers per client address; unknown addresses are routed clients. */
export class FakeMacs {
  readonly answers = new Map<string, MacLookup>();
  calls = 0;

  set(ip: string, mac: string, randomised = false): void {
    this.answers.set(ip, { ok: true, ip, mac, locallyAdministered: randomised, source: 'neighbour-table' });
  }

  find = async (ip: string): Promise<MacLookup> => {
    this.calls++;
    return (
      this.answers.get(ip) ?? {
        ok: false,
        reason: 'not-on-link',
        message: `${ip} is not on this host's own network (subnet/VLAN): it is reached through router 10.9.9.1`,
      }
    );
  };
}

/** The shared browser from one source address, plus the splash page's form walk. */
export class Browser extends PortalBrowser {
  readonly #splash: Splash;

  readonly from: string;

  constructor(splash: Splash, from: string) {
    super((options) => splash.send({ ...options, from }));
    this.#splash = splash;
    this.from = from;
  }

  /**
   * GET the splash page (with ?url= signed for this browser's address, as the ICAP service sends it, or as
   * `query` says), then post its form with these fields (csrf, url and sig from the page).
   */
  async submit(
    fields: Record<string, string>,
    url?: string,
    query = url === undefined ? '' : this.#splash.signedQuery(url, this.from),
  ): Promise<{ page: Reply; reply: Reply }> {
    const base = this.#splash.base;
    const page = await this.get(`${base}portal/${query === '' ? '' : `?${query}`}`);
    const reply = await this.post(`${base}portal/`, {
      csrf: hiddenOf(page, 'csrf'),
      url: hiddenOf(page, 'url'),
      sig: hiddenOf(page, 'sig'),
      ...fields,
    });
    return { page, reply };
  }
}

/** The secret the test's ICAP side and splash page share (doorman serve: the proxy key). */
export const URL_SECRET = 'the splash tests’ secret';

/** A hidden field of the page's form, HTML entities decoded. */
export function hiddenOf(reply: Reply, name: string): string {
  const m = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)"`).exec(reply.text);
  if (m === null) throw new Error(`no hidden ${name} on the page (status ${reply.status}):\n${reply.text}`);
  return (m[1] as string)
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
}

/** The page's #portal-message code, or undefined. */
export function codeOf(reply: Reply): string | undefined {
  return /<p\s+id="portal-message"\s+data-code="([a-z_]+)"/.exec(reply.text)?.[1];
}

export interface Splash {
  server: RunningServer;
  db: Db;
  clock: ManualClock;
  sessions: SessionStore;
  settings: PortalSettingsStore;
  /** The web app's own: its cache of the active groups notices only its own writes on this connection. */
  groups: DeviceGroupRepository;
  directory: FakeDirectory;
  macs: FakeMacs;
  logs: string[];
  base: string;
  send(options: SendOptions): Promise<Reply>;
  browser(from?: string): Browser;
  /** Signs original URLs as the ICAP service does (same secret, same clock). */
  portalUrls: PortalUrlSigner;
  /** `url=…&sig=…` for `url`, signed for a client at `ip`. */
  signedQuery(url: string, ip: string): string;
  /** Change the portal settings (as the CLI does). */
  set(patch: PortalSettingsPatch): Promise<void>;
  /** Every session row, live or not, as stored. */
  rows(): Array<Record<string, unknown>>;
  /** The DB file (with `file: true`), for a second connection. */
  file: string | undefined;
  close(): Promise<void>;
}

/** The web app with its splash pages on 127.0.0.1 and ::1, an in-memory DB, a manual clock, fakes for the rest. */
export async function startSplash(
  config: ConfigInput = {},
  deps: Partial<Pick<SplashDeps, 'failedAttempts'>> = {},
  options: {
    file?: boolean;
    /** Wraps the store's group commits (to act between a request's reads and its write). */
    commits?: (real: Commits) => Commits;
  } = {},
): Promise<Splash> {
  const dir = options.file === true ? mkdtempSync(join(tmpdir(), 'doorman-splash-')) : undefined;
  const file = dir === undefined ? undefined : join(dir, 'doorman.db');
  const db = openDatabase(file ?? ':memory:', { busyTimeoutMs: 0 });
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 9));
  const sessions = new SessionStore(db, clock);
  const directory = new FakeDirectory();
  const settings = new PortalSettingsStore(db, { clock, directoryApplied: () => directory.applied });
  const macs = new FakeMacs();
  const logs: string[] = [];
  const parsed = configSchema.parse({ trustedProxies: [], ...config });
  const portalUrls = new PortalUrlSigner(URL_SECRET, clock);
  const store = openSqliteStore(db, {
    // No directory is applied to this DB (the fake one stands in): its password file is never read.
    passwordFile: '/nonexistent/directory-bind-password',
    clock,
    ...(options.commits === undefined ? {} : { wrapCommits: options.commits }),
  });
  const groups = store.deviceGroups;
  const app = createApp({
    config: parsed,
    sessions: store.sessions,
    apiKeys: store.apiKeys,
    clock,
    log: (l) => logs.push(l),
    proxyKey: new ProxyKeyCheck(PROXY_KEY),
    splash: {
      settings,
      deviceGroups: groups,
      directory,
      findMac: macs.find,
      portalUrls,
      guesses: new PasswordGuesses(new SignInFailureStore(db), parsed.passwordGuessing, { clock }),
      ...deps,
    },
  });
  const server = await startServer(app, [
    { host: '127.0.0.1', port: 0 },
    { host: '::1', port: 0 },
  ]);
  const splash: Splash = {
    server,
    db,
    clock,
    sessions,
    settings,
    groups,
    directory,
    macs,
    logs,
    base: new URL(parsed.baseUrl).pathname,
    send: (o) => {
      const v6 = o.from?.includes(':') === true;
      const target = server.addresses[v6 ? 1 : 0];
      if (target === undefined) throw new Error('not listening');
      return sendTo(target, o);
    },
    browser: (from = '127.0.0.1') => new Browser(splash, from),
    portalUrls,
    signedQuery: (url, ip) => `url=${encodeURIComponent(url)}&sig=${portalUrls.sign(url, ip)}`,
    set: async (patch) => {
      const saved = await settings.update(patch);
      if (!saved.ok) throw new Error(JSON.stringify(saved.problems));
    },
    rows: () => db.prepare('SELECT * FROM sessions ORDER BY id').all() as Array<Record<string, unknown>>,
    file,
    close: async () => {
      await server.close();
      await store.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
  return splash;
}
