import { describe, expect, it } from 'vitest';
import { thrownOf } from '../../../../support/thrown.ts';
import { FactError } from '../../../../../lib/seamless/doctor/errors.ts';
import {
  fileFactsOf,
  type HelperUser,
  MAX_ID_OUTPUT_CHARS,
  mayAccess,
  parseIdOutput,
  permissionClass,
  showMode,
} from '../../../../../lib/seamless/doctor/file-facts.ts';
import { ID_PROXY } from './fixtures.ts';

const PROXY: HelperUser = { name: 'proxy', uid: 13, gid: 13, gids: [13] };

const refusal = (text: string): FactError => thrownOf(FactError, () => parseIdOutput(text));

describe('fileFactsOf', () => {
  it('keeps the type, the permission bits and the owner of a stat', () => {
    expect(fileFactsOf({ mode: 0o100640, uid: 0, gid: 13 })).toEqual({
      kind: 'file',
      mode: 0o640,
      uid: 0,
      gid: 13,
    });
    expect(fileFactsOf({ mode: 0o040750, uid: 0, gid: 13 }).kind).toBe('directory');
    expect(fileFactsOf({ mode: 0o120777, uid: 0, gid: 0 }).kind).toBe('other');
    expect(() => fileFactsOf({ mode: 0o100640, uid: -1, gid: 0 })).toThrow(
      'stat: uid -1 is not a whole number',
    );
  });
});

describe('parseIdOutput', () => {
  it('reads `id proxy` and a user in several groups', () => {
    expect(parseIdOutput(ID_PROXY)).toEqual(PROXY);
    expect(parseIdOutput('uid=1000(al ice) gid=100(users) groups=100(users),13(proxy),27(sudo,x)')).toEqual({
      name: 'al ice',
      uid: 1000,
      gid: 100,
      gids: [100, 13, 27],
    });
    expect(parseIdOutput('uid=5000 gid=5000')).toEqual({ name: '', uid: 5000, gid: 5000, gids: [5000] });
  });

  it('refuses what is not its answer', () => {
    expect(refusal('id: ‘proxy’: no such user').message).toBe(
      'id: "id: ‘proxy’: no such user" is not id\'s answer "uid=N(name) gid=N(name) groups=N(name),…"',
    );
    expect(refusal('uid=13(proxy) gid=13(proxy) groups=13(proxy),').code).toBe('MALFORMED');
    expect(refusal('uid=13(proxy) gid=13(proxy) groups=13(proxy)x').code).toBe('MALFORMED');
    expect(refusal('uid=13(proxy) gid=13(proxy) context=x').code).toBe('MALFORMED');
    expect(refusal('uid=4294967296(x) gid=1').message).toContain('larger than 32 bits');
    expect(refusal('x'.repeat(MAX_ID_OUTPUT_CHARS + 1)).code).toBe('TOO_LARGE');
  });
});

describe('mayAccess', () => {
  const keytab = (mode: number, uid = 0, gid = 13) => fileFactsOf({ mode: 0o100000 | mode, uid, gid });
  it('reads the lab: root:proxy 0640 readable by proxy, 0600 not', () => {
    expect(mayAccess(keytab(0o640), PROXY, 'r')).toBe(true);
    expect(mayAccess(keytab(0o600), PROXY, 'r')).toBe(false);
    expect(permissionClass(keytab(0o600), PROXY)).toBe('group');
  });

  it('applies only the first matching class, as POSIX does', () => {
    // The owner without read bits cannot read, even though the group could.
    expect(mayAccess(keytab(0o040, 13, 13), PROXY, 'r')).toBe(false);
    expect(mayAccess(keytab(0o604, 0, 0), PROXY, 'r')).toBe(true);
    const dir = fileFactsOf({ mode: 0o040750, uid: 0, gid: 13 });
    expect(mayAccess(dir, PROXY, 'x')).toBe(true);
    expect(mayAccess({ ...dir, gid: 0 }, PROXY, 'x')).toBe(false);
    expect(mayAccess(keytab(0o000), { ...PROXY, uid: 0 }, 'r')).toBe(true);
  });

  it('shows a mode in octal', () => {
    expect([showMode(0o640), showMode(0o750), showMode(0o7)]).toEqual(['0640', '0750', '0007']);
  });
});
