import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findMac } from '../../lib/net/find-mac.ts';
import { createNetns, netnsName, removeStaleNetns, type Netns } from '../harness/netns.ts';

/**
 * findMac against the real kernel: a client namespace joined to this host by a veth pair (test/harness/netns.ts)
 * talks to an HTTP server of the test's own over IPv4, a ULA IPv6 address and a link-local one; the host's
 * neighbour table then has the client, and findMac (the real `ip`, no injected runner) must give the MAC the
 * client's interface really has. A second address of the client's, reached through the client as a router, is
 * the routed client Squid gives `00:00:00:00:00:00` for.
 */
const PREFIX = 'dmn';
let client: Netns;
let server: Server;
let port: number;
let clientMac: string;
let inner: string;
let n: number;
const ula = (host: number) => `fd5e:d00d:0:${n.toString(16)}::${host}`;
const linkLocal = (host: number) => `fe80::d00d:${n.toString(16)}:${host}`;
const routedClient = () => `100.64.${n}.2`;

const hostIp = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

beforeAll(async () => {
  removeStaleNetns(PREFIX);
  client = createNetns(netnsName(PREFIX), []);
  n = Number(client.hostAddress.split('.')[2]);

  // The client's real interface and MAC, as the kernel reports them.
  const links = JSON.parse(
    execFileSync('ip', ['-n', client.name, '-j', 'link', 'show'], { encoding: 'utf8' }),
  ) as {
    ifname: string;
    link_type: string;
    address: string;
  }[];
  const veth = links.find((l) => l.link_type === 'ether');
  if (veth === undefined)
    throw new Error(`no Ethernet interface in ${client.name}: ${JSON.stringify(links)}`);
  inner = veth.ifname;
  clientMac = veth.address;

  // nodad: usable at once, without waiting for duplicate address detection.
  for (const [address, len] of [
    [ula(1), 64],
    [linkLocal(1), 64],
  ] as const) {
    hostIp('addr', 'add', `${address}/${len}`, 'dev', client.hostInterface, 'nodad');
  }
  for (const address of [ula(2), linkLocal(2)]) {
    await client.exec('ip', ['addr', 'add', `${address}/64`, 'dev', inner, 'nodad']);
  }
  // The routed client: an address on the namespace's loopback, which this host reaches through the namespace.
  await client.exec('ip', ['addr', 'add', `${routedClient()}/32`, 'dev', 'lo']);
  hostIp('route', 'add', `${routedClient()}/32`, 'via', client.address, 'dev', client.hostInterface);

  server = createServer((_req, res) => res.end('hello'));
  await new Promise<void>((resolve) => server.listen({ host: '::', port: 0, ipv6Only: false }, resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  // The veth pair goes with the namespace, and with it the host's addresses and route on it.
  client?.remove();
});

/** An HTTP request from the client to this host, so that each side's neighbour table learns the other. */
async function talk(url: string, ...extra: string[]): Promise<void> {
  const res = await client.exec('curl', ['-sS', '--max-time', '10', '-g', ...extra, url], {
    allowFailure: true,
  });
  expect(res.stdout, res.stderr).toBe('hello');
}

describe('findMac on a real neighbour table', () => {
  it('finds an IPv4 client’s MAC (ARP)', async () => {
    await talk(`http://${client.hostAddress}:${port}/`);
    expect(await findMac(client.address)).toEqual({
      ok: true,
      ip: client.address,
      mac: clientMac,
      // The kernel gives a veth a random MAC with the U/L bit set, like a phone's private address.
      locallyAdministered: true,
      source: 'neighbour-table',
      dev: client.hostInterface,
    });
  });

  it('finds an IPv6 client’s MAC (NDP), whatever EUI-64 Squid made up for it', async () => {
    await talk(`http://[${ula(1)}]:${port}/`);
    for (const squidEui of [undefined, '00-00-00-00-00-00-00-00', '02:00:00:00:00:01']) {
      expect(await findMac(ula(2), squidEui === undefined ? {} : { squidEui })).toEqual({
        ok: true,
        ip: ula(2),
        mac: clientMac,
        locallyAdministered: true,
        source: 'neighbour-table',
        dev: client.hostInterface,
      });
    }
    // Any spelling of the address.
    expect(await findMac(ula(2).toUpperCase().replace('::', ':0:0:0:'))).toMatchObject({
      ok: true,
      mac: clientMac,
    });
  });

  it('finds a link-local IPv6 client’s MAC', async () => {
    await talk(`http://[${linkLocal(1)}%25${inner}]:${port}/`);
    expect(await findMac(linkLocal(2))).toMatchObject({
      ok: true,
      mac: clientMac,
      dev: client.hostInterface,
    });
  });

  it('says a routed client (Squid’s 00:00:00:00:00:00) is not on this host’s network, naming the router', async () => {
    await talk(`http://${client.hostAddress}:${port}/`, '--interface', routedClient());
    const answer = await findMac(routedClient(), { squidEui: '00:00:00:00:00:00' });
    expect(answer).toEqual({
      ok: false,
      reason: 'not-on-link',
      message:
        `${routedClient()} is not on this host's own network (subnet/VLAN): it is reached through router ` +
        `${client.address} (on "${client.hostInterface}"), and its packets arrive with the router's MAC ` +
        'address, not its own, so its MAC address cannot be known here (only devices on a network this host is ' +
        'directly attached to can be)',
    });
    // The router itself is in the table, with the MAC that the routed client's packets carried.
    expect(await findMac(client.address)).toMatchObject({ ok: true, mac: clientMac });
  });

  it('says an address on no network of this host’s is not on link (IPv4 and IPv6)', async () => {
    for (const address of ['198.51.100.7', '2001:db8::7']) {
      const answer = await findMac(address);
      expect(answer).toMatchObject({ ok: false, reason: 'not-on-link' });
      // Through this host's default route, or (on a machine without one) no route at all.
      expect(answer.ok ? '' : answer.message).toContain(`${address} is not on `);
    }
  });

  it('says an on-link address nobody has used has no entry', async () => {
    expect(await findMac(ula(99))).toEqual({
      ok: false,
      reason: 'no-entry',
      message:
        `${ula(99)} is on this host's network (on "${client.hostInterface}"), but the kernel's neighbour table ` +
        'has no entry for it: the device has not exchanged packets with this host lately',
    });
  });

  it('says this host’s own addresses are local', async () => {
    for (const address of [client.hostAddress, ula(1), '127.0.0.1', '::1']) {
      expect(await findMac(address)).toMatchObject({ ok: false, reason: 'local' });
    }
  });
});
