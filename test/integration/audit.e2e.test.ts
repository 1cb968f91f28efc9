import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbPath, parseConfig } from '../../lib/config/load.ts';
import { localDate } from '../../lib/portal/settings.ts';
import { AuditStore } from '../../lib/store/audit-store.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { applyDirectory } from '../harness/apply-directory.ts';
import { browser, form, http, type Response } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../harness/slapd.ts';
import { openSplashForm } from '../harness/splash-sign-in.ts';

/**
 * The audit trail end to end: a real Squid and `doorman serve` (the lab) with audit.box and audit.file set; an
 * API login and logout, a splash sign-in through Squid, an admin's sign-in and settings save. Each is in the
 * store and in the JSON-lines file, with this box's name, the client's address and the right actor.
 */
const ADMIN_PASSWORD = 'Audit admin pass 1';
let slapd: Slapd;
let lab: Lab;
let auditDir: string;
let auditFile: string;

beforeAll(async () => {
  // The file's directory is the service user's: serve appends to it after giving up root.
  auditDir = mkdtempSync(join(tmpdir(), 'doorman-audit-'));
  const proxy = lookupUser('proxy');
  chownSync(auditDir, proxy.uid, proxy.gid);
  auditFile = join(auditDir, 'audit.jsonl');
  slapd = await startSlapd();
  lab = await startLab({
    config: { audit: { box: 'lab-box', file: auditFile } },
    beforeSquid: async (doorman) => void (await applyDirectory(doorman, slapd)),
  });
  await lab.cli('portal', 'set', '--mode', 'authentication');
  await lab.doorman(['admin', 'passwd', '--user', 'auditor'], { input: `${ADMIN_PASSWORD}\n` });
}, 90_000);
afterAll(async () => {
  await lab?.stop();
  await slapd?.stop();
  if (auditDir !== undefined) rmSync(auditDir, { recursive: true, force: true });
});

const post = (path: string, fields: Record<string, string>, from: string): Promise<Response> => {
  const f = form(fields);
  return http(`${lab.doormanUrl}${path}`, { method: 'POST', from, body: f.body, headers: f.headers });
};

interface Line {
  at: string;
  box: string;
  kind: string;
  actor: string;
  user?: string;
  address?: string;
  detail?: Record<string, unknown>;
}

const fileLines = (): Line[] =>
  existsSync(auditFile)
    ? readFileSync(auditFile, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Line)
    : [];

async function until<T>(read: () => T, done: (value: T) => boolean, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = read();
    if (done(value) || Date.now() > end) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the audit trail through a real Squid and doorman serve', () => {
  it('an API login and logout, a splash sign-in, an admin settings save: in the store and the file', async () => {
    // The login API, and the proof Squid now identifies the client.
    expect((await post('api/login/', { api_key: lab.apiKey, username: 'alice' }, '127.0.0.2')).status).toBe(
      200,
    );
    const page = await http(`${lab.originUrl}page`, {
      from: '127.0.0.2',
      proxy: { host: '127.0.0.1', port: lab.squidPort },
    });
    expect(page.headers['x-doorman-user']).toBe('alice');
    expect((await post('api/logout/', { api_key: lab.apiKey }, '127.0.0.2')).status).toBe(200);

    // The splash page, through Squid (which names the client 127.0.0.1).
    const splash = await openSplashForm(lab, `${lab.originUrl}news`);
    expect((await splash.signIn('alice', USER_PASSWORD)).status).toBe(303);

    // An admin signs in and saves the portal settings with a new idle timeout.
    const admin = browser(() => lab.doormanUrl);
    const csrfOf = (res: Response) => /name="csrf" value="([^"]*)"/.exec(res.body)?.[1] ?? '';
    const signInPage = await admin('admin/sign-in');
    const signedIn = await admin('admin/sign-in', {
      csrf: csrfOf(signInPage),
      user: 'auditor',
      password: ADMIN_PASSWORD,
    });
    expect(signedIn.status).toBe(303);
    const portalPage = await admin('admin/portal');
    const saved = await admin('admin/portal', {
      csrf: csrfOf(portalPage),
      mode: 'authentication',
      idleTimeoutMinutes: '45',
      hardTimeoutMinutes: '',
      registrationClearDate: localDate(Date.now() + 30 * 86_400_000),
      policyText: '',
      walledHosts: '',
      walledCidrs: '',
    });
    expect(saved.status).toBe(200);

    const wanted = ['api.login', 'api.logout', 'portal.sign-in', 'admin.sign-in', 'settings.saved'];
    // Leaving out the lab's own CLI work before (the API key; the portal mode, a settings.saved by cli:root).
    const ours = <E extends { kind: string; actor: string }>(events: E[]) =>
      events.filter(
        (e) =>
          ['admin.created', ...wanted].includes(e.kind) &&
          !(e.kind === 'settings.saved' && e.actor === 'cli:root'),
      );
    const lines = await until(fileLines, (l) => ours(l).length >= 6);
    const config = parseConfig(JSON.parse(readFileSync(lab.configFile, 'utf8')), lab.configFile);
    const db = openDatabase(dbPath(config));
    let stored;
    try {
      stored = new AuditStore(db).list({ limit: 200 }).events.reverse();
    } finally {
      db.close();
    }
    const expected = [
      { kind: 'admin.created', actor: 'cli:root', detail: { name: 'auditor' } },
      { kind: 'api.login', actor: 'api-key:lab', user: 'alice', address: '127.0.0.2' },
      { kind: 'api.logout', actor: 'api-key:lab', user: 'alice', address: '127.0.0.2' },
      { kind: 'portal.sign-in', actor: 'user:alice', user: 'alice', address: '127.0.0.1' },
      { kind: 'admin.sign-in', actor: 'admin:auditor', address: '127.0.0.1' },
      {
        kind: 'settings.saved',
        actor: 'admin:auditor',
        address: '127.0.0.1',
        detail: {
          settings: 'portal',
          changes: expect.objectContaining({ idleTimeoutMinutes: expect.anything() }),
        },
      },
    ].map((e) => expect.objectContaining({ box: 'lab-box', ...e }));
    // In this order, in both.
    expect(ours(stored)).toEqual(expected);
    expect(ours(lines)).toEqual(expected);
    // The file's times are ISO 8601 UTC; the store's the same instants.
    expect(lines.find((l) => l.kind === 'api.login')?.at).toBe(
      new Date(stored.find((e) => e.kind === 'api.login')?.at ?? 0).toISOString(),
    );
    // Never a password or the API key.
    const all = `${readFileSync(auditFile, 'utf8')}${JSON.stringify(stored)}`;
    for (const secret of [ADMIN_PASSWORD, USER_PASSWORD, lab.apiKey.split('.').at(-1) ?? lab.apiKey])
      expect(all).not.toContain(secret);
  });
});
