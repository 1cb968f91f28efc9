import { describe, expect, it } from 'vitest';
import { derLength, oid, tlv } from './der.ts';
import { apReq, derInteger, principalName, rawKrb5, ticket, type ApReqOptions } from './krb5-tokens.ts';
import { refusalsOf } from './token-refusals.ts';
import {
  MAX_KRB5_TOKEN_BYTES,
  MAX_NAME_BYTES,
  MAX_NAME_COMPONENTS,
  readKrb5TokenTarget,
} from '../../../../lib/seamless/ap-req.ts';
import { Oids, TokenError } from '../../../../lib/seamless/spnego.ts';

/** The krb5 initial token around an AP-REQ given whole (so that a test can break one field of it). */
const wrap = (ap: Buffer, mech: string = Oids.krb5, tokId = [0x01, 0x00]) =>
  tlv(0x60, oid(mech), Buffer.from(tokId), ap);

/** A Ticket with its fields given one by one, for tickets the fixture builder would not make. */
const ticketOf = (...fields: Buffer[]) => tlv(0x61, tlv(0x30, ...fields));
const encPart = tlv(0xa3, tlv(0x30, tlv(0xa0, derInteger(18)), tlv(0xa2, tlv(0x04, Buffer.alloc(32, 1)))));
const realmField = (realm: Buffer) => tlv(0xa1, realm);
const generalString = (text: string) => tlv(0x1b, Buffer.from(text, 'utf8'));
const snameField = (nameType: number, components: string[]) => tlv(0xa2, principalName(nameType, components));
const vno = (n: number) => tlv(0xa0, derInteger(n));

const { refusal, expectRefused } = refusalsOf(readKrb5TokenTarget);

describe('readKrb5TokenTarget: what the ticket is for', () => {
  it.each<[string, ApReqOptions, { realm: string; nameType: number; components: string[] }]>([
    [
      'an MIT client (NT-SRV-HST)',
      {},
      { realm: 'EXAMPLE.TEST', nameType: 3, components: ['HTTP', 'proxy.example.test'] },
    ],
    [
      'a Windows client (NT-SRV-INST) by short name',
      { nameType: 2, sname: ['HTTP', 'PROXY'] },
      { realm: 'EXAMPLE.TEST', nameType: 2, components: ['HTTP', 'PROXY'] },
    ],
    [
      'the host/ service',
      { sname: ['host', 'proxy.example.test'] },
      { realm: 'EXAMPLE.TEST', nameType: 3, components: ['host', 'proxy.example.test'] },
    ],
    [
      'the cifs/ service of another realm',
      { realm: 'OTHER.TEST', sname: ['cifs', 'proxy.example.test'] },
      { realm: 'OTHER.TEST', nameType: 3, components: ['cifs', 'proxy.example.test'] },
    ],
    [
      'a negative name-type (NT-MS-PRINCIPAL) and one component',
      { nameType: -128, sname: ['PROXY$'] },
      { realm: 'EXAMPLE.TEST', nameType: -128, components: ['PROXY$'] },
    ],
    [
      'a Windows-sized ticket (48,000 bytes of cipher text)',
      { ticketBytes: 48_000 },
      { realm: 'EXAMPLE.TEST', nameType: 3, components: ['HTTP', 'proxy.example.test'] },
    ],
  ])('reads %s', (_, options, expected) => {
    expect(readKrb5TokenTarget(rawKrb5(options))).toEqual(expected);
  });

  it("takes Microsoft's mistyped krb5 OID as the token's mechanism too", () => {
    expect(readKrb5TokenTarget(wrap(apReq(), Oids.msKrb5)).components).toEqual([
      'HTTP',
      'proxy.example.test',
    ]);
  });

  it('takes the most components and the longest name allowed', () => {
    const sname = Array.from({ length: MAX_NAME_COMPONENTS }, (_, i) => `c${i}`);
    expect(readKrb5TokenTarget(rawKrb5({ sname })).components).toEqual(sname);
    const host = 'h'.repeat(MAX_NAME_BYTES);
    expect(readKrb5TokenTarget(rawKrb5({ sname: ['HTTP', host] })).components).toEqual(['HTTP', host]);
  });
});

describe('readKrb5TokenTarget: refusals', () => {
  it('calls every token cut short at any byte TRUNCATED, never read or crashed on', () => {
    const token = rawKrb5();
    for (let end = 0; end < token.length; end++) {
      const error = refusal(token.subarray(0, end));
      expect([end, error.code]).toEqual([end, 'TRUNCATED']);
    }
  });

  it('answers every token with one byte changed with a target or a TokenError, nothing else', () => {
    const token = rawKrb5({ ticketBytes: 40 });
    for (let at = 0; at < token.length; at++) {
      for (const flip of [0x01, 0x80, 0xff]) {
        const changed = Buffer.from(token);
        changed[at] = (changed[at] as number) ^ flip;
        try {
          readKrb5TokenTarget(changed);
        } catch (error) {
          expect([at, flip, error]).toEqual([at, flip, expect.any(TokenError)]);
        }
      }
    }
  });

  it('refuses bytes after the token, and inside the AP-REQ after its last field', () => {
    expectRefused(Buffer.concat([rawKrb5(), Buffer.from([0])]), 'TRAILING_BYTES', /1 unexpected bytes/);
    const fields = [vno(5), tlv(0xa1, derInteger(14)), tlv(0xa2, tlv(0x03, Buffer.from([0, 0, 0, 0, 0])))];
    const longer = tlv(
      0x6e,
      tlv(0x30, ...fields, tlv(0xa3, ticket()), tlv(0xa4, Buffer.alloc(4)), tlv(0xa5)),
    );
    expectRefused(wrap(longer), 'TRAILING_BYTES', /after the end of the AP-REQ SEQUENCE/);
  });

  it('refuses a token over the size cap before reading it', () => {
    const big = Buffer.alloc(MAX_KRB5_TOKEN_BYTES + 1);
    expectRefused(
      big,
      'TOO_LONG',
      `the Kerberos token is ${MAX_KRB5_TOKEN_BYTES + 1} bytes, more than the ${MAX_KRB5_TOKEN_BYTES} allowed`,
    );
  });

  it('refuses a token of another mechanism, or a krb5 token that is not an AP-REQ', () => {
    expectRefused(
      wrap(apReq(), Oids.ntlmssp),
      'MALFORMED',
      `the mechanism token is for ${Oids.ntlmssp}, not Kerberos`,
    );
    expectRefused(
      wrap(apReq(), Oids.krb5, [0x02, 0x00]),
      'MALFORMED',
      'token ID 02 00, not an AP-REQ (01 00)',
    );
    // An AP-REP ([APPLICATION 15]) where the AP-REQ belongs.
    expectRefused(
      wrap(tlv(0x6f, tlv(0x30))),
      'MALFORMED',
      /expected the AP-REQ \(tag 0x6e\), found tag 0x6f/,
    );
  });

  it('refuses a Kerberos version or message type other than 5 and 14', () => {
    const apReqOf = (pvno: number, msgType: number) =>
      tlv(
        0x6e,
        tlv(
          0x30,
          vno(pvno),
          tlv(0xa1, derInteger(msgType)),
          tlv(0xa2, tlv(0x03, Buffer.alloc(5))),
          tlv(0xa3, ticket()),
          tlv(0xa4, Buffer.alloc(2)),
        ),
      );
    expectRefused(wrap(apReqOf(4, 14)), 'MALFORMED', "the AP-REQ's pvno is 4, not 5");
    expectRefused(wrap(apReqOf(5, 13)), 'MALFORMED', "the AP-REQ's msg-type is 13, not 14");
    const oldTicket = ticketOf(
      vno(4),
      realmField(generalString('EXAMPLE.TEST')),
      snameField(3, ['HTTP', 'p']),
      encPart,
    );
    expectRefused(wrap(apReq({}, oldTicket)), 'MALFORMED', "the AP-REQ's tkt-vno is 4, not 5");
  });

  it('refuses an sname with no components, or more than the cap', () => {
    expectRefused(rawKrb5({ sname: [] }), 'MALFORMED', 'the sname has no components');
    const many = Array.from({ length: MAX_NAME_COMPONENTS + 1 }, () => 'x');
    expectRefused(
      rawKrb5({ sname: many }),
      'MALFORMED',
      `the sname has more than ${MAX_NAME_COMPONENTS} components`,
    );
  });

  it('refuses a name or realm that is empty or longer than the cap', () => {
    const long = 'h'.repeat(MAX_NAME_BYTES + 1);
    expectRefused(
      rawKrb5({ sname: ['HTTP', long] }),
      'MALFORMED',
      `an sname component is ${MAX_NAME_BYTES + 1} bytes long (1 to ${MAX_NAME_BYTES} allowed)`,
    );
    expectRefused(rawKrb5({ sname: ['HTTP', ''] }), 'MALFORMED', 'an sname component is 0 bytes long');
    expectRefused(rawKrb5({ realm: '' }), 'MALFORMED', 'the ticket realm is 0 bytes long');
  });

  it('refuses a realm that is not a GeneralString, and an INTEGER of more than 4 bytes', () => {
    const ia5Realm = ticketOf(
      vno(5),
      realmField(tlv(0x16, Buffer.from('EXAMPLE.TEST'))),
      snameField(3, ['HTTP', 'p']),
      encPart,
    );
    expectRefused(
      wrap(apReq({}, ia5Realm)),
      'MALFORMED',
      /expected the ticket realm \(tag 0x1b\), found tag 0x16/,
    );
    const bigVno = ticketOf(
      tlv(0xa0, tlv(0x02, Buffer.from([0, 0, 0, 0, 5]))),
      realmField(generalString('R')),
      snameField(3, ['HTTP', 'p']),
      encPart,
    );
    expectRefused(wrap(apReq({}, bigVno)), 'MALFORMED', 'tkt-vno is an INTEGER of 5 bytes (1 to 4 allowed)');
  });

  it('refuses an indefinite length (BER, not DER) and a length of more than 4 bytes', () => {
    const indefinite = Buffer.concat([
      Buffer.from([0x60, 0x80]),
      oid(Oids.krb5),
      Buffer.from([1, 0]),
      apReq(),
      Buffer.from([0, 0]),
    ]);
    expectRefused(indefinite, 'MALFORMED', 'has an indefinite length (not DER)');
    const hugeLength = Buffer.concat([Buffer.from([0x60, 0x85, 0, 0, 0, 0, 1]), Buffer.from([0])]);
    expectRefused(hugeLength, 'MALFORMED', 'takes 5 bytes (at most 4)');
  });

  it('refuses a ticket without its enc-part and an AP-REQ without its authenticator', () => {
    const noEncPart = ticketOf(
      vno(5),
      realmField(generalString('EXAMPLE.TEST')),
      snameField(3, ['HTTP', 'p']),
    );
    expectRefused(wrap(apReq({}, noEncPart)), 'TRUNCATED', 'enc-part [3] is missing');
    const ap = apReq();
    // Drop the authenticator [4] (the last field) and fix up the two lengths around it.
    const inner = tlv(
      0x30,
      vno(5),
      tlv(0xa1, derInteger(14)),
      tlv(0xa2, tlv(0x03, Buffer.alloc(5))),
      tlv(0xa3, ticket()),
    );
    expect(ap.length).toBeGreaterThan(inner.length);
    expectRefused(
      wrap(Buffer.concat([Buffer.from([0x6e]), derLength(inner.length), inner])),
      'TRUNCATED',
      'authenticator [4] is missing',
    );
  });
});
