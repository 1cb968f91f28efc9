import { describe, expect, it } from 'vitest';
import { KerberosRejectError } from '../../../../lib/seamless/handshake.ts';
import {
  createKerberosAcceptor,
  kerberosRejectCodeOf,
  type GssServer,
} from '../../../../lib/seamless/kerberos-acceptor.ts';

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
    const acceptor = createKerberosAcceptor({
      log: () => {},
      initializeServer: fake.initializeServer,
      env: ENV,
    });
    expect(await acceptor.accept('YIIB')).toEqual({ user: 'alice@EXAMPLE.TEST', response: GOOD.response });
    expect(fake.services).toEqual(['']);
    expect(fake.tokens).toEqual(['YIIB']);
  });

  it('gives no response when GSSAPI has none', async () => {
    const acceptor = createKerberosAcceptor({
      log: () => {},
      initializeServer: gss({ ...GOOD, response: '' }).initializeServer,
      env: ENV,
    });
    expect(await acceptor.accept('YIIB')).toEqual({ user: 'alice@EXAMPLE.TEST' });
  });

  it('refuses a ticket for a service that is not HTTP/ (a host key in the keytab)', async () => {
    const fake = gss({ ...GOOD, targetName: 'host/proxy.example.test@EXAMPLE.TEST' });
    const acceptor = createKerberosAcceptor({
      log: () => {},
      initializeServer: fake.initializeServer,
      env: ENV,
    });
    const error = await rejection(acceptor.accept('YIIB'));
    expect([error.code, error.message]).toEqual([
      'WRONG_PRINCIPAL',
      'the ticket is for "host/proxy.example.test@EXAMPLE.TEST", not an HTTP/ service principal',
    ]);
  });

  it('refuses a context GSSAPI did not complete (single leg only)', async () => {
    const acceptor = createKerberosAcceptor({
      log: () => {},
      initializeServer: gss({ ...GOOD, contextComplete: false }).initializeServer,
      env: ENV,
    });
    expect((await rejection(acceptor.accept('YIIB'))).code).toBe('CONTINUE_NEEDED');
  });

  it('maps a GSS failure to its code and drops the "Unspecified GSS failure" preamble', async () => {
    const fake = gss(
      new Error('Unspecified GSS failure.  Minor code may provide more information: Request is a replay'),
    );
    const acceptor = createKerberosAcceptor({
      log: () => {},
      initializeServer: fake.initializeServer,
      env: ENV,
    });
    const error = await rejection(acceptor.accept('YIIB'));
    expect([error.code, error.message]).toEqual(['REPLAY', 'Request is a replay']);
  });

  it('says once at start when the keytab or the replay cache directory is left to the defaults', () => {
    const logs: string[] = [];
    createKerberosAcceptor({
      log: (l) => logs.push(l),
      initializeServer: gss(GOOD).initializeServer,
      env: {},
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
