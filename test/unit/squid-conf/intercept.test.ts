import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../lib/config/load.ts';
import { portalOptions, tlsFiles } from '../../../squid-conf/intercept.ts';
import { squidTls } from '../../../squid-conf/squid-build.ts';

describe('squid.intercept in the config', () => {
  it('defaults: no interception; HTTPS mode bump with Doorman’s own CA beside stateDir (root’s) and cert DB in it', () => {
    const config = parseConfig({ stateDir: '/srv/doorman' }, 't');
    expect(config.squid.intercept).toEqual({
      httpPort: null,
      httpsPort: null,
      tls: { mode: 'bump', caFile: null, certDb: null, certgen: '/usr/lib/squid/security_file_certgen' },
    });
    expect(tlsFiles(config)).toEqual({
      caFile: '/srv/doorman-tls/ssl-bump-ca.pem',
      ownCaCert: '/srv/doorman-tls/ssl-bump-ca.crt',
      certDb: '/srv/doorman/ssl-bump-db',
      certgen: '/usr/lib/squid/security_file_certgen',
    });
    expect(portalOptions(config)).toBeUndefined();
  });

  it('an administrator’s CA and cert DB are used as given; there is then no certificate of Doorman’s to hand out', () => {
    const config = parseConfig(
      { squid: { intercept: { tls: { caFile: '/etc/squid/ca.pem', certDb: '/var/spool/squid/ssl_db' } } } },
      't',
    );
    expect(tlsFiles(config)).toMatchObject({
      caFile: '/etc/squid/ca.pem',
      ownCaCert: undefined,
      certDb: '/var/spool/squid/ssl_db',
    });
  });

  it('portal options: HTTP only, or HTTP and HTTPS with the mode and files', () => {
    const http = parseConfig({ squid: { intercept: { httpPort: 3129 } }, icap: { port: 11344 } }, 't');
    expect(portalOptions(http)).toEqual({ interceptPort: 3129, icap: { host: '127.0.0.1', port: 11344 } });
    const https = parseConfig(
      { stateDir: '/s', squid: { intercept: { httpPort: 3129, httpsPort: 3130, tls: { mode: 'refuse' } } } },
      't',
    );
    expect(portalOptions(https)?.https).toEqual({
      port: 3130,
      mode: 'refuse',
      caFile: '/s-tls/ssl-bump-ca.pem',
      certDb: '/s/ssl-bump-db',
      certgen: '/usr/lib/squid/security_file_certgen',
    });
  });

  it('refuses what cannot work, naming the field and the value', () => {
    const bad = (intercept: unknown) => () => parseConfig({ squid: { intercept } }, 'f.json');
    expect(bad({ httpsPort: 3130 })).toThrow(
      'squid.intercept.httpsPort: 3130 needs squid.intercept.httpPort set too (the captive portal), or null',
    );
    expect(bad({ httpPort: 3129, httpsPort: 3129 })).toThrow(
      'squid.intercept.httpsPort: 3129 is squid.intercept.httpPort already: choose another port',
    );
    expect(bad({ httpPort: 3129, httpsPort: 0 })).toThrow(
      'squid.intercept.httpsPort: Too small: expected number to be >=1',
    );
    expect(bad({ tls: { mode: 'splice' } })).toThrow(
      'squid.intercept.tls.mode: Invalid option: expected one of "bump"|"refuse"',
    );
    for (const path of ['ca.pem', '/etc/my ca.pem', '/etc/ca#1.pem', '/etc/"ca".pem'])
      expect(bad({ tls: { caFile: path } })).toThrow(
        'squid.intercept.tls.caFile: must be an absolute path without spaces, quotes, backslashes or "#" (squid.conf cannot hold them)',
      );
    expect(bad({ tls: { certDb: 'db' } })).toThrow(/squid\.intercept\.tls\.certDb: must be an absolute path/);
    expect(bad({ tls: { ca: '/x' } })).toThrow('squid.intercept.tls: Unrecognized key: "ca"');
  });
});

describe('squidTls: which TLS library a Squid was built with, from squid -v', () => {
  const v = (options: string) =>
    `Squid Cache: Version 5.7\nService Name: squid\n\nconfigure options:  '--prefix=/usr' ${options} '--enable-eui'\n`;
  it('tells the OpenSSL build, the GnuTLS one and anything else apart', () => {
    expect(squidTls(v("'--with-openssl' '--enable-ssl-crtd'"))).toBe('openssl');
    expect(squidTls(v("'--with-openssl=/opt/ssl'"))).toBe('openssl');
    expect(squidTls(v("'--with-gnutls'"))).toBe('gnutls');
    expect(squidTls(v("'--without-openssl' '--with-gnutls'"))).toBe('gnutls');
    expect(squidTls(v("'--without-gnutls'"))).toBe('unknown');
    expect(squidTls('')).toBe('unknown');
  });
});
