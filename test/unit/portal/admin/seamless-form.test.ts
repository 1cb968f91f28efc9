import { describe, expect, it } from 'vitest';
import {
  domainFromBaseDn,
  readDisableForm,
  readSeamlessForm,
  stateToForm,
  type SubmittedDisableForm,
  type SubmittedSeamlessForm,
} from '../../../../portal/admin/seamless-form.ts';

const form = (fields: Record<string, string>) => new Map(Object.entries(fields));
const PASSWORD = ' Adm1n pass ';
const BASE = {
  serverVersion: '2016',
  domain: ' Example.Test ',
  netbiosDomain: '',
  adminUser: ' EXAMPLE\\Administrator ',
  adminPassword: PASSWORD,
};

const accepted = (read: SubmittedSeamlessForm) => {
  if (!read.ok) throw new Error(JSON.stringify(read.problems));
  return read;
};
function refused(read: SubmittedSeamlessForm): Extract<SubmittedSeamlessForm, { ok: false }>;
function refused(read: SubmittedDisableForm): Extract<SubmittedDisableForm, { ok: false }>;
function refused(read: SubmittedSeamlessForm | SubmittedDisableForm) {
  if (read.ok) throw new Error('accepted');
  return read;
}
const byField = (read: SubmittedSeamlessForm | SubmittedDisableForm) => {
  if (read.ok) throw new Error('accepted');
  return Object.fromEntries(read.problems.map((p) => [p.field, p.message]));
};

describe('readSeamlessForm', () => {
  it('reads the five fields: a later version as 2012, the NetBIOS name defaulted, the password as typed', () => {
    const read = accepted(readSeamlessForm(form(BASE)));
    expect(read.settings).toEqual({
      serverVersion: '2012',
      domain: 'example.test',
      realm: 'EXAMPLE.TEST',
      netbiosDomain: 'EXAMPLE',
      adminUser: { account: 'Administrator', domain: 'EXAMPLE', form: 'down-level' },
    });
    expect(read.password.toString('utf8')).toBe(PASSWORD);
    expect(read.values).toEqual({
      serverVersion: '2016',
      domain: 'Example.Test',
      netbiosDomain: '',
      adminUser: 'EXAMPLE\\Administrator',
    });
  });

  it('takes a NetBIOS name given, upper-cased', () => {
    const read = accepted(readSeamlessForm(form({ ...BASE, netbiosDomain: 'corp' })));
    expect(read.settings.netbiosDomain).toBe('CORP');
  });

  it('lists every blank required field at once, in plain words, and never makes a password Buffer', () => {
    const read = refused(
      readSeamlessForm(form({ serverVersion: '', domain: '', adminUser: '', adminPassword: '' })),
    );
    expect(byField(read)).toEqual({
      serverVersion: "choose the Windows Server version of the domain's domain controllers",
      domain: "required: the domain's DNS name, e.g. example.test",
      adminUser: 'required: a member of Domain Admins, e.g. Administrator or EXAMPLE\\Administrator',
      adminPassword: "required: the administrator's password, used for the join only and never stored",
    });
    expect(read.passwordTyped).toBe(false);
    expect(read.values).toEqual({ serverVersion: '', domain: '', netbiosDomain: '', adminUser: '' });
  });

  it("lists the parser's problems for every other field, the domain controller's name among them", () => {
    const read = readSeamlessForm(
      form({
        serverVersion: '2000',
        domain: 'dc1.example.test',
        netbiosDomain: 'THIS-NAME-IS-TOO-LONG',
        adminUser: 'a\\b\\c',
        adminPassword: 'two\nlines',
      }),
      { directoryHost: 'DC1.example.test' },
    );
    const problems = byField(read);
    expect(Object.keys(problems).sort()).toEqual(
      ['adminPassword', 'adminUser', 'domain', 'netbiosDomain', 'serverVersion'].sort(),
    );
    expect(problems.serverVersion).toMatch(/must be 2003, 2008 or 2012/);
    expect(problems.domain).toMatch(
      /is the directory server's host name, not the domain: .*e\.g\. example\.test/,
    );
    expect(problems.netbiosDomain).toMatch(/is 21 characters long; a NetBIOS name has at most 15/);
    expect(problems.adminUser).toMatch(/must be a user name/);
    expect(problems.adminPassword).toBe('must not contain line breaks or NUL characters');
    expect(refused(read).passwordTyped).toBe(true);
    // Never quoted, wherever it went wrong.
    expect(JSON.stringify(read)).not.toContain('two\\nlines');
  });

  it('shows a repair with the joined settings', () => {
    expect(
      stateToForm({
        serverVersion: '2008',
        domain: 'example.test',
        realm: 'EXAMPLE.TEST',
        netbios: 'EXAMPLE',
        adminUser: 'EXAMPLE\\admin',
        proxyFqdn: 'proxy.example.test',
        machineName: 'PROXY',
        joinedAt: 0,
      }),
    ).toEqual({
      serverVersion: '2008',
      domain: 'example.test',
      netbiosDomain: 'EXAMPLE',
      adminUser: 'EXAMPLE\\admin',
    });
  });
});

describe('domainFromBaseDn', () => {
  it('reads a search base of domain components only', () => {
    expect(domainFromBaseDn('DC=example,DC=test')).toBe('example.test');
    expect(domainFromBaseDn('dc=Corp, dc=Example, dc=com')).toBe('corp.example.com');
  });

  it('suggests nothing for anything else', () => {
    expect(domainFromBaseDn('OU=Staff,DC=example,DC=test')).toBeUndefined();
    expect(domainFromBaseDn('DC=test')).toBeUndefined();
    expect(domainFromBaseDn('')).toBeUndefined();
    expect(domainFromBaseDn('DC=a=b,DC=test')).toBeUndefined();
  });
});

describe('readDisableForm', () => {
  it('leaves the domain with the administrator and the password as typed', () => {
    const read = readDisableForm(
      form({ how: 'leave', adminUser: ' admin@EXAMPLE.TEST ', adminPassword: PASSWORD }),
    );
    if (!read.ok) throw new Error(JSON.stringify(read.problems));
    expect(read.how).toBe('leave');
    expect(read.admin?.user).toBe('admin@EXAMPLE.TEST');
    expect(read.admin?.password.toString('utf8')).toBe(PASSWORD);
  });

  it('disables locally without credentials, ignoring any typed', () => {
    expect(readDisableForm(form({ how: 'local', adminUser: 'admin', adminPassword: 'x' }))).toEqual({
      ok: true,
      how: 'local',
      adminUser: 'admin',
      admin: undefined,
    });
  });

  it('needs both to leave, and lists both problems', () => {
    expect(byField(readDisableForm(form({ how: 'leave' })))).toEqual({
      adminUser: 'required to leave the domain: a member of Domain Admins (or choose Disable locally)',
      adminPassword: 'required to leave the domain (or choose Disable locally)',
    });
    expect(byField(readDisableForm(form({ how: 'leave', adminUser: 'a@', adminPassword: 'x\r' })))).toEqual({
      adminUser: '"a@" must be a user name: user, DOMAIN\\user or user@realm',
      adminPassword: 'must not contain line breaks or NUL characters',
    });
  });

  it('refuses an administrator name that net would split at %, on Enable and on Disable', () => {
    const enable = byField(readSeamlessForm(form({ ...BASE, adminUser: 'adm%Secret' }), {}));
    expect(enable.adminUser).toMatch(
      /"adm%Secret" must not contain "%": net reads % as the start of a password/,
    );
    const leave = byField(
      readDisableForm(form({ how: 'leave', adminUser: 'adm%Secret', adminPassword: 'x' })),
    );
    expect(leave.adminUser).toMatch(/must not contain "%"/);
  });

  it('refuses a way to disable it does not know, naming it', () => {
    expect(byField(readDisableForm(form({ how: 'nuke' })))).toEqual({
      how: '"nuke" is not a way to disable: press "Disable and leave the domain" or "Disable locally"',
    });
  });
});
