import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureProxyKey, ProxyKeyCheck, readProxyKey } from '../../../../lib/security/proxy-key.ts';
import { useTempDir } from '../../../support/temp-dir.ts';
import { thrown } from '../../../support/thrown.ts';

const tmp = useTempDir();
const keyFile = () => join(tmp.dir, 'proxy-key');

describe('ensureProxyKey', () => {
  it('makes a 256-bit key in a 0600 file, once, and leaves no temporary file behind', () => {
    const key = ensureProxyKey(keyFile());
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(readFileSync(keyFile(), 'utf8')).toBe(`${key}\n`);
    expect(statSync(keyFile()).mode & 0o777).toBe(0o600);
    expect(ensureProxyKey(keyFile())).toBe(key);
    expect(readProxyKey(keyFile())).toBe(key);
    expect(readdirSync(tmp.dir)).toEqual(['proxy-key']);
  });

  it('refuses a damaged key file rather than replacing it (every include made with the old key would fail)', () => {
    tmp.write('proxy-key', '');
    expect(thrown(() => ensureProxyKey(keyFile())).message).toMatch(/not a proxy key file/);
    expect(readFileSync(keyFile(), 'utf8')).toBe('');
  });
});

describe('readProxyKey', () => {
  it('says how to get one when there is none', () => {
    expect(thrown(() => readProxyKey(keyFile())).message).toBe(
      `cannot read the proxy key ${keyFile()}: there is none yet: start "doorman serve" once, it makes it`,
    );
  });

  it('never follows a symbolic link', () => {
    const real = tmp.write('elsewhere', `${'a'.repeat(43)}\n`);
    symlinkSync(real, keyFile());
    expect(thrown(() => readProxyKey(keyFile())).message).toMatch(/symbolic link; refusing to follow it/);
  });

  it('refuses what is not a key, without ever showing the file’s content', () => {
    for (const content of ['short', `${'k'.repeat(43)}!`, `${'k'.repeat(44)}`, 'x'.repeat(1000)]) {
      tmp.write('proxy-key', content);
      const error = thrown(() => readProxyKey(keyFile()));
      expect(error.message).toMatch(/not a proxy key file/);
      expect(error.message).not.toContain('kkkk');
      expect(error.message).not.toContain('short');
    }
  });

  it('refuses a FIFO in its place without hanging', () => {
    execFileSync('mkfifo', [keyFile()]);
    expect(thrown(() => readProxyKey(keyFile())).message).toMatch(/not a proxy key file/);
  });
});

describe('ProxyKeyCheck', () => {
  it('matches the key and nothing else', () => {
    const check = new ProxyKeyCheck('k'.repeat(43));
    expect(check.matches('k'.repeat(43))).toBe(true);
    for (const other of ['', 'k'.repeat(42), 'k'.repeat(44), `${'k'.repeat(42)}K`]) {
      expect(check.matches(other)).toBe(false);
    }
  });
});
