import { chmodSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { libraryUrl, readPasswordFile, showUrl } from '../../../../../lib/store/postgres/connect.ts';
import { useTempDir } from '../../../../support/temp-dir.ts';
import { thrown } from '../../../../support/thrown.ts';

describe('the PostgreSQL connection settings', () => {
  const tmp = useTempDir('doorman-pg-connect-');

  it('reads read-write as primary (the library would stay on a hot standby), and leaves the rest alone', () => {
    const url = 'postgres://doorman@db1,db2/doorman?target_session_attrs=read-write&sslmode=require';
    expect(libraryUrl(url)).toBe(
      'postgres://doorman@db1,db2/doorman?target_session_attrs=primary&sslmode=require',
    );
    expect(libraryUrl('postgres://db1/d?target_session_attrs=read-write')).toBe(
      'postgres://db1/d?target_session_attrs=primary',
    );
    expect(libraryUrl('postgres://db1/d?target_session_attrs=read-only')).toBe(
      'postgres://db1/d?target_session_attrs=read-only',
    );
  });

  it('masks a password that got into a URL anyway', () => {
    expect(showUrl('postgres://doorman:s3cret@db1/doorman')).toBe('postgres://doorman:***@db1/doorman');
    expect(showUrl('postgres://doorman@db1/doorman')).toBe('postgres://doorman@db1/doorman');
  });

  it('takes the first line of a 0600 password file, and refuses one others can read', () => {
    const file = tmp.write('pw', 'first line\r\nsecond\n');
    chmodSync(file, 0o600);
    expect(readPasswordFile(file)).toBe('first line');
    chmodSync(file, 0o640);
    const error = thrown(() => readPasswordFile(file));
    expect(error.code).toBe('UNSAFE_PATH');
    expect(error.message).toContain('chmod 600');
    expect(error.message).not.toContain('first line');
  });
});
