import { afterEach } from 'vitest';
import type { AuditRecord } from '../../../../lib/audit/event.ts';
import type { AuditRepository } from '../../../../lib/store/store.ts';
import { ManualClock } from '../../../../lib/clock.ts';
import { configSchema, type ConfigInput } from '../../../../lib/config/schema.ts';
import { directorySettingsSchema, type DirectorySettings } from '../../../../lib/directory/settings.ts';
import { AdminStore } from '../../../../lib/store/admin-store.ts';
import { openDatabase, type Db } from '../../../../lib/store/database.ts';
import type { Schedule } from '../../../../lib/store/busy.ts';
import { PortalSettingsStore } from '../../../../lib/store/portal-settings-store.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import { openSqliteStore } from '../../../../lib/store/sqlite-store.ts';
import type { ApiKeyRepository, DeviceGroupRepository } from '../../../../lib/store/store.ts';
import type { ApplyResult, DirectoryAdmin } from '../../../../portal/admin/directory-admin.ts';
import type { AdminDeps } from '../../../../portal/admin/routes.ts';
import { createApp } from '../../../../portal/app.ts';
import { startServer, type RunningServer } from '../../../../portal/server.ts';
import { Browser as PortalBrowser, sendTo, type Reply, type SendOptions } from '../harness.ts';

export const ADMIN = 'root';
export const ADMIN_PASSWORD = 'Adm1n pässword';
export const BIND_PASSWORD = 'bind-S3cret!';

/**
 * A stand-in for the directory settings store: apply() answers what the test says (by default: valid input
 * is applied and 42 groups are found) and records what it was given.
 */
export class FakeDirectory implements DirectoryAdmin {
  stored: { settings: DirectorySettings; password: string } | undefined;
  calls: Array<{ input: unknown; password: string | undefined }> = [];
  answer: ApplyResult | undefined;

  current() {
    return this.stored && { settings: this.stored.settings, hasPassword: this.stored.password !== '' };
  }

  async apply(input: unknown, password: string | undefined): Promise<ApplyResult> {
    this.calls.push({ input, password });
    if (this.answer !== undefined) return this.answer;
    const parsed = directorySettingsSchema.safeParse(input);
    if (!parsed.success) {
      return {
        ok: false,
        problems: parsed.error.issues.map((i) => ({ field: i.path.join('.'), message: i.message })),
      };
    }
    this.stored = { settings: parsed.data, password: password ?? this.stored?.password ?? '' };
    return { ok: true, groupCount: 42, message: 'Found 42 user groups under DC=example,DC=test' };
  }
}

export const SETTINGS: DirectorySettings = directorySettingsSchema.parse({
  kind: 'active-directory',
  host: 'dc1.example.test',
  baseDn: 'DC=example,DC=test',
  bindDn: 'CN=Squid Proxy,CN=Users,DC=example,DC=test',
  transport: 'ldaps',
});

/** The shared browser, plus the admin's sign-in walk. */
export class Browser extends PortalBrowser {
  readonly #portal: AdminPortal;

  constructor(portal: AdminPortal, from?: string) {
    super((options) => portal.send({ ...options, ...(from === undefined ? {} : { from }) }));
    this.#portal = portal;
  }

  /** GET the sign-in page and post the form on it. */
  async signIn(user = ADMIN, password = ADMIN_PASSWORD): Promise<Reply> {
    const page = await this.get(`${this.#portal.base}admin/sign-in`);
    return this.post(`${this.#portal.base}admin/sign-in`, { csrf: csrfOf(page), user, password });
  }
}

export function setCookies(reply: Reply): string[] {
  const header = reply.headers['set-cookie'];
  return header === undefined ? [] : header;
}

/** The text of an HTML fragment as a reader sees it: tags gone, entities decoded, white space squeezed. */
export const textOf = (fragment: string): string =>
  fragment
    .replace(/<[^<>]*>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .replace(/ ([:.,;])/g, '$1')
    .trim();

/** The hidden CSRF field of the (first) form on a page. */
export function csrfOf(reply: Reply): string {
  const m = /<input type="hidden" name="csrf" value="([^"]*)"/.exec(reply.text);
  if (m === null) throw new Error(`no CSRF field on the page (status ${reply.status}):\n${reply.text}`);
  return m[1] as string;
}

export interface AdminPortal {
  server: RunningServer;
  db: Db;
  clock: ManualClock;
  store: AdminStore;
  directory: FakeDirectory;
  /**
   * The captive portal screen's stores, on the same DB. The Device Groups are the web app's own: its cache of
   * the active groups notices only its own writes on this connection.
   */
  sessions: SessionStore;
  portalSettings: PortalSettingsStore;
  deviceGroups: DeviceGroupRepository;
  /** The web app's own API keys (the API keys screen's). */
  apiKeys: ApiKeyRepository;
  logs: string[];
  /** The path of baseUrl: '/' unless the test configures another. */
  base: string;
  /** The audit trail (box 'test-box'), and what was shipped to the sink. */
  audit: AuditRepository;
  shipped: AuditRecord[];
  send(options: SendOptions): Promise<Reply>;
  browser(from?: string): Browser;
  close(): Promise<void>;
}

export interface AdminPortalOptions {
  /** The session DB (default: a new in-memory one), closed by close(). */
  db?: Db;
  /** The timers the store waits on while another connection holds the write lock. */
  schedule?: Schedule;
  /** The time zone the portal screen names. Default: the test process's. */
  timeZone?: string;
  /** The shortest idle timeout the screen names. Default 1. */
  leastIdleMinutes?: number;
}

/**
 * The portal with its admin screens, an admin `root` with ADMIN_PASSWORD, a fake directory, and the real
 * portal settings, Device Group and session stores.
 */
export async function startAdminPortal(
  config: ConfigInput = {},
  options: Partial<
    Pick<AdminDeps, 'signInLimits' | 'accountLimits' | 'seamless' | 'explain' | 'probes'>
  > = {},
  setup: AdminPortalOptions = {},
): Promise<AdminPortal> {
  const db = setup.db ?? openDatabase(':memory:');
  const clock = new ManualClock();
  const store = new AdminStore(db, clock);
  const sessions = new SessionStore(db, clock);
  const storeOptions = { clock, ...(setup.schedule === undefined ? {} : { schedule: setup.schedule }) };
  const directory = new FakeDirectory();
  // The portal's sign-in modes need an applied directory: the fake one's stored settings.
  const directoryApplied = () => directory.current() !== undefined;
  const portalSettings = new PortalSettingsStore(db, { ...storeOptions, directoryApplied });
  const shared = openSqliteStore(db, {
    // No directory is applied to this DB (the fake one stands in): its password file is never read.
    passwordFile: '/nonexistent/directory-bind-password',
    directoryApplied,
    ...storeOptions,
    audit: { box: 'test-box', ship: (records) => shipped.push(...records) },
  });
  const deviceGroups = shared.deviceGroups;
  const shipped: AuditRecord[] = [];
  await store.setPassword(ADMIN, ADMIN_PASSWORD);
  const logs: string[] = [];
  const parsed = configSchema.parse(config);
  const app = createApp({
    config: parsed,
    sessions: shared.sessions,
    apiKeys: shared.apiKeys,
    audit: shared.audit,
    clock,
    log: (l) => logs.push(l),
    admin: {
      store: shared.admins,
      sessions: shared.sessions,
      apiKeys: shared.apiKeys,
      audit: shared.audit,
      directory,
      portal: {
        settings: shared.portal,
        deviceGroups,
        sessions: shared.sessions,
        ...(setup.timeZone === undefined ? {} : { timeZone: setup.timeZone }),
        ...(setup.leastIdleMinutes === undefined ? {} : { leastIdleMinutes: setup.leastIdleMinutes }),
      },
      ...options,
    },
  });
  const server = await startServer(app, [{ host: '127.0.0.1', port: 0 }]);
  const target = server.addresses[0];
  if (target === undefined) throw new Error('the portal listens nowhere');
  const portal: AdminPortal = {
    server,
    db,
    clock,
    store,
    directory,
    sessions,
    portalSettings,
    deviceGroups,
    apiKeys: shared.apiKeys,
    logs,
    audit: shared.audit,
    shipped,
    base: new URL(parsed.baseUrl).pathname,
    send: (o) => sendTo(target, o),
    browser: (from) => new Browser(portal, from),
    close: async () => {
      await server.close();
      await shared.close();
    },
  };
  return portal;
}

/**
 * A portal per test, closed after it: `start` makes it (as startAdminPortal), `signedIn` makes one with a
 * signed-in browser and the CSRF token of the page at `path`.
 */
export function useAdminPortal() {
  let current: AdminPortal | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  const start = async (...args: Parameters<typeof startAdminPortal>) =>
    (current = await startAdminPortal(...args));
  const signedIn = async (path: string, ...args: Parameters<typeof startAdminPortal>) => {
    const p = await start(...args);
    const b = p.browser();
    await b.signIn();
    return { p, b, csrf: csrfOf(await b.get(path)) };
  };
  return { start, signedIn };
}
