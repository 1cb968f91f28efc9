import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../lib/config/load.ts';
import { generateInclude, type Runtime } from '../../../squid-conf/generate.ts';
import type { HttpsInterceptOptions } from '../../../squid-conf/portal-conf.ts';
import { generateStandalone } from '../../../squid-conf/standalone.ts';

const runtime: Runtime = {
  root: '/opt/doorman',
  proxyKey: 'k'.repeat(43),
  hostAddresses: ['127.0.0.1', '192.0.2.10', '::1', '2001:db8::10', 'fe80::1'],
};
const directives = (text: string) => text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));

describe('generateInclude', () => {
  it("runs the session helper as the shim on authd's socket, with concurrency and the TTLs", () => {
    const text = generateInclude(
      parseConfig(
        {
          squid: { ttl: 7, negativeTtl: 2, concurrency: 50, childrenMax: 3 },
          lastSeenFlushSeconds: 20,
          stateDir: '/srv/doorman',
        },
        't',
      ),
      runtime,
    );
    const helper = directives(text).find((l) => l.startsWith('external_acl_type '));
    expect(helper).toBe(
      'external_acl_type doorman_session ttl=7 negative_ttl=2 concurrency=50 children-max=3 children-startup=1 ' +
        'children-idle=1 %SRC %>eui /opt/doorman/dist/bin/doorman-shim --concurrent /srv/doorman/run/session.sock',
    );
  });

  it('refuses unsafe ports and tunnels but to TLS ports and to this host, then lets everyone reach Doorman, then identified clients', () => {
    const lines = directives(generateInclude(parseConfig({}, 't'), runtime));
    expect(lines).toEqual(
      expect.arrayContaining([
        'acl doorman_identified external doorman_session',
        'acl doorman_site_port port 8180',
        'acl doorman_site_url url_regex -i ^(http://127\\.0\\.0\\.1:8180/|127\\.0\\.0\\.1:8180$)',
        'acl doorman_site all-of doorman_site_port doorman_site_url',
        'acl doorman_connect method CONNECT',
        'acl doorman_tls_ports port 443',
        'acl doorman_safe_ports port 80 21 443 70 210 1025-65535 280 488 591 777',
        'acl doorman_proxy_host dst 127.0.0.0/8 0.0.0.0 ::1 :: 192.0.2.10 2001:db8::10 fe80::1',
      ]),
    );
    expect(lines.filter((l) => l.startsWith('http_access'))).toEqual([
      'http_access deny !doorman_safe_ports',
      'http_access deny doorman_connect !doorman_tls_ports',
      'http_access deny doorman_connect doorman_proxy_host',
      'http_access deny doorman_connect doorman_site',
      'http_access allow doorman_site',
      'http_access allow doorman_identified',
    ]);
  });

  it('sends the client address with the proxy key to Doorman’s site only, and leaves forwarded_for alone', () => {
    const lines = directives(generateInclude(parseConfig({}, 't'), runtime));
    expect(lines).toContain('request_header_access X-Doorman-Client deny all');
    expect(lines).toContain(
      `request_header_add X-Doorman-Client "${'k'.repeat(43)} %>a" doorman_site doorman_to_proxy`,
    );
    // not to a request intercepted on its way elsewhere (Host: doorman), not through a cache_peer
    expect(lines).toContain('acl doorman_to_proxy localip 127.0.0.0/8 ::1 192.0.2.10 2001:db8::10 fe80::1');
    expect(lines).toContain('always_direct allow doorman_site');
    expect(lines.some((l) => l.startsWith('forwarded_for'))).toBe(false);
    expect(() => generateInclude(parseConfig({}, 't'), { ...runtime, proxyKey: 'x" all' })).toThrow(
      /proxy key/,
    );
  });

  it('matches Doorman’s own URLs by regex (host name, https with CONNECT, bracketed IPv6), no DNS', () => {
    const siteAcls = (baseUrl: string) =>
      directives(generateInclude(parseConfig({ baseUrl }, 't'), runtime)).filter((l) =>
        l.startsWith('acl doorman_site'),
      );
    expect(siteAcls('https://doorman.example.lan/x/')).toEqual([
      'acl doorman_site_port port 443',
      String.raw`acl doorman_site_url url_regex -i ^(https://doorman\.example\.lan/|doorman\.example\.lan:443$)`,
      'acl doorman_site all-of doorman_site_port doorman_site_url',
    ]);
    expect(siteAcls('http://[::1]:81/')).toEqual([
      'acl doorman_site_port port 81',
      String.raw`acl doorman_site_url url_regex -i ^(http://\[::1\]:81/|\[::1\]:81$)`,
      'acl doorman_site all-of doorman_site_port doorman_site_url',
    ]);
    expect(siteAcls('http://doorman.lan/')).toEqual([
      'acl doorman_site_port port 80',
      String.raw`acl doorman_site_url url_regex -i ^(http://doorman\.lan/|doorman\.lan:80$)`,
      'acl doorman_site all-of doorman_site_port doorman_site_url',
    ]);
  });

  it('checks the port before the pattern, so the regex runs only for requests to Doorman’s port', () => {
    // Squid evaluates all-of's ACLs in order and stops at the first mismatch; the port is implied by every URL
    // the pattern matches (Squid writes a scheme's own port nowhere, and :port otherwise), so the answer is the
    // pattern's alone, at the cost of a port comparison for every other request.
    const lines = directives(generateInclude(parseConfig({}, 't'), runtime));
    const site = lines.find((l) => l.startsWith('acl doorman_site '));
    expect(site?.split(' ').slice(2)).toEqual(['all-of', 'doorman_site_port', 'doorman_site_url']);
    expect(lines.indexOf('acl doorman_site_port port 8180')).toBeLessThan(lines.indexOf(site ?? ''));
  });

  it('defines the doorman log format with the user, and an access_log only when asked', () => {
    const plain = generateInclude(parseConfig({}, 't'), runtime);
    // URL-escaped, "%" included: a b and a%20b are two names (a%20b and a%2520b), not one
    expect(plain).toMatch(/^logformat doorman .* %#\{user\}note /m);
    expect(plain).not.toMatch(/^access_log/m);
    expect(
      generateInclude(parseConfig({}, 't'), runtime, { accessLog: '/var/log/squid/doorman.log' }),
    ).toMatch(/^access_log stdio:\/var\/log\/squid\/doorman\.log doorman$/m);
  });

  it('refuses paths squid.conf cannot hold', () => {
    expect(() => generateInclude(parseConfig({}, 't'), { ...runtime, root: '/opt/my doorman' })).toThrow(
      /shim path "\/opt\/my doorman\/dist\/bin\/doorman-shim" cannot be written in squid.conf/,
    );
    expect(() => generateInclude(parseConfig({ stateDir: '/var/lib/my doorman' }, 't'), runtime)).toThrow(
      /socket path "\/var\/lib\/my doorman\/run\/session.sock" cannot be written in squid.conf/,
    );
  });
});

describe('generateInclude with a directory', () => {
  it('adds Basic authentication and the group helper, allowing any authenticated user by default', () => {
    const plain = directives(generateInclude(parseConfig({}, 't'), runtime));
    expect(plain.some((l) => l.startsWith('auth_param'))).toBe(false);
    const lines = directives(generateInclude(parseConfig({}, 't'), runtime, { directory: true }));
    expect(lines).toEqual(
      expect.arrayContaining([
        'auth_param basic program /opt/doorman/dist/bin/doorman-shim --concurrent /var/lib/doorman/run/basic.sock',
        'auth_param basic children 5 startup=1 idle=1 concurrency=50',
        'auth_param basic realm Doorman',
        'auth_param basic credentialsttl 300 seconds',
        'auth_param basic key_extras "%>a"',
        'external_acl_type doorman_group ttl=60 negative_ttl=60 concurrency=50 children-max=2 children-startup=1 ' +
          '%un /opt/doorman/dist/bin/doorman-shim --concurrent /var/lib/doorman/run/group.sock',
        'acl doorman_authenticated proxy_auth REQUIRED',
        'http_access allow doorman_authenticated',
      ]),
    );
    expect(lines).not.toContain('http_access deny doorman_identified');
    // sessions first: a client identified by address is never asked for a password
    expect(lines.indexOf('http_access allow doorman_identified')).toBeLessThan(
      lines.indexOf('http_access allow doorman_authenticated'),
    );
  });

  it('requires one of squid.groups.allow, quoted so names may hold spaces', () => {
    const config = parseConfig({ squid: { groups: { allow: ['Staff Users', 'Ünïcødé Group'] } } }, 't');
    const lines = directives(generateInclude(config, runtime, { directory: true }));
    const at = lines.indexOf(
      'acl doorman_allowed_group external doorman_group "Staff Users" "Ünïcødé Group"',
    );
    expect(lines[at - 1]).toBe('configuration_includes_quoted_values on');
    expect(lines[at + 1]).toBe('configuration_includes_quoted_values off');
    expect(lines).toContain('http_access allow doorman_authenticated doorman_allowed_group');
    expect(lines).not.toContain('http_access allow doorman_authenticated');
  });

  it('applies squid.groups.allow to every identified user, however identified, without a password prompt', () => {
    const config = parseConfig({ squid: { groups: { allow: ['Staff'] } } }, 't');
    const rules = directives(generateInclude(config, runtime, { directory: true })).filter((l) =>
      l.startsWith('http_access'),
    );
    expect(rules.slice(4)).toEqual([
      'http_access allow doorman_site',
      'http_access allow doorman_identified doorman_allowed_group',
      // an identified client outside the groups is refused here, not sent on to a 407 for a password
      'http_access deny doorman_identified',
      'http_access allow doorman_authenticated doorman_allowed_group',
    ]);
  });

  it('refuses squid.groups.allow without an applied directory (nobody could be checked)', () => {
    const config = parseConfig({ squid: { groups: { allow: ['Staff'] } } }, 't');
    expect(() => generateInclude(config, runtime)).toThrow(
      /squid\.groups\.allow names groups \(Staff\) but no directory is applied/,
    );
  });
});

describe('generateInclude with seamless authentication', () => {
  const shim = '/opt/doorman/dist/bin/doorman-shim';
  const auth = (lines: string[]) => lines.filter((l) => l.startsWith('auth_param'));

  it('offers Negotiate, then NTLM, then Basic, through the shim without concurrency', () => {
    const config = parseConfig({ squid: { seamless: { negotiateChildren: 30, ntlmChildren: 10 } } }, 't');
    const lines = directives(generateInclude(config, runtime, { directory: true, seamless: true }));
    expect(auth(lines)).toEqual([
      `auth_param negotiate program ${shim} /var/lib/doorman/run/negotiate.sock`,
      'auth_param negotiate children 30 startup=1 idle=1',
      'auth_param negotiate keep_alive on',
      'auth_param negotiate key_extras "%>a"',
      `auth_param ntlm program ${shim} /var/lib/doorman/run/ntlm.sock`,
      'auth_param ntlm children 10 startup=1 idle=1',
      'auth_param ntlm keep_alive on',
      'auth_param ntlm key_extras "%>a"',
      `auth_param basic program ${shim} --concurrent /var/lib/doorman/run/basic.sock`,
      'auth_param basic children 5 startup=1 idle=1 concurrency=50',
      'auth_param basic realm Doorman',
      'auth_param basic credentialsttl 300 seconds',
      'auth_param basic key_extras "%>a"',
    ]);
    expect(lines.filter((l) => l === 'acl doorman_authenticated proxy_auth REQUIRED')).toHaveLength(1);
    // a client identified by address is never challenged; the others may be, by every scheme
    expect(lines.filter((l) => l.startsWith('http_access allow doorman_'))).toEqual([
      'http_access allow doorman_site',
      'http_access allow doorman_identified',
      'http_access allow doorman_authenticated',
    ]);
  });

  it('has 20 children of each scheme by default, and no seamless line when it is not enabled', () => {
    const config = parseConfig({}, 't');
    expect(auth(directives(generateInclude(config, runtime, { directory: true, seamless: true })))).toEqual(
      expect.arrayContaining([
        'auth_param negotiate children 20 startup=1 idle=1',
        'auth_param ntlm children 20 startup=1 idle=1',
      ]),
    );
    const plain = auth(directives(generateInclude(config, runtime, { directory: true })));
    expect(plain.some((l) => /negotiate|ntlm/.test(l))).toBe(false);
  });

  it('asks for the seamless schemes alone when no directory is applied (no Basic, no group helper)', () => {
    const lines = directives(generateInclude(parseConfig({}, 't'), runtime, { seamless: true }));
    expect(auth(lines).map((l) => l.split(' ')[1])).toEqual([
      'negotiate',
      'negotiate',
      'negotiate',
      'negotiate',
      'ntlm',
      'ntlm',
      'ntlm',
      'ntlm',
    ]);
    expect(lines).toContain('acl doorman_authenticated proxy_auth REQUIRED');
    expect(lines).toContain('http_access allow doorman_authenticated');
    expect(lines.some((l) => l.includes('doorman_group'))).toBe(false);
  });

  it('refuses seamless children outside 1-256, naming the field', () => {
    expect(() => parseConfig({ squid: { seamless: { ntlmChildren: 0 } } }, 't')).toThrow(
      /squid\.seamless\.ntlmChildren: /,
    );
    expect(() => parseConfig({ squid: { seamless: { negotiateChildren: 257 } } }, 't')).toThrow(
      /squid\.seamless\.negotiateChildren: /,
    );
  });
});

describe('generateInclude without access rules (--acls-only)', () => {
  it('defines every helper and ACL but writes no http_access line', () => {
    const config = parseConfig({ squid: { groups: { allow: ['Staff Users'] } } }, 't');
    const lines = directives(generateInclude(config, runtime, { directory: true, access: false }));
    expect(lines.filter((l) => l.startsWith('http_access'))).toEqual([]);
    // not an access rule: the client address for Doorman is sent whichever rules the admin writes
    expect(lines.some((l) => l.startsWith('request_header_add X-Doorman-Client '))).toBe(true);
    for (const acl of [
      'doorman_identified',
      'doorman_site',
      'doorman_authenticated',
      'doorman_allowed_group',
      'doorman_connect',
      'doorman_tls_ports',
      'doorman_safe_ports',
      'doorman_proxy_host',
    ]) {
      expect(
        lines.some((l) => l.startsWith(`acl ${acl} `)),
        acl,
      ).toBe(true);
    }
  });
});

describe('generateInclude with the captive portal', () => {
  const portal = { interceptPort: 3129, icap: { host: '127.0.0.1', port: 1344 } };
  const portalLines = [
    'http_port 3129 intercept name=doorman_intercept',
    'host_verify_strict on',
    'acl doorman_intercepted myportname doorman_intercept',
    'icap_enable on',
    'icap_send_client_ip on',
    'icap_send_client_username on',
    'icap_client_username_header X-Client-Username',
    'icap_service doorman_portal reqmod_precache bypass=0 icap://127.0.0.1:1344/reqmod',
    // Squid's proof to the ICAP service (it signs a URL only then), sent to Doorman's service only
    'acl doorman_to_portal adaptation_service doorman_portal',
    `adaptation_meta X-Doorman-Key "${runtime.proxyKey}" doorman_to_portal`,
    // the made-up CONNECT of an intercepted TLS connection: a 302 for it would break the client's handshake
    'adaptation_access doorman_portal deny doorman_connect',
    'adaptation_access doorman_portal allow doorman_intercepted !doorman_identified',
    'adaptation_access doorman_portal deny all',
  ];

  it('adds the intercept port and the ICAP service for unidentified intercepted clients, in this order', () => {
    const lines = directives(generateInclude(parseConfig({}, 't'), runtime, { portal }));
    const at = lines.indexOf(portalLines[0] ?? '');
    expect(lines.slice(at, at + portalLines.length)).toEqual(portalLines);
    // the acls it uses are defined before it (Squid refuses an acl used before its definition)
    expect(lines.indexOf('acl doorman_identified external doorman_session')).toBeLessThan(at);
    expect(lines.indexOf('acl doorman_connect method CONNECT')).toBeLessThan(at);
    // no HTTPS interception unless asked
    expect(lines.filter((l) => /^(?:https_port|ssl_bump|sslcrtd)/.test(l))).toEqual([]);
  });

  it('lets unidentified intercepted clients through http_access (to reach ICAP) after the protections and identified rules', () => {
    const rules = (options: Parameters<typeof generateInclude>[2], config = parseConfig({}, 't')) =>
      directives(generateInclude(config, runtime, options)).filter((l) => l.startsWith('http_access'));
    expect(rules({ portal })).toEqual([
      'http_access deny !doorman_safe_ports',
      'http_access deny doorman_connect !doorman_tls_ports',
      'http_access deny doorman_connect doorman_proxy_host',
      'http_access deny doorman_connect doorman_site',
      'http_access allow doorman_site',
      'http_access allow doorman_identified',
      'http_access allow doorman_intercepted',
    ]);
    // with groups: an identified client outside them is still refused; no proxy password asked of an
    // intercepted client (Squid cannot)
    const grouped = parseConfig({ squid: { groups: { allow: ['Staff'] } } }, 't');
    expect(rules({ portal, directory: true }, grouped).slice(5)).toEqual([
      'http_access allow doorman_identified doorman_allowed_group',
      'http_access deny doorman_identified',
      'http_access allow doorman_intercepted',
      'http_access allow doorman_authenticated doorman_allowed_group',
    ]);
    expect(rules({ portal, access: false })).toEqual([]);
  });

  it('leaves the default include unchanged: no intercept, ICAP, adaptation or host_verify_strict line without the option', () => {
    const config = parseConfig({}, 't');
    const plain = generateInclude(config, runtime);
    expect(
      directives(plain).filter((l) =>
        /^(?:http_port|icap_|adaptation_|host_verify_strict)|doorman_intercept/.test(l),
      ),
    ).toEqual([]);
    const withPortal = directives(generateInclude(config, runtime, { portal }));
    expect(
      withPortal.filter((l) => !portalLines.includes(l) && l !== 'http_access allow doorman_intercepted'),
    ).toEqual(directives(plain));
  });

  it('brackets an IPv6 ICAP address and refuses ports and hosts squid.conf cannot take', () => {
    const text = generateInclude(parseConfig({}, 't'), runtime, {
      portal: { interceptPort: 8080, icap: { host: '::1', port: 11344 } },
    });
    expect(text).toContain('icap_service doorman_portal reqmod_precache bypass=0 icap://[::1]:11344/reqmod');
    expect(text).toContain('http_port 8080 intercept name=doorman_intercept');
    const bad = (p: typeof portal) => () => generateInclude(parseConfig({}, 't'), runtime, { portal: p });
    expect(bad({ ...portal, interceptPort: 0 })).toThrow(
      'intercept port 0: expected a port number from 1 to 65535',
    );
    expect(bad({ ...portal, icap: { host: '127.0.0.1', port: 65536 } })).toThrow(
      'ICAP port 65536: expected a port number from 1 to 65535',
    );
    expect(bad({ ...portal, icap: { host: 'icap host', port: 1344 } })).toThrow(
      'ICAP host "icap host": expected an IP address or a host name',
    );
  });
});

describe('generateInclude with HTTPS interception (ssl-bump)', () => {
  const https: HttpsInterceptOptions = {
    port: 3130,
    mode: 'bump',
    caFile: '/var/lib/doorman/ssl-bump-ca.pem',
    certDb: '/var/lib/doorman/ssl-bump-db',
    certgen: '/usr/lib/squid/security_file_certgen',
  };
  const portal = { interceptPort: 3129, icap: { host: '127.0.0.1', port: 1344 }, https };
  const lines = (p: typeof portal) =>
    directives(generateInclude(parseConfig({}, 't'), runtime, { portal: p }));

  it('bump: peeks at step 1, splices identified clients, bumps the rest, on its own port only', () => {
    const all = lines(portal);
    const at = all.findIndex((l) => l.startsWith('https_port '));
    expect(all.slice(at, at + 8)).toEqual([
      'https_port 3130 intercept ssl-bump name=doorman_intercept_tls tls-cert=/var/lib/doorman/ssl-bump-ca.pem ' +
        'generate-host-certificates=on dynamic_cert_mem_cache_size=4MB',
      'sslcrtd_program /usr/lib/squid/security_file_certgen -s /var/lib/doorman/ssl-bump-db -M 4MB',
      'acl doorman_intercepted_tls myportname doorman_intercept_tls',
      'acl doorman_step1 at_step SslBump1',
      // external ACLs see no client at step 1: the splice decision must come after a peek
      'ssl_bump peek doorman_intercepted_tls doorman_step1',
      'ssl_bump splice doorman_intercepted_tls doorman_identified',
      'ssl_bump bump doorman_intercepted_tls',
      // both intercept ports count as intercepted: http_access lets them through, adaptation sends them to ICAP
      'acl doorman_intercepted myportname doorman_intercept doorman_intercept_tls',
    ]);
    expect(all.indexOf('acl doorman_identified external doorman_session')).toBeLessThan(at);
    expect(all.indexOf('adaptation_access doorman_portal deny doorman_connect')).toBeLessThan(
      all.indexOf('adaptation_access doorman_portal allow doorman_intercepted !doorman_identified'),
    );
  });

  it('says in the file that it needs the OpenSSL build, and which CA clients must trust', () => {
    const text = generateInclude(parseConfig({}, 't'), runtime, { portal });
    expect(text).toMatch(/^# HTTPS .*NEEDS SQUID BUILT WITH OPENSSL \(Debian package squid-openssl\)/m);
    expect(text).toMatch(/they must trust this CA's certificate, or they see a certificate warning/);
  });

  it('refuse: terminates unidentified clients after the peek, with no certificate minting at all', () => {
    const all = lines({ ...portal, https: { ...https, mode: 'refuse' } });
    expect(all.filter((l) => /^(?:https_port|sslcrtd|ssl_bump)/.test(l))).toEqual([
      'https_port 3130 intercept ssl-bump name=doorman_intercept_tls tls-cert=/var/lib/doorman/ssl-bump-ca.pem ' +
        'generate-host-certificates=off',
      'ssl_bump peek doorman_intercepted_tls doorman_step1',
      'ssl_bump splice doorman_intercepted_tls doorman_identified',
      'ssl_bump terminate doorman_intercepted_tls',
    ]);
  });

  it('refuses ports and paths squid.conf cannot take', () => {
    expect(() => lines({ ...portal, https: { ...https, port: 70000 } })).toThrow(
      'HTTPS intercept port 70000: expected a port number from 1 to 65535',
    );
    expect(() => lines({ ...portal, https: { ...https, caFile: '/etc/my ca.pem' } })).toThrow(
      'CA file "/etc/my ca.pem" cannot be written in squid.conf',
    );
  });
});

describe('generateStandalone', () => {
  it('includes the Doorman file and denies everything else after it', () => {
    const lines = directives(
      generateStandalone({
        dir: '/run/x',
        httpPorts: ['127.0.0.1:3130', '[::1]:3130'],
        include: '/run/x/doorman.conf',
        loopbackDns: true,
      }),
    );
    expect(lines.slice(0, 2)).toEqual(['http_port 127.0.0.1:3130', 'http_port [::1]:3130']);
    expect(lines).toContain('dns_nameservers 127.0.0.1');
    expect(lines.indexOf('include /run/x/doorman.conf')).toBeLessThan(lines.indexOf('http_access deny all'));
    expect(lines.at(-1)).toBe('http_access deny all');
  });

  it('leaves DNS alone unless asked', () => {
    const text = generateStandalone({
      dir: '/run/x',
      httpPorts: ['127.0.0.1:3130'],
      include: '/run/x/d.conf',
    });
    expect(text).not.toMatch(/dns_nameservers/);
  });
});
