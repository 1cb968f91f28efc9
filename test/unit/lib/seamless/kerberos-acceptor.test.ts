import { describe, expect, it } from 'vitest';
import { mitKerberos, rawKrb5, spnego, windowsKerberos, type ApReqOptions } from './krb5-tokens.ts';
import { KerberosRejectError } from '../../../../lib/seamless/acceptors.ts';
import {
  createKerberosAcceptor,
  kerberosRejectCodeOf,
  type GssServer,
  type KerberosAcceptorOptions,
} from '../../../../lib/seamless/kerberos-acceptor.ts';
import { proxyService } from '../../../../lib/seamless/proxy-service.ts';
import { Oids } from '../../../../lib/seamless/spnego.ts';

/** A fake GSS server: what `kerberos.initializeServer('')` returns, stepping to a fixed outcome. */
function gss(outcome: Partial<GssServer> | Error) {
  const services: string[] = [];
  const tokens: string[] = [];
  const initializeServer = (service: string) => {
    services.push(service);
    const server: GssServer = {
      username: '',
      response: '',
      targetName: '',
      contextComplete: false,
      step(token) {
        tokens.push(token);
        if (outcome instanceof Error) return Promise.reject(outcome);
        Object.assign(server, outcome);
        return Promise.resolve(server.response);
      },
    };
    return Promise.resolve(server);
  };
  return { initializeServer, services, tokens };
}

const ENV = { KRB5_KTNAME: 'FILE:/k', KRB5RCACHEDIR: '/r' };
const SERVICE = proxyService('EXAMPLE.TEST', ['proxy.example.test', 'PROXY']);
/** An MIT client's SPNEGO token for a ticket to `options.sname` (HTTP/proxy.example.test by default). */
const token = (options: ApReqOptions = {}) => mitKerberos(options).toString('base64');
const TOKEN = token();
const acceptorWith = (initializeServer: NonNullable<KerberosAcceptorOptions['initializeServer']>) =>
  createKerberosAcceptor({ log: () => {}, initializeServer, env: ENV, service: SERVICE });
const GOOD = {
  username: 'alice@EXAMPLE.TEST',
  response: 'b28wbaADAgEFoQMCAQ8=',
  targetName: 'HTTP/proxy.example.test@EXAMPLE.TEST',
  contextComplete: true,
};

async function rejection(promise: Promise<unknown>): Promise<KerberosRejectError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof KerberosRejectError))
    throw new Error(`expected a KerberosRejectError, got ${String(error)}`);
  return error;
}

describe('createKerberosAcceptor', () => {
  it('accepts with GSS_C_NO_CREDENTIAL (empty service) and returns the principal and the AP-REP', async () => {
    const fake = gss(GOOD);
    const acceptor = acceptorWith(fake.initializeServer);
    expect(await acceptor.accept(TOKEN)).toEqual({ user: 'alice@EXAMPLE.TEST', response: GOOD.response });
    expect(fake.services).toEqual(['']);
    expect(fake.tokens).toEqual([TOKEN]);
  });

  it('gives no response when GSSAPI has none', async () => {
    const acceptor = acceptorWith(gss({ ...GOOD, response: '' }).initializeServer);
    expect(await acceptor.accept(TOKEN)).toEqual({ user: 'alice@EXAMPLE.TEST' });
  });

  it('reads the ticket of a raw krb5 token and of a Windows SPNEGO token, by either of the proxy names', async () => {
    for (const accepted of [
      rawKrb5().toString('base64'),
      windowsKerberos({ sname: ['HTTP', 'PROXY'] }).toString('base64'),
      token({ sname: ['http', 'Proxy.Example.Test'], realm: 'example.test' }),
    ]) {
      const fake = gss(GOOD);
      expect(await acceptorWith(fake.initializeServer).accept(accepted)).toMatchObject({
        user: 'alice@EXAMPLE.TEST',
      });
      expect(fake.tokens).toEqual([accepted]);
    }
  });

  // The AD case: host/ and cifs/ share the HTTP/ key, GSSAPI decrypts with the HTTP/ entry and says HTTP/.
  it.each([
    [['host', 'proxy.example.test'], 'EXAMPLE.TEST', '"host/proxy.example.test@EXAMPLE.TEST" (name-type 3)'],
    [['cifs', 'PROXY'], 'EXAMPLE.TEST', '"cifs/PROXY@EXAMPLE.TEST" (name-type 3)'],
    [['HTTP', 'other.example.test'], 'EXAMPLE.TEST', '"HTTP/other.example.test@EXAMPLE.TEST" (name-type 3)'],
    [['HTTP', 'proxy.example.test'], 'OTHER.TEST', '"HTTP/proxy.example.test@OTHER.TEST" (name-type 3)'],
    [['PROXY$'], 'EXAMPLE.TEST', '"PROXY$@EXAMPLE.TEST" (name-type 3)'],
  ])(
    'refuses a ticket for %j in %s before GSSAPI sees it, whatever GSSAPI would say',
    async (sname, realm, shown) => {
      const fake = gss(GOOD);
      const error = await rejection(acceptorWith(fake.initializeServer).accept(token({ sname, realm })));
      expect([error.code, error.message]).toEqual([
        'WRONG_PRINCIPAL',
        `the ticket is for ${shown}, not one of the proxy's (HTTP/proxy.example.test, HTTP/PROXY in EXAMPLE.TEST)`,
      ]);
      expect(fake.services).toEqual([]);
    },
  );

  it('refuses a ticket GSSAPI accepted with a key that is not the proxy HTTP/ one (a host key in the keytab)', async () => {
    const fake = gss({ ...GOOD, targetName: 'host/proxy.example.test@EXAMPLE.TEST' });
    const error = await rejection(acceptorWith(fake.initializeServer).accept(TOKEN));
    expect([error.code, error.message]).toEqual([
      'WRONG_PRINCIPAL',
      `GSSAPI accepted the ticket with the key of "host/proxy.example.test@EXAMPLE.TEST", not one of the proxy's (HTTP/proxy.example.test, HTTP/PROXY in EXAMPLE.TEST)`,
    ]);
  });

  it('refuses a token whose ticket cannot be read (MALFORMED, with the reader code) before GSSAPI', async () => {
    const fake = gss(GOOD);
    const acceptor = acceptorWith(fake.initializeServer);
    // The SPNEGO framing is whole; the krb5 token in its mechToken is one byte short.
    const inner = rawKrb5();
    const cut = spnego([Oids.krb5], inner.subarray(0, inner.length - 1)).toString('base64');
    const error = await rejection(acceptor.accept(cut));
    expect([error.code, error.message]).toEqual([
      'MALFORMED',
      'the GSS-API krb5 token is cut short in the Kerberos token (TRUNCATED)',
    ]);
    const notBase64 = await rejection(acceptor.accept('YII*'));
    expect([notBase64.code, notBase64.message]).toEqual([
      'MALFORMED',
      'the Negotiate token is not base64: character 4 is "*" (NOT_BASE64)',
    ]);
    expect(fake.services).toEqual([]);
  });

  it('refuses SPNEGO without an optimistic Kerberos token (a second leg) before GSSAPI', async () => {
    const fake = gss(GOOD);
    const error = await rejection(
      acceptorWith(fake.initializeServer).accept(spnego([Oids.msKrb5, Oids.krb5]).toString('base64')),
    );
    expect(error.code).toBe('CONTINUE_NEEDED');
    expect(fake.services).toEqual([]);
  });

  it('refuses a context GSSAPI did not complete (single leg only)', async () => {
    const acceptor = acceptorWith(gss({ ...GOOD, contextComplete: false }).initializeServer);
    expect((await rejection(acceptor.accept(TOKEN))).code).toBe('CONTINUE_NEEDED');
  });

  it('maps a GSS failure to its code and drops the "Unspecified GSS failure" preamble', async () => {
    const fake = gss(
      new Error('Unspecified GSS failure.  Minor code may provide more information: Request is a replay'),
    );
    const acceptor = acceptorWith(fake.initializeServer);
    const error = await rejection(acceptor.accept(TOKEN));
    expect([error.code, error.message]).toEqual(['REPLAY', 'Request is a replay']);
  });

  it('says once at start when the keytab or the replay cache directory is left to the defaults', () => {
    const logs: string[] = [];
    createKerberosAcceptor({
      log: (l) => logs.push(l),
      initializeServer: gss(GOOD).initializeServer,
      env: {},
      service: SERVICE,
    });
    expect(logs).toEqual([
      'KRB5_KTNAME is not set: the Kerberos acceptor reads /etc/krb5.keytab (only HTTP/ tickets are accepted)',
      'KRB5RCACHEDIR is not set: the replay cache is /var/tmp/krb5_<uid>.rcache2',
    ]);
  });
});

describe('kerberosRejectCodeOf: the messages MIT krb5 1.20 gives (lab REPORT.md §6.2, libkrb5)', () => {
  it.each([
    ['Unspecified GSS failure.  Minor code may provide more information: Clock skew too great', 'CLOCK_SKEW'],
    ['Unspecified GSS failure.  Minor code may provide more information: Request is a replay', 'REPLAY'],
    ['The referenced credential has expired: Ticket expired', 'EXPIRED'],
    [
      'Unspecified GSS failure.  Minor code may provide more information: Request ticket server ldap/dc1.example.test@EXAMPLE.TEST not found in keytab (ticket kvno 1)',
      'WRONG_PRINCIPAL',
    ],
    [
      'Unspecified GSS failure.  Minor code may provide more information: Wrong principal in request',
      'WRONG_PRINCIPAL',
    ],
    [
      'Request ticket server HTTP/proxy.example.test@EXAMPLE.TEST kvno 2 not found in keytab; keytab is likely out of date',
      'KEYTAB',
    ],
    [
      "No credentials were supplied, or the credentials were unavailable or inaccessible: Key table file '/etc/krb5.keytab' not found",
      'KEYTAB',
    ],
    [
      'Unspecified GSS failure.  Minor code may provide more information: Decrypt integrity check failed',
      'KEYTAB',
    ],
    ['A required input parameter could not be read: Unknown error', 'MALFORMED'],
    ['An unsupported mechanism was requested: Unknown error', 'MALFORMED'],
    [
      'Unspecified GSS failure.  Minor code may provide more information: Token header is malformed or corrupt',
      'MALFORMED',
    ],
    ['An invalid name was supplied: Unknown error', 'CONTINUE_NEEDED'],
    ['Something new', 'FAILED'],
  ] as const)('%s → %s', (message, code) => {
    expect(kerberosRejectCodeOf(message)).toBe(code);
  });
});
