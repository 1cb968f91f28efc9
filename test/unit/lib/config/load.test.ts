import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_PATH, dbPath, loadConfig, parseConfig } from '../../../../lib/config/load.ts';
import type { Config } from '../../../../lib/config/schema.ts';
import { useTempDir } from '../../../support/temp-dir.ts';
import { thrown } from '../../../support/thrown.ts';

/** The documented defaults (docs/configuration.md), spelled out so a changed default fails here. */
const DEFAULTS: Config = {
  baseUrl: 'http://127.0.0.1:8180/',
  listen: [{ host: '127.0.0.1', port: 8180 }],
  server: { maxConnections: 1024, maxConnectionsPerAddress: 64 },
  trustedProxies: ['127.0.0.1', '::1'],
  stateDir: '/var/lib/doorman',
  sambaDir: null,
  dbFile: 'doorman.db',
  store: { kind: 'sqlite' },
  serviceUser: 'proxy',
  api: {
    maxBodyBytes: 4096,
    maxKeyFailures: 10,
    keyFailureWindowSeconds: 300,
    sessionIdleSeconds: null,
    sessionMaxSeconds: null,
  },
  passwordGuessing: {
    account: { maxFailures: 5, windowSeconds: 900 },
    address: { maxFailures: 10, windowSeconds: 300 },
  },
  audit: { box: null, retentionDays: 180, file: null, syslog: false },
  squid: {
    ttl: 5,
    negativeTtl: 0,
    concurrency: 100,
    childrenMax: 2,
    basicAuth: { realm: 'Doorman', credentialsTtl: 300, children: 5, concurrency: 50 },
    seamless: { negotiateChildren: 20, ntlmChildren: 20, squidInclude: null, squidConf: null },
    groups: { ttl: 60, negativeTtl: 60, childrenMax: 2, concurrency: 50, allow: [] },
    intercept: {
      httpPort: null,
      httpsPort: null,
      tls: { mode: 'bump', caFile: null, certDb: null, certgen: '/usr/lib/squid/security_file_certgen' },
    },
  },
  icap: { host: '127.0.0.1', port: 1344, maxConnections: 100, requestTimeoutSeconds: 30 },
  metrics: { listen: null, tokenFile: null },
  lastSeenFlushSeconds: 30,
};

/** The message parseConfig gives for a document from `source` with these problems. */
const invalid = (source: string, ...lines: string[]) =>
  `${source} is not a valid Doorman configuration:\n  ${lines.join('\n  ')}`;

const tmp = useTempDir('doorman-config-');
/** Write `text` as the config file doorman.json in the test's directory; returns its path. */
const writeConfig = (text: string | Buffer) => tmp.write('doorman.json', text);

describe('embedded defaults', () => {
  it('an empty document gives every documented default', () => {
    expect(parseConfig({}, 'test')).toEqual(DEFAULTS);
  });

  it('a file holding {} gives the same defaults and names the file', () => {
    const path = writeConfig('{}');
    expect(loadConfig(path)).toEqual({ config: DEFAULTS, path });
  });

  it('with no explicit path, an absent default file means the embedded defaults', () => {
    // This machine has no /etc/doorman/doorman.json (the test asserts so rather than assuming it).
    expect(existsSync(DEFAULT_CONFIG_PATH)).toBe(false);
    expect(loadConfig()).toEqual({ config: DEFAULTS, path: undefined });
  });

  it('fills defaults inside a nested object that is present but partial', () => {
    const config = parseConfig({ squid: { ttl: 60 }, api: {} }, 'test');
    expect(config.squid).toEqual({ ...DEFAULTS.squid, ttl: 60 });
    expect(config.api).toEqual(DEFAULTS.api);
  });

  it('keeps values that are given', () => {
    const config = parseConfig(
      {
        baseUrl: 'https://doorman.example.org/id/',
        listen: [{ host: '0.0.0.0', port: 443 }],
        stateDir: '/srv/doorman',
        dbFile: 'other.db',
        serviceUser: 'squid',
        lastSeenFlushSeconds: 5,
      },
      'test',
    );
    expect(config).toEqual({
      ...DEFAULTS,
      baseUrl: 'https://doorman.example.org/id/',
      listen: [{ host: '0.0.0.0', port: 443 }],
      stateDir: '/srv/doorman',
      dbFile: 'other.db',
      serviceUser: 'squid',
      lastSeenFlushSeconds: 5,
    });
  });
});

describe('reading the file', () => {
  it('an explicit path that does not exist is CONFIG_UNREADABLE, not the defaults', () => {
    const path = join(tmp.dir, 'missing.json');
    expect(thrown(() => loadConfig(path))).toMatchObject({
      code: 'CONFIG_UNREADABLE',
      message: `${path}: ENOENT: no such file or directory, open '${path}'`,
    });
  });

  it('a directory is CONFIG_UNREADABLE', () => {
    const path = join(tmp.dir, 'a-directory');
    mkdirSync(path);
    expect(thrown(() => loadConfig(path))).toMatchObject({
      code: 'CONFIG_UNREADABLE',
      message: `${path}: EISDIR: illegal operation on a directory, read`,
    });
  });

  it('a file over 1 MiB is CONFIG_UNREADABLE', () => {
    const path = writeConfig(`{}${' '.repeat(1024 * 1024 - 1)}`);
    expect(thrown(() => loadConfig(path))).toMatchObject({
      code: 'CONFIG_UNREADABLE',
      message: `${path}: larger than 1048576 bytes`,
    });
  });

  it('a file of exactly 1 MiB is read', () => {
    const path = writeConfig(`{}${' '.repeat(1024 * 1024 - 2)}`);
    expect(loadConfig(path)).toEqual({ config: DEFAULTS, path });
  });

  it('bad JSON is CONFIG_INVALID and says where', () => {
    const path = writeConfig('{ "baseUrl": "http://x/", }');
    const error = thrown(() => loadConfig(path));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toMatch(new RegExp(`^${escapeRegExp(path)}: not valid JSON: .*position 26`));
  });

  it('an empty file is CONFIG_INVALID (not the defaults)', () => {
    const path = writeConfig('');
    const error = thrown(() => loadConfig(path));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toMatch(new RegExp(`^${escapeRegExp(path)}: not valid JSON: `));
  });

  it('JSON that is not an object is CONFIG_INVALID at the top level', () => {
    const path = writeConfig('[]');
    expect(thrown(() => loadConfig(path))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid(path, '(top level): Invalid input: expected object, received array'),
    });
  });

  it('a schema error names the file it came from', () => {
    const path = writeConfig('{"squid": {"ttl": -1}}');
    expect(thrown(() => loadConfig(path))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid(path, 'squid.ttl: Too small: expected number to be >=0'),
    });
  });
});

describe('validation', () => {
  it('rejects an unknown top-level key (a typo is not "unset")', () => {
    expect(thrown(() => parseConfig({ trustedProxy: ['10.0.0.1'] }, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid('test', '(top level): Unrecognized key: "trustedProxy"'),
    });
  });

  it('rejects an unknown nested key, naming the object it is in', () => {
    expect(thrown(() => parseConfig({ squid: { tll: 5 } }, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid('test', 'squid: Unrecognized key: "tll"'),
    });
  });

  it('lists every bad field at once, each by its dotted path', () => {
    const document = {
      listen: [
        { host: '127.0.0.1', port: 8180 },
        { host: 'localhost', port: 0 },
      ],
      trustedProxies: ['127.0.0.1', '10.0.0.999', '::1', 'proxy.lan'],
      stateDir: 'var/lib/doorman',
      squid: { ttl: 1.5, concurrency: '100' },
      serviceUser: 'Proxy',
      surplus: true,
    };
    expect(thrown(() => parseConfig(document, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid(
        'test',
        'listen.1.host: "localhost" is not an IPv4 or IPv6 address',
        'listen.1.port: Too small: expected number to be >=1',
        'trustedProxies.1: "10.0.0.999" is not an IPv4 or IPv6 address',
        'trustedProxies.3: "proxy.lan" is not an IPv4 or IPv6 address',
        'stateDir: must be an absolute path',
        'serviceUser: must be a system user name',
        'squid.ttl: Invalid input: expected int, received number',
        'squid.concurrency: Invalid input: expected number, received string',
        '(top level): Unrecognized key: "surplus"',
      ),
    });
  });

  it('a wrong value is an error, never replaced by the default', () => {
    expect(thrown(() => parseConfig({ stateDir: null }, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid('test', 'stateDir: Invalid input: expected string, received null'),
    });
    expect(thrown(() => parseConfig({ listen: [] }, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid('test', 'listen: Too small: expected array to have >=1 items'),
    });
    expect(thrown(() => parseConfig({ listen: [{ host: '::1' }] }, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid('test', 'listen.0.port: Invalid input: expected number, received undefined'),
    });
  });

  it.each([
    [{ api: { maxBodyBytes: 255 } }, 'api.maxBodyBytes: Too small: expected number to be >=256'],
    [{ api: { maxBodyBytes: 65_537 } }, 'api.maxBodyBytes: Too big: expected number to be <=65536'],
    [
      { api: { keyFailureWindowSeconds: 0 } },
      'api.keyFailureWindowSeconds: Too small: expected number to be >=1',
    ],
    [{ squid: { negativeTtl: 86_401 } }, 'squid.negativeTtl: Too big: expected number to be <=86400'],
    [{ squid: { childrenMax: 65 } }, 'squid.childrenMax: Too big: expected number to be <=64'],
    [{ listen: [{ host: '::1', port: 65_536 }] }, 'listen.0.port: Too big: expected number to be <=65535'],
    [{ lastSeenFlushSeconds: 0 }, 'lastSeenFlushSeconds: Too small: expected number to be >=1'],
    [
      { squid: { intercept: { httpPort: 0 } } },
      'squid.intercept.httpPort: Too small: expected number to be >=1',
    ],
    [{ icap: { port: 65_536 } }, 'icap.port: Too big: expected number to be <=65535'],
    [{ icap: { host: 'localhost' } }, 'icap.host: "localhost" is not an IPv4 or IPv6 address'],
    [{ icap: { maxConnections: 0 } }, 'icap.maxConnections: Too small: expected number to be >=1'],
    [
      { icap: { maxConnections: 10, maxConnectionsPerAddress: 11 } },
      'icap.maxConnectionsPerAddress: 11 is more than icap.maxConnections (10): must be at most that',
    ],
    [
      { icap: { requestTimeoutSeconds: 0 } },
      'icap.requestTimeoutSeconds: Too small: expected number to be >=1',
    ],
    [{ dbFile: '' }, 'dbFile: must be a plain file name in stateDir, e.g. doorman.db'],
  ])('bounds: %j', (document, line) => {
    expect(thrown(() => parseConfig(document, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid('test', line),
    });
  });

  it('normalises trustedProxies and listen hosts to the spelling sessions are keyed by', () => {
    const config = parseConfig(
      {
        trustedProxies: ['::ffff:10.0.0.5', '2001:DB8:0:0:0:0:0:1', '10.0.0.1', '0:0:0:0:0:0:0:1'],
        listen: [{ host: '0:0:0:0:0:0:0:0', port: 8180 }],
      },
      'test',
    );
    expect(config.trustedProxies).toEqual(['10.0.0.5', '2001:db8::1', '10.0.0.1', '::1']);
    expect(config.listen).toEqual([{ host: '::', port: 8180 }]);
  });

  it('rejects a trusted proxy with a zone id', () => {
    expect(thrown(() => parseConfig({ trustedProxies: ['fe80::1%eth0'] }, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid('test', 'trustedProxies.0: "fe80::1%eth0" is not an IPv4 or IPv6 address'),
    });
  });
});

describe('session lifetimes (api.sessionIdleSeconds, api.sessionMaxSeconds)', () => {
  it('are off (null) unless set, and keep the values given', () => {
    expect(parseConfig({}, 'test').api).toMatchObject({ sessionIdleSeconds: null, sessionMaxSeconds: null });
    expect(
      parseConfig({ api: { sessionIdleSeconds: 900, sessionMaxSeconds: 31_536_000 } }, 'test').api,
    ).toMatchObject({ sessionIdleSeconds: 900, sessionMaxSeconds: 31_536_000 });
    expect(
      parseConfig({ api: { sessionIdleSeconds: null, sessionMaxSeconds: 1 } }, 'test').api,
    ).toMatchObject({ sessionIdleSeconds: null, sessionMaxSeconds: 1 });
  });

  it.each([
    [{ sessionMaxSeconds: 0 }, 'api.sessionMaxSeconds: must be 1 or more seconds (null for no limit)'],
    [{ sessionMaxSeconds: -5 }, 'api.sessionMaxSeconds: must be 1 or more seconds (null for no limit)'],
    [{ sessionMaxSeconds: 31_536_001 }, 'api.sessionMaxSeconds: must be at most 31536000 seconds (one year)'],
    [{ sessionMaxSeconds: 1.5 }, 'api.sessionMaxSeconds: Invalid input: expected int, received number'],
    [{ sessionMaxSeconds: '3600' }, 'api.sessionMaxSeconds: Invalid input: expected number, received string'],
    [{ sessionIdleSeconds: 0 }, 'api.sessionIdleSeconds: must be 1 or more seconds (null for no limit)'],
    [
      { sessionIdleSeconds: 31_536_001 },
      'api.sessionIdleSeconds: must be at most 31536000 seconds (one year)',
    ],
  ])('bounds: %j', (api, line) => {
    expect(thrown(() => parseConfig({ api }, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid('test', line),
    });
  });

  it('an idle limit is at least 2 × lastSeenFlushSeconds + squid.ttl, the lag it is measured with', () => {
    const idle = (document: Record<string, unknown>) => () => parseConfig(document, 'test');
    expect(idle({ api: { sessionIdleSeconds: 65 } })().api.sessionIdleSeconds).toBe(65);
    expect(thrown(idle({ api: { sessionIdleSeconds: 64 } }))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid(
        'test',
        'api.sessionIdleSeconds: must be at least 2 × lastSeenFlushSeconds + squid.ttl (65 seconds), or null',
      ),
    });
    expect(
      idle({ api: { sessionIdleSeconds: 10 }, lastSeenFlushSeconds: 5, squid: { ttl: 0 } })().api
        .sessionIdleSeconds,
    ).toBe(10);
    expect(
      thrown(idle({ api: { sessionIdleSeconds: 10 }, lastSeenFlushSeconds: 5, squid: { ttl: 1 } })),
    ).toMatchObject({
      message: invalid(
        'test',
        'api.sessionIdleSeconds: must be at least 2 × lastSeenFlushSeconds + squid.ttl (11 seconds), or null',
      ),
    });
    expect(thrown(idle({ api: { sessionIdleSeconds: 600 }, squid: { ttl: 3600 } }))).toMatchObject({
      message: invalid(
        'test',
        'api.sessionIdleSeconds: must be at least 2 × lastSeenFlushSeconds + squid.ttl (3660 seconds), or null',
      ),
    });
  });
});

describe('baseUrl', () => {
  it.each([
    'http://127.0.0.1:8180/',
    'https://doorman.example.org/',
    'https://example.org/doorman/',
    'http://[::1]:8180/',
  ])('accepts %s', (baseUrl) => {
    expect(parseConfig({ baseUrl }, 'test').baseUrl).toBe(baseUrl);
  });

  it.each([
    // {baseUrl}api/login/ must be a URL under baseUrl: without the slash it would be http://hostapi/login/.
    ['http://doorman.example.org', 'must end with "/" (the API is at {baseUrl}api/login/)'],
    ['https://example.org/doorman', 'must end with "/" (the API is at {baseUrl}api/login/)'],
    ['ftp://example.org/', 'must be an http:// or https:// URL'],
    ['file:///etc/', 'must be an http:// or https:// URL'],
    ['https://example.org/?next=/', 'must not have a query or fragment'],
    ['https://example.org/#/', 'must not have a query or fragment'],
  ])('rejects %s: %s', (baseUrl, reason) => {
    expect(thrown(() => parseConfig({ baseUrl }, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid('test', `baseUrl: ${reason}`),
    });
  });

  it('lists every baseUrl problem at once', () => {
    expect(thrown(() => parseConfig({ baseUrl: 'ftp://example.org/x?y=1' }, 'test'))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: invalid(
        'test',
        'baseUrl: must be an http:// or https:// URL',
        'baseUrl: must end with "/" (the API is at {baseUrl}api/login/)',
        'baseUrl: must not have a query or fragment',
      ),
    });
  });

  it.each(['not a url', '', '/relative/', 'http://'])(
    'rejects %j as CONFIG_INVALID, not a crash',
    (baseUrl) => {
      expect(thrown(() => parseConfig({ baseUrl }, 'test'))).toMatchObject({
        code: 'CONFIG_INVALID',
        message: invalid('test', 'baseUrl: Invalid URL'),
      });
    },
  );
});

describe('dbPath', () => {
  it('puts a relative dbFile in stateDir', () => {
    expect(dbPath(parseConfig({ stateDir: '/srv/doorman' }, 'test'))).toBe('/srv/doorman/doorman.db');
  });

  it.each(['/tmp/sessions.db', '../sessions.db', 'sub/sessions.db', '.hidden'])(
    'refuses %s: the DB lives in stateDir, the one directory made private to the service user',
    (dbFile) => {
      expect(thrown(() => parseConfig({ dbFile }, 'test')).message).toMatch(
        /dbFile: must be a plain file name in stateDir/,
      );
    },
  );
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('store', () => {
  const problems = (store: unknown) => thrown(() => parseConfig({ store }, 'test')).message;

  it('is SQLite unless set; a PostgreSQL store keeps its URL and has no password file unless given', () => {
    expect(parseConfig({}, 'test').store).toEqual({ kind: 'sqlite' });
    const url = 'postgres://doorman@db1,db2/doorman?target_session_attrs=read-write';
    expect(parseConfig({ store: { kind: 'postgres', url } }, 'test').store).toEqual({
      kind: 'postgres',
      url,
      passwordFile: null,
    });
  });

  it('refuses a URL that holds a password, naming the field and where the password goes', () => {
    expect(problems({ kind: 'postgres', url: 'postgres://doorman:s3cret@db1/doorman' })).toContain(
      'store.url: must not hold a password: put it in store.passwordFile (0600) or PGPASSWORD',
    );
  });

  it('refuses a password before the hosts whatever it holds ("/", "@", "?"), and never shows it', () => {
    for (const url of [
      'postgres://doorman:Zm9v/YmFy@db1/doorman',
      'postgres://doorman:Zm9v?YmFy@db1/doorman',
      'postgres://doorman:Zm9v@YmFy@db1/doorman',
      'postgres://door@man:Zm9vYmFy@db1,db2/doorman',
      'postgresql://doorman:Zm9vYmFy@db1:5432/doorman?sslmode=require',
    ]) {
      const message = problems({ kind: 'postgres', url });
      expect(message).toContain('store.url: must not hold a password');
      expect(message).not.toMatch(/Zm9v|YmFy/);
    }
  });

  it('refuses a password parameter, in any case or escaped, and never shows it', () => {
    for (const url of [
      'postgres://doorman@db1/doorman?password=s3cret',
      'postgres://doorman@db1/doorman?sslmode=require&PassWord=s3cret',
      'postgres://doorman@db1/doorman?pass%77ord=s3cret',
      'postgres://doorman@db1/doorman?sslpassword=s3cret',
    ]) {
      const message = problems({ kind: 'postgres', url });
      expect(message).toContain(
        'store.url: must not have a password parameter: put it in store.passwordFile (0600) or PGPASSWORD',
      );
      expect(message).not.toContain('s3cret');
    }
  });

  it('takes ports, several hosts, an IPv6 address, an escaped @ and other parameters', () => {
    for (const url of [
      'postgres://doorman@db1:5432,db2:5433/doorman?target_session_attrs=read-write&sslmode=verify-full',
      'postgres://doorman@[::1]:5432/doorman',
      'postgres://db1:5432/doorman?application_name=doorman%40box1',
      'postgres://doorman%3Aadmin@db1/doorman?passwordless=1',
    ]) {
      expect(parseConfig({ store: { kind: 'postgres', url } }, 'test').store).toMatchObject({ url });
    }
    // Unescaped, an @ after a port cannot be told from a password's: refused, and the message says to escape it.
    expect(
      problems({ kind: 'postgres', url: 'postgres://db1:5432/doorman?application_name=doorman@box1' }),
    ).toContain('(an @ after the hosts is written %40)');
  });

  it('refuses another scheme, an unknown kind, a relative password file and a stray key', () => {
    expect(problems({ kind: 'postgres', url: 'mysql://db1/doorman' })).toContain(
      'store.url: must start with postgres:// or postgresql://',
    );
    expect(problems({ kind: 'mysql' })).toMatch(/store\.kind: /);
    expect(problems({ kind: 'postgres', url: 'postgres://db1/d', passwordFile: 'pw' })).toContain(
      'store.passwordFile: must be an absolute path',
    );
    expect(problems({ kind: 'sqlite', url: 'postgres://db1/d' })).toMatch(/store: .*url/);
  });
});

describe('metrics', () => {
  const problems = (config: unknown) => thrown(() => parseConfig(config, 'test')).message;

  it('are off unless set; a listener and a token file are kept as given', () => {
    expect(parseConfig({}, 'test').metrics).toEqual({ listen: null, tokenFile: null });
    const metrics = { listen: { host: '127.0.0.1', port: 9469 }, tokenFile: '/etc/doorman/metrics-token' };
    expect(parseConfig({ metrics }, 'test').metrics).toEqual(metrics);
  });

  it('refuses a relative token file, a bad address, a stray key', () => {
    expect(problems({ metrics: { tokenFile: 'token' } })).toContain(
      'metrics.tokenFile: must be an absolute path',
    );
    expect(problems({ metrics: { listen: { host: 'localhost', port: 9469 } } })).toContain(
      'metrics.listen.host: "localhost" is not an IPv4 or IPv6 address',
    );
    expect(problems({ metrics: { listen: { host: '127.0.0.1', port: 0 } } })).toMatch(
      /metrics\.listen\.port: /,
    );
    expect(problems({ metrics: { token: 'x' } })).toMatch(/metrics: .*token/);
  });

  it("refuses the web app's or the ICAP service's port, on the same address or a wildcard", () => {
    expect(problems({ metrics: { listen: { host: '127.0.0.1', port: 8180 } } })).toContain(
      "metrics.listen.port: 8180 is listen[0]'s port already: choose another port",
    );
    expect(problems({ metrics: { listen: { host: '0.0.0.0', port: 1344 } } })).toContain(
      "metrics.listen.port: 1344 is icap's port already",
    );
    expect(
      parseConfig({ metrics: { listen: { host: '192.0.2.1', port: 8180 } } }, 'test').metrics.listen,
    ).toEqual({
      host: '192.0.2.1',
      port: 8180,
    });
  });
});
