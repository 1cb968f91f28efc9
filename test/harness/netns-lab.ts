import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normaliseIp } from '../../lib/net/address.ts';
import { createNetns, isAlive, netnsName, netnsPids, removeStaleNetns, type Netns } from './netns.ts';
import { waitForPort, type Started } from './processes.ts';
import { run, type RunOptions, type RunResult } from './run.ts';

/**
 * The captive portal's network: intercepted clients in namespaces of their own, an origin server in another,
 * and this (the host) namespace as the proxy, where the lab's Squid and `doorman serve` run and where an
 * nftables table of the test's own REDIRECTs the clients' port 80 to Squid's intercept port:
 *
 *   client  10.213.C.2 ==veth== 10.213.C.1  host (Squid, doorman serve, slapd on 127.0.0.1)  10.213.O.1 ==veth== 10.213.O.2  origin :80
 *           fd13:213:C::2               fd13:213:C::1                                       fd13:213:O::1           fd13:213:O::2
 *   routed  10.214.R.2 ==veth== 10.214.R.1  router  10.213.R.2 ==veth== 10.213.R.1  host
 *
 * The client is on the proxy's link (the host's neighbour table has its MAC); the routed client reaches the
 * host through the router, so the host sees the router's MAC, never the client's (Squid's %>eui is zeros).
 * Clients get routes to the origin and to the client link's host address (where Doorman listens, so the
 * splash page is reached directly: only port 80 is redirected) and nothing else: no default route, and the
 * host does not forward, so a browser's own traffic goes nowhere.
 */
export interface PortalNet {
  /** On the proxy's link. */
  readonly client: Netns;
  /** The client's MAC as the host's neighbour table shows it (lower case, colons). */
  readonly clientMac: string;
  /** The client's IPv6 address (static, on the same link: the host learns its MAC by NDP). */
  readonly client6: string;
  /** Another subnet, behind `router`. */
  readonly routed: InnerNetns;
  readonly router: Netns;
  readonly origin: Netns;
  /** `http://10.213.O.2/`: answers 200 with an HTML page naming its path, `/generate_204` with 204. */
  readonly originUrl: string;
  /** The same server over IPv6: `http://[fd13:213:O::2]/`. */
  readonly origin6Url: string;
  /** The address Doorman listens on for the clients (the client link's host side). */
  readonly proxyAddress: string;
  /** REDIRECT both clients' tcp/80 (on their links into the host) to `port`, Squid's intercept port. */
  redirect(port: number): void;
  /** curl inside a client namespace; never rejects on an HTTP status. */
  curl(from: Netns | InnerNetns, args: readonly string[]): Promise<RunResult>;
  /** Stop the origin, delete the nftables table and every namespace. */
  remove(): Promise<void>;
}

/** A namespace reached only through another one (the routed client). */
export interface InnerNetns {
  readonly name: string;
  readonly address: string;
  exec(command: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
  remove(): void;
}

const TABLE_PREFIX = 'doorman_portal_';

/** Remove what a killed earlier run of this process's tests left: namespaces `prefix*`, nft tables. */
export function removeStalePortalNet(prefix: string): void {
  removeStaleNetns(prefix);
  let tables: string;
  try {
    tables = execFileSync('nft', ['list', 'tables', 'inet'], { encoding: 'utf8' });
  } catch {
    return;
  }
  for (const [, pid] of tables.matchAll(new RegExp(`^table inet ${TABLE_PREFIX}(\\d+)$`, 'gm'))) {
    if (isAlive(Number(pid))) continue;
    execFileSync('nft', ['delete', 'table', 'inet', `${TABLE_PREFIX}${pid}`], { stdio: 'ignore' });
  }
}

export async function createPortalNet(prefix: string): Promise<PortalNet> {
  const made: Array<{ remove(): void }> = [];
  let originServer: Started | undefined;
  let table: string | undefined;
  // Named after the client namespace, so that removeStaleNetns removes it with the namespace.
  let dir: string | undefined;
  const remove = async () => {
    if (table !== undefined) execFileSync('nft', ['delete', 'table', 'inet', table], { stdio: 'ignore' });
    await originServer?.stop();
    for (const ns of made.reverse()) ns.remove();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const client = createNetns(netnsName(prefix), []);
    made.push(client);
    dir = join(tmpdir(), `${client.name}-origin`);
    const origin = createNetns(netnsName(prefix), []);
    made.push(origin);
    const router = createNetns(netnsName(prefix), []);
    made.push(router);
    const routed = createInnerNetns(netnsName(prefix), router);
    made.push(routed);

    // Routes to the origin and to Doorman's address, nothing else.
    const targets = [`${origin.address}/32`, `${client.hostAddress}/32`];
    for (const to of targets) {
      ipSync('-n', client.name, 'route', 'add', to, 'via', client.hostAddress);
      ipSync('-n', routed.name, 'route', 'add', to, 'via', routed.gateway);
      ipSync('-n', router.name, 'route', 'add', to, 'via', router.hostAddress);
    }
    // IPv6 on the client's and the origin's links (nodad: usable at once, no duplicate address detection wait).
    const [client6, clientHost6] = addIpv6(client);
    const [origin6] = addIpv6(origin);
    ipSync('-n', client.name, '-6', 'route', 'add', `${origin6}/128`, 'via', clientHost6);

    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o755);
    const script = join(dir, 'origin.mjs');
    writeFileSync(script, ORIGIN);
    originServer = origin.spawn(process.execPath, [script]);
    await waitForPort(origin.address, 80, 10_000, originServer.child);

    // The MAC: the host learns it from the client's first packet; read it from the client's own link.
    const clientMac = vethOf(client).address.toLowerCase();

    return {
      client,
      clientMac,
      client6,
      routed,
      router,
      origin,
      originUrl: `http://${origin.address}/`,
      origin6Url: `http://[${origin6}]/`,
      proxyAddress: client.hostAddress,
      redirect(port) {
        table = `${TABLE_PREFIX}${process.pid}`;
        execFileSync('nft', ['-f', '-'], {
          input: [
            `table inet ${table} {`,
            '  chain pre {',
            '    type nat hook prerouting priority dstnat; policy accept;',
            // Only what arrives on the clients' links: Squid's own outgoing connections never pass here.
            `    iifname { "${client.hostInterface}", "${router.hostInterface}" } tcp dport 80 redirect to :${port}`,
            '  }',
            '}',
            '',
          ].join('\n'),
        });
      },
      curl: (from, args) => from.exec('curl', ['-sS', '--max-time', '20', ...args], { allowFailure: true }),
      remove,
    };
  } catch (error) {
    await remove();
    throw error;
  }
}

/**
 * A namespace linked only to `via` (no host link): 10.214.N.2/30 inside, 10.214.N.1/30 on `via`'s side, N
 * being `via`'s own 10.213.N subnet (unique on this host). `via` forwards, and the host routes the subnet to it.
 */
function createInnerNetns(name: string, via: Netns): InnerNetns & { gateway: string } {
  const n = via.address.split('.')[2];
  const address = `10.214.${n}.2`;
  const gateway = `10.214.${n}.1`;
  const remove = () => {
    for (const pid of netnsPids(name)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    try {
      execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
    } catch {
      // never made
    }
  };
  try {
    ipSync('netns', 'add', name);
    ipSync('-n', name, 'link', 'set', 'lo', 'up');
    ipSync('link', 'add', 'eth0', 'netns', name, 'type', 'veth', 'peer', 'name', 'lan0', 'netns', via.name);
    ipSync('-n', name, 'addr', 'add', `${address}/30`, 'dev', 'eth0');
    ipSync('-n', via.name, 'addr', 'add', `${gateway}/30`, 'dev', 'lan0');
    ipSync('-n', name, 'link', 'set', 'eth0', 'up');
    ipSync('-n', via.name, 'link', 'set', 'lan0', 'up');
    execFileSync('ip', ['netns', 'exec', via.name, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    // Gone with the router's veth when it is removed.
    ipSync('route', 'add', `10.214.${n}.0/30`, 'via', via.address, 'dev', via.hostInterface);
  } catch (error) {
    remove();
    throw error;
  }
  return {
    name,
    address,
    gateway,
    exec: (command, args, options) => run('ip', ['netns', 'exec', name, command, ...args], options),
    remove,
  };
}

/** fd13:213:N::2/64 inside a namespace and fd13:213:N::1/64 on its host side (N: its 10.213.N subnet). */
function addIpv6(ns: Netns): [inside: string, host: string] {
  // In their one written form (RFC 5952, as Doorman stores them): a third octet of 0 makes `fd13:213::2`.
  const n = ns.address.split('.')[2];
  const inside = normaliseIp(`fd13:213:${n}::2`) as string;
  const host = normaliseIp(`fd13:213:${n}::1`) as string;
  const inner = vethOf(ns).ifname;
  ipSync('-n', ns.name, 'addr', 'add', `${inside}/64`, 'dev', inner, 'nodad');
  ipSync('addr', 'add', `${host}/64`, 'dev', ns.hostInterface, 'nodad');
  return [inside, host];
}

/** A namespace's own end of its veth pair (its one link but lo). */
function vethOf(ns: Netns): { ifname: string; address: string } {
  const links = JSON.parse(
    execFileSync('ip', ['-j', '-n', ns.name, 'link', 'show'], { encoding: 'utf8' }),
  ) as Array<{ ifname: string; address: string }>;
  return links.find((l) => l.ifname !== 'lo') ?? { ifname: '', address: '' };
}

function ipSync(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** The origin server (run by this test's Node inside the origin namespace). */
const ORIGIN = `import { createServer } from 'node:http';
const esc = (s) => s.replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
createServer((req, res) => {
  req.resume();
  const path = new URL(req.url, 'http://origin').pathname;
  if (path === '/generate_204') return void res.writeHead(204).end();
  if (path === '/favicon.ico') return void res.writeHead(404).end();
  res
    .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
    .end('<!doctype html><meta name="viewport" content="width=device-width"><title>Origin</title>' +
      '<h1 id="origin">origin ' + esc(path) + '</h1>');
}).listen(80, '::');
`;
