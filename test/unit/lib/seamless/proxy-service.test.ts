import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../lib/errors.ts';
import {
  describeProxyService,
  describeTicketTarget,
  isProxyPrincipalName,
  isProxyTicket,
  proxyService,
} from '../../../../lib/seamless/proxy-service.ts';

const SERVICE = proxyService('EXAMPLE.TEST', ['proxy.example.test', 'PROXY']);
const target = (components: string[], realm = 'EXAMPLE.TEST') => ({ realm, nameType: 3, components });

describe('isProxyTicket: HTTP/<one of the proxy names>@<the joined realm>, ASCII case aside', () => {
  it.each([
    [['HTTP', 'proxy.example.test'], 'EXAMPLE.TEST'],
    [['HTTP', 'PROXY'], 'EXAMPLE.TEST'],
    [['HTTP', 'proxy'], 'example.test'],
    [['http', 'Proxy.Example.Test'], 'Example.Test'],
  ])('takes %j in %s', (components, realm) => {
    expect(isProxyTicket(target(components, realm), SERVICE)).toBe(true);
  });

  it.each([
    ['host/ of the proxy', ['host', 'proxy.example.test'], 'EXAMPLE.TEST'],
    ['cifs/ of the proxy', ['cifs', 'PROXY'], 'EXAMPLE.TEST'],
    ['HTTP/ of another host', ['HTTP', 'other.example.test'], 'EXAMPLE.TEST'],
    ['HTTP/ of the proxy in another realm', ['HTTP', 'proxy.example.test'], 'OTHER.TEST'],
    ['the machine account itself', ['PROXY$'], 'EXAMPLE.TEST'],
    ['HTTP/ and the host in one component', ['HTTP/proxy.example.test'], 'EXAMPLE.TEST'],
    ['a third component', ['HTTP', 'proxy.example.test', 'x'], 'EXAMPLE.TEST'],
  ])('refuses %s', (_, components, realm) => {
    expect(isProxyTicket(target(components, realm), SERVICE)).toBe(false);
  });

  it('compares with ASCII folding only: U+212A is not k', () => {
    const kelvin = proxyService('EXAMPLE.TEST', ['kproxy']);
    expect(isProxyTicket(target(['HTTP', '\u212aproxy']), kelvin)).toBe(false);
    expect(isProxyTicket(target(['HTTP', 'KPROXY']), kelvin)).toBe(true);
  });
});

describe('isProxyPrincipalName: the keytab entry GSSAPI used', () => {
  it('takes the proxy HTTP/ names and refuses any other', () => {
    expect(isProxyPrincipalName('HTTP/proxy.example.test@EXAMPLE.TEST', SERVICE)).toBe(true);
    expect(isProxyPrincipalName('http/PROXY@example.test', SERVICE)).toBe(true);
    expect(isProxyPrincipalName('host/proxy.example.test@EXAMPLE.TEST', SERVICE)).toBe(false);
    expect(isProxyPrincipalName('HTTP/other.example.test@EXAMPLE.TEST', SERVICE)).toBe(false);
    expect(isProxyPrincipalName('HTTP/proxy.example.test@OTHER.TEST', SERVICE)).toBe(false);
    expect(isProxyPrincipalName('HTTP/proxy.example.test', SERVICE)).toBe(false);
  });
});

describe('proxyService', () => {
  it('needs a realm and at least one host name', () => {
    expect(() => proxyService('', ['proxy'])).toThrow(
      new InvalidInputError('realm', 'is empty: the joined realm is needed'),
    );
    expect(() => proxyService('EXAMPLE.TEST', [])).toThrow(
      new InvalidInputError('hosts', '"" must be one or more host names'),
    );
    expect(() => proxyService('EXAMPLE.TEST', ['proxy', ''])).toThrow(InvalidInputError);
  });

  it('describes itself and a ticket target for messages, quoted and bounded', () => {
    expect(describeProxyService(SERVICE)).toBe('HTTP/proxy.example.test, HTTP/PROXY in EXAMPLE.TEST');
    expect(describeTicketTarget(target(['host', 'proxy.example.test']))).toBe(
      '"host/proxy.example.test@EXAMPLE.TEST" (name-type 3)',
    );
    expect(describeTicketTarget(target(['HTTP', 'a\nb']))).toBe('"HTTP/a\\nb@EXAMPLE.TEST" (name-type 3)');
    expect(describeTicketTarget(target(['HTTP', 'x'.repeat(300)]))).toBe(
      `"HTTP/${'x'.repeat(155)}…" (name-type 3)`,
    );
  });
});
