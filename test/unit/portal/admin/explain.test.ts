import { afterEach, describe, expect, it } from 'vitest';
import { explain } from '../../../../lib/explain/explain.ts';
import type { ExplainFacts } from '../../../../lib/explain/facts.ts';
import type { ExplainInput } from '../../../../lib/explain/input.ts';
import type { Explainer } from '../../../../portal/admin/explain-screen.ts';
import { facts, NOW, notIdentified } from '../../../support/explain-facts.ts';
import { startAdminPortal, textOf, type AdminPortal } from './harness.ts';

let portal: AdminPortal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

/** A client nobody logged in, at whatever address and MAC is asked (the gathering stands in). */
const nobody = (input: ExplainInput): ExplainFacts =>
  facts({
    ...notIdentified,
    ip: input.ip,
    mac:
      input.mac === undefined
        ? { kind: 'none', reason: 'no-entry', message: 'no entry' }
        : { kind: 'given', mac: input.mac },
  });

async function signedIn(explainer?: Explainer) {
  const asked: ExplainInput[] = [];
  const wrapped: Explainer | undefined =
    explainer ?? ((input) => (asked.push(input), Promise.resolve(explain(nobody(input)))));
  portal = await startAdminPortal({}, { explain: wrapped });
  const b = portal.browser();
  await b.signIn();
  return { b, asked };
}

describe('the Explain screen', () => {
  it('is behind the sign-in, in the navigation, and shows an empty GET form with labelled fields', async () => {
    portal = await startAdminPortal({}, {});
    const anonymous = await portal.browser().get('/admin/explain');
    expect(anonymous.status).toBe(303);
    const b = portal.browser();
    await b.signIn();
    const page = await b.get('/admin/explain');
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<a href="\/admin\/explain" aria-current="page"\s*>Explain a client<\/a/);
    expect(page.text).toMatch(/<form method="get" action="\/admin\/explain">/);
    expect(page.text).toContain('<label for="x-ip">Client IP address</label>');
    expect(page.text).toContain('<label for="x-mac">MAC address (optional)</label>');
    expect(page.text).toMatch(/id="x-ip"\s+name="ip"/);
  });

  it('explains the address asked: the verdict first, then each step, with what to do where it fails', async () => {
    const { b, asked } = await signedIn();
    const page = await b.get('/admin/explain?ip=10.0.0.5&mac=3A-48-7A-63-96-26');
    expect(page.status).toBe(200);
    expect(asked).toEqual([{ ip: '10.0.0.5', mac: '3a:48:7a:63:96:26' }]);
    const text = textOf(page.text);
    expect(text).toContain('Not identified. 10.0.0.5 is not identified: No session on 10.0.0.5.');
    expect(text).toContain(
      'Fails Session on the address No session on 10.0.0.5. To do: log the user in through the login API',
    );
    expect(text).toContain('N/A Device Registration of its MAC');
    expect(page.text).toContain('role="status"');
    // The form keeps what was typed.
    expect(page.text).toMatch(/id="x-mac"\s+name="mac"\s+value="3A-48-7A-63-96-26"/);
  });

  it('a bad address or MAC: 400, the problem at its field, nothing looked up', async () => {
    const { b, asked } = await signedIn();
    const page = await b.get('/admin/explain?ip=10.0.0.300&mac=');
    expect(page.status).toBe(400);
    expect(asked).toEqual([]);
    expect(page.text).toContain('<a href="#x-ip">Client IP address</a>');
    expect(textOf(page.text)).toContain('"10.0.0.300" is not an IP address (allowed: IPv4 like 10.0.0.5');
    expect(page.text).toMatch(/id="x-ip"\s+name="ip"\s+value="10\.0\.0\.300"[^>]*aria-invalid="true"/);
    const mac = await b.get('/admin/explain?ip=10.0.0.5&mac=nope');
    expect(mac.status).toBe(400);
    expect(textOf(mac.text)).toContain('"nope" is not a MAC address');
  });

  it('escapes what it shows: a user name with markup stays text', async () => {
    const { b } = await signedIn((input) =>
      Promise.resolve(
        explain({
          ...nobody(input),
          session: {
            id: 1,
            key: { kind: 'ip', value: input.ip },
            username: '<script>x</script>',
            source: 'api',
            createdAt: NOW - 1000,
            lastSeen: NOW - 1000,
            expiresAt: undefined,
            idleTimeoutMs: undefined,
          },
        }),
      ),
    );
    const page = await b.get('/admin/explain?ip=10.0.0.5');
    expect(page.text).not.toContain('<script>x');
    expect(page.text).toContain('&lt;script&gt;x&lt;/script&gt;');
  });

  it('unknown or repeated fields: 400; no explainer in this web app: 409 naming the command', async () => {
    const { b } = await signedIn();
    expect((await b.get('/admin/explain?ip=10.0.0.5&ip=10.0.0.6')).status).toBe(400);
    const unknown = await b.get('/admin/explain?ip=10.0.0.5&user=alice');
    expect(unknown.status).toBe(400);
    expect(textOf(unknown.text)).toContain('unknown field "user"');
    await portal?.close();
    portal = await startAdminPortal({}, {});
    const b2 = portal.browser();
    await b2.signIn();
    const none = await b2.get('/admin/explain?ip=10.0.0.5');
    expect(none.status).toBe(409);
    expect(textOf(none.text)).toContain('run `doorman explain` on the proxy');
  });

  it('a gathering that fails: 502, the log says why, the page does not', async () => {
    const { b } = await signedIn(() => Promise.reject(new Error('secret detail')));
    const page = await b.get('/admin/explain?ip=10.0.0.5');
    expect(page.status).toBe(502);
    expect(page.text).not.toContain('secret detail');
    expect(portal?.logs.some((l) => l.includes('explain 10.0.0.5 failed: secret detail'))).toBe(true);
  });
});
