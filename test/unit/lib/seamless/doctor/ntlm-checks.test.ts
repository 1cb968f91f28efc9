import { describe, expect, it } from 'vitest';
import { unavailable } from '../../../../../lib/seamless/doctor/check-result.ts';
import { checkClientsUseFqdn, checkWinbind } from '../../../../../lib/seamless/doctor/ntlm-checks.ts';
import { CONTEXT } from './lab-setup.ts';

describe('clients-fqdn', () => {
  const T = Date.UTC(2026, 10, 23, 12, 0);
  const seen = (...clients: [string, number][]) => ({
    addresses: clients.length,
    clients: clients.map(([address, handshakes]) => ({ address, handshakes, lastSeen: T })),
  });

  it('passes when no handshake carried NTLM in the last day', () => {
    expect(checkClientsUseFqdn(CONTEXT, seen(), 3128)).toEqual({
      id: 'clients-fqdn',
      ok: true,
      status: 'ok',
      title: 'Clients address the proxy by its FQDN',
      detail: 'no handshake carried NTLM in the last day',
    });
  });

  it('names the addresses that used NTLM, with their counts, in a note with the FQDN (and port) to set', () => {
    const result = checkClientsUseFqdn(CONTEXT, seen(['10.0.0.7', 12], ['10.0.0.9', 1]), 3128);
    expect(result).toMatchObject({ id: 'clients-fqdn', ok: true, status: 'note' });
    expect(result.detail).toMatch(
      /^2 client addresses used NTLM in the last day: 10\.0\.0\.7 \(12 handshakes, last 2026-11-23T12:00:00\.000Z\), 10\.0\.0\.9 \(1 handshake, last 2026-11-23T12:00:00\.000Z\)\. Windows clients ask/,
    );
    expect(result.fix).toBe(
      "set the proxy as proxy.example.test:3128 in the clients' settings (group policy, PAC file), never as its IP address",
    );
  });

  it('says how many more there were than it names, and counts handshakes Squid sent no address for', () => {
    const result = checkClientsUseFqdn(CONTEXT, { ...seen(['10.0.0.7', 5], ['-', 4]), addresses: 30 });
    expect(result.detail).toContain('29 client addresses used NTLM in the last day: 10.0.0.7 (5 handshakes');
    expect(result.detail).toContain(', and 28 more; 4 NTLM handshakes from addresses not recorded');
  });

  it('is the advice alone when the record cannot be read', () => {
    expect(checkClientsUseFqdn(CONTEXT, unavailable('not recorded before the join'))).toMatchObject({
      status: 'note',
      ok: true,
      detail: expect.stringContaining('(which clients did is not known: not recorded before the join)'),
      fix: "set the proxy as proxy.example.test in the clients' settings (group policy, PAC file), never as its IP address",
    });
  });
});

describe('winbind', () => {
  it('passes when winbindd answers and the trust works; fails with the fix otherwise; skips when not asked', () => {
    expect(checkWinbind(CONTEXT, { running: true, trust: true })).toMatchObject({ status: 'ok' });
    expect(checkWinbind(CONTEXT, { running: false })).toMatchObject({
      status: 'fail',
      detail: 'winbindd does not answer `wbinfo -p`',
      fix: expect.stringContaining('doorman seamless enable'),
    });
    expect(checkWinbind(CONTEXT, { running: true, trust: 'NT_STATUS_ACCESS_DENIED' })).toMatchObject({
      status: 'fail',
      detail: 'winbindd runs, but the trust to EXAMPLE.TEST fails (wbinfo -t): NT_STATUS_ACCESS_DENIED',
      fix: expect.stringContaining('re-joins'),
    });
    expect(checkWinbind(CONTEXT, unavailable('not joined'))).toMatchObject({ status: 'skipped', ok: false });
  });
});
