import { chmodSync, chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  connectPostgres,
  libraryUrl,
  readPasswordFile,
  showUrl,
} from '../../../../../lib/store/postgres/connect.ts';
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

  it('masks a password that got into a URL anyway: before the hosts, whatever it holds, or as a parameter', () => {
    expect(showUrl('postgres://doorman:s3cret@db1/doorman')).toBe('postgres://doorman:***@db1/doorman');
    expect(showUrl('postgres://doorman@db1/doorman')).toBe('postgres://doorman@db1/doorman');
    // A base64 password holds "/", a pasted one "@" or "?": all of it up to the last "@" is masked.
    expect(showUrl('postgres://doorman:Zm9v/YmFy@db1/doorman')).toBe('postgres://doorman:***@db1/doorman');
    expect(showUrl('postgres://doorman:p@ss?w/rd@db1,db2/doorman')).toBe(
      'postgres://doorman:***@db1,db2/doorman',
    );
    expect(showUrl('postgres://doorman@db1/d?sslmode=require&password=s3cret&application_name=x')).toBe(
      'postgres://doorman@db1/d?sslmode=require&password=***&application_name=x',
    );
    expect(showUrl('postgres://db1/d?PassWord=s3cret#x')).toBe('postgres://db1/d?PassWord=***#x');
    expect(showUrl('postgres://db1/d?pass%77ord=s3cret&sslpassword=k3y')).toBe(
      'postgres://db1/d?pass%77ord=***&sslpassword=***',
    );
    expect(showUrl('postgres://db1:5432,db2:5433/d?target_session_attrs=read-write')).toBe(
      'postgres://db1:5432,db2:5433/d?target_session_attrs=read-write',
    );
  });

  it('a URL the client cannot read is CONFIG_INVALID, with the password masked and nothing holding the URL', () => {
    // The client's own TypeError ("Invalid URL") carries the URL, password and all, in `input`.
    const error = thrown(() =>
      connectPostgres(
        { url: 'postgres://doorman:Zm9v/YmFy@db1/doorman', passwordFile: null },
        {
          applicationName: 'doorman-test',
        },
      ),
    );
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toBe(
      'PostgreSQL postgres://doorman:***@db1/doorman: not a URL the client can read (ERR_INVALID_URL): postgres://USER@HOST[:PORT][,HOST2[:PORT2]...]/DATABASE',
    );
    expect(error.cause).toBeUndefined();
    expect(inspect(error, { depth: 10 })).not.toMatch(/Zm9v|YmFy/);
  });

  it('takes the first line of a 0600 password file, and refuses one others can read', () => {
    const file = tmp.write('pw', 'first line\r\nsecond\n');
    chmodSync(file, 0o600);
    expect(readPasswordFile(file)).toBe('first line');
    chmodSync(file, 0o640);
    const error = thrown(() => readPasswordFile(file));
    expect(error.code).toBe('UNSAFE_PATH');
    expect(error.message).toBe(
      `the password file ${file} can be read or written by others (mode 640): chmod 600 it`,
    );
  });

  it('refuses a password file of another user, saying whose it must be, and never what it holds', () => {
    const file = tmp.write('pw', 'S3cretOfNobody\n');
    chmodSync(file, 0o600);
    chownSync(file, 65534, 65534);
    const error = thrown(() => readPasswordFile(file));
    expect(error.code).toBe('UNSAFE_PATH');
    expect(error.message).toBe(
      `the password file ${file} belongs to uid 65534: it must be root (uid 0)'s, the user Doorman runs as (chown it)`,
    );
    expect(error.message).not.toContain('S3cret');
  });

  it('refuses what is not a regular file, and a file over 4096 bytes', () => {
    const dir = join(tmp.dir, 'a-directory');
    mkdirSync(dir, { mode: 0o700 });
    expect(thrown(() => readPasswordFile(dir))).toMatchObject({
      code: 'UNSAFE_PATH',
      message: `the password file ${dir} is not a regular file`,
    });
    const large = tmp.write('large', 'x'.repeat(4097));
    chmodSync(large, 0o600);
    expect(thrown(() => readPasswordFile(large))).toMatchObject({
      code: 'CONFIG_UNREADABLE',
      message: `${large}: larger than 4096 bytes`,
    });
  });
});
