import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../lib/clock.ts';
import { openDatabase, type Db } from '../../lib/store/database.ts';
import { SessionStore } from '../../lib/store/session-store.ts';
import { USER_FORMAT } from '../../squid-conf/conf-tokens.ts';
import { startExtraSquid, startLab, type ExtraSquid, type Lab } from '../harness/lab.ts';
import { createNetns, netnsName, removeStaleNetns, type Netns } from '../harness/netns.ts';
import { freePort } from '../harness/processes.ts';

/**
 * Portal sessions against the real programs: Squid 5.7 running the generated include, its session helpers,
 * `doorman serve` and the CLI on one session DB.
 *
 * The MAC: a client namespace joined to this host by a veth pair (test/harness/netns.ts) talks to a Squid port
 * on the host side of the pair, so Squid's `%>eui` is the client's real MAC from the host's neighbour table; a
 * second address of the client's, reached through the client as a router, is a routed client, for which Squid
 * sends `00:00:00:00:00:00`. An access log of the test's own records what Squid sent the helper.
 */
const PREFIX = 'dmx';

let lab: Lab;
let squid: ExtraSquid;
let client: Netns;
let clientMac: string;
let routed: string;
let proxy: string;
let db: Db;
let sessions: SessionStore;
const euiLog = () => join(lab.dir, 'eui', 'logs', 'eui.log');

beforeAll(async () => {
  removeStaleNetns(PREFIX);
  lab = await startLab({});
  client = createNetns(netnsName(PREFIX), []);
  const links = JSON.parse(
    execFileSync('ip', ['-n', client.name, '-j', 'link', 'show'], { encoding: 'utf8' }),
  ) as { link_type: string; address: string; ifname: string }[];
  const veth = links.find((l) => l.link_type === 'ether');
  if (veth === undefined) throw new Error(`no Ethernet interface in ${client.name}`);
  clientMac = veth.address.toLowerCase();
  routed = `100.66.${client.hostAddress.split('.')[2]}.2`;
  await client.exec('ip', ['addr', 'add', `${routed}/32`, 'dev', 'lo']);
  execFileSync('ip', ['route', 'add', `${routed}/32`, 'via', client.address, 'dev', client.hostInterface]);

  const port = await freePort();
  proxy = `http://${client.hostAddress}:${port}`;
  squid = await startExtraSquid(lab, 'eui', {
    ports: [`${client.hostAddress}:${port}`],
    before: [
      'logformat doorman_eui %>a %>eui %un %>Hs',
      `reply_header_add X-Doorman-User "${USER_FORMAT}"`,
      `access_log stdio:${join(lab.dir, 'eui', 'logs', 'eui.log')} doorman_eui`,
    ],
  });
  db = openDatabase(join(lab.dir, 'state', 'doorman.db'), { mustExist: true });
  sessions = new SessionStore(db, systemClock);
}, 60_000);

afterAll(async () => {
  if (db?.open) db.close();
  await squid?.stop();
  client?.remove();
  await lab?.stop();
});

/** A GET through the test's Squid from inside the client namespace, from `from`: status and the user. */
async function browse(from: string): Promise<{ status: number; user: string | undefined }> {
  const res = await client.exec(
    'curl',
    [
      '-sS',
      '-o',
      '/dev/null',
      '-D',
      '-',
      '--max-time',
      '15',
      '--interface',
      from,
      '-x',
      proxy,
      `${lab.originUrl}page`,
    ],
    { allowFailure: true },
  );
  const status = Number(/^HTTP\/1\.1 (\d{3})/m.exec(res.stdout)?.[1] ?? 0);
  const user = /^x-doorman-user: ([^\r\n]*)/im.exec(res.stdout)?.[1];
  return { status, user };
}

/** The `%>a %>eui %un %>Hs` lines Squid wrote for requests from `ip`. */
const logged = (ip: string): string[] =>
  (existsSync(euiLog()) ? readFileSync(euiLog(), 'utf8') : '')
    .split('\n')
    .filter((line) => line.startsWith(`${ip} `));

describe('Device Registration: the session helper gets the MAC from Squid', () => {
  it('an on-link IPv4 client is identified by its registered MAC', async () => {
    expect(await browse(client.address)).toEqual({ status: 403, user: '-' });
    expect(logged(client.address)).toEqual([`${client.address} ${clientMac} - 403`]);

    sessions.start({ key: { kind: 'mac', value: clientMac }, username: 'carol', source: 'registration' });
    expect(await browse(client.address)).toEqual({ status: 200, user: 'carol' });
    expect(logged(client.address).at(-1)).toBe(`${client.address} ${clientMac} carol 200`);
  });

  it('a routed client (Squid sends zeros) is not identified, not even by a registration of the zero MAC', async () => {
    sessions.start({
      key: { kind: 'mac', value: '00:00:00:00:00:00' },
      username: 'nobody',
      source: 'registration',
    });
    expect(await browse(routed)).toEqual({ status: 403, user: '-' });
    expect(logged(routed)).toEqual([`${routed} 00:00:00:00:00:00 - 403`]);
  });
});

describe('the CLI applies changes to the sessions already open', () => {
  it('device-group set and remove end the agreements of devices left outside every active group, and say how many', async () => {
    await lab.cli(
      'device-group',
      'add',
      '--name',
      'Lab',
      '--cidr',
      `${client.address}/32`,
      '--cidr',
      '10.77.0.0/16',
    );
    await lab.cli('device-group', 'add', '--name', 'Annex', '--cidr', '10.78.0.0/16');
    const agree = (ip: string, group: string) =>
      sessions.start({ key: { kind: 'ip', value: ip }, username: `agreement:${group}`, source: 'agreement' });
    agree(client.address, 'Lab');
    agree('10.77.0.5', 'Lab');
    agree('10.78.0.5', 'Annex');
    expect(await browse(client.address)).toEqual({ status: 200, user: 'agreement:Lab' });

    const narrowed = await lab.cli('device-group', 'set', '--name', 'Lab', '--cidr', '10.77.0.0/16');
    expect(narrowed.stdout).toContain(
      'ended 1 agreement session of devices no longer in an active Device Group',
    );
    // The helper sees the change at once: the device is back to its registration (carol, above).
    expect(await browse(client.address)).toEqual({ status: 200, user: 'carol' });

    const off = await lab.cli('device-group', 'set', '--name', 'Annex', '--inactive');
    expect(off.stdout).toContain('ended 1 agreement session of');
    const removed = await lab.cli('device-group', 'remove', '--name', 'Lab');
    expect(removed.stdout).toContain('ended 1 agreement session of');
    const again = await lab.cli('device-group', 'remove', '--name', 'Annex');
    expect(again.stdout).toContain('ended 0 agreement sessions of');
    expect(sessions.list().filter((s) => s.source === 'agreement')).toEqual([]);
  });

  it('portal set gives open portal sessions the new hard timeout at once: one older than it ends', async () => {
    sessions.end({ kind: 'mac', value: clientMac });
    sessions.end({ kind: 'mac', value: '00:00:00:00:00:00' });
    // Signed in two hours ago (the splash page's clock then), no limits yet.
    const earlier = new SessionStore(db, new ManualClock(Date.now() - 2 * 3_600_000));
    earlier.start({ key: { kind: 'ip', value: client.address }, username: 'dave', source: 'portal' });
    expect(await browse(client.address)).toEqual({ status: 200, user: 'dave' });

    const set = await lab.cli('portal', 'set', '--hard-minutes', '60');
    expect(set.stdout).toMatch(/^1 current portal session\(s\) follow the timeouts/m);
    expect(await browse(client.address)).toEqual({ status: 403, user: '-' });
    expect(sessions.find({ kind: 'ip', value: client.address })).toBeUndefined();
  });
});
