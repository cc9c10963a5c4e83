// For the fleet tests: movable streams that each push UDP to a port here, and listeners on
// those ports that record every datagram's arrival and source port, so a test sees which node
// a destination heard, and when (two senders of one stream show at once).
import dgram from 'node:dgram';
import type { Teardown } from './server.ts';

/** Nodes `a` and `b` (both `role: origin`) claiming in etcd; one movable test-pattern stream per
 *  port, placed on that role and sent to 127.0.0.1:port. */
export function movableConfig(
  etcdUrl: string,
  ports: number[],
  opts: { leaseTtl: number; prefix: string },
): Record<string, unknown> {
  return {
    cluster: {
      nodes: { a: { labels: { role: 'origin' } }, b: { labels: { role: 'origin' } } },
      etcd: { endpoints: [etcdUrl], 'lease-ttl': opts.leaseTtl, prefix: opts.prefix },
    },
    stream: ports.map((port, i) => ({
      id: i + 1,
      'stream-name': `m${i + 1}`,
      pause: false,
      movable: true,
      placement: { role: 'origin' },
      input: [
        { type: 'test', width: 160, height: 90, 'video-bitrate': 100, 'enable-overlay': false },
      ],
      output: [{ type: 'udp', address: '127.0.0.1', port }],
    })),
  };
}

/** Datagrams per destination port: [arrival ms, source port]; closed on teardown. */
export async function listenUdp(
  t: Teardown,
  ports: number[],
): Promise<Map<number, [number, number][]>> {
  const seen = new Map<number, [number, number][]>();
  for (const port of ports) {
    const sock = dgram.createSocket('udp4');
    const list: [number, number][] = [];
    seen.set(port, list);
    sock.on('message', (_m, rinfo) => list.push([Date.now(), rinfo.port]));
    await new Promise<void>((r) => sock.bind(port, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => sock.close(() => r())));
  }
  return seen;
}
