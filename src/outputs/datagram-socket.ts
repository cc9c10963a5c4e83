// The connected UDP socket the datagram outputs (udp, rtp, prompeg) send from: bound on
// `bind-if` (any local address when empty) to a free port, multicast TTL, loopback and
// interface set for a group, connected to the destination. Errors after the set-up go to
// `onError` (counted by the output); errors during it reject.
import dgram from 'node:dgram';
import { isMulticast, resolveInterface } from '../util/net.ts';

export interface DatagramSocketOptions {
  address: string;
  port: number;
  /** Interface name or local IPv4 address; '' = any. */
  bindIf: string;
  /** TTL for a multicast destination. */
  multicastTtl: number;
  /** TTL for a unicast destination; undefined keeps the system's. */
  unicastTtl?: number;
  reuseAddr?: boolean;
  onError: (err: Error) => void;
}

export async function openDatagramSocket(o: DatagramSocketOptions): Promise<dgram.Socket> {
  const local = resolveInterface(o.bindIf);
  const sock = dgram.createSocket({ type: 'udp4', reuseAddr: o.reuseAddr === true });
  sock.on('error', o.onError);
  const settle = (start: (done: () => void) => void) =>
    new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      start(() => {
        sock.off('error', reject);
        resolve();
      });
    });
  try {
    await settle((done) => sock.bind({ address: local || undefined, port: 0 }, done));
    if (isMulticast(o.address)) {
      sock.setMulticastTTL(o.multicastTtl);
      sock.setMulticastLoopback(true);
      if (local) sock.setMulticastInterface(local);
    } else if (o.unicastTtl !== undefined) {
      sock.setTTL(o.unicastTtl);
    }
    await settle((done) => sock.connect(o.port, o.address, done));
  } catch (err) {
    sock.close();
    throw err;
  }
  return sock;
}
