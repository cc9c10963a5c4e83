// A lossy UDP relay for transport tests (the kernel here has no netem): it sits between a peer
// and sluice and forwards datagrams both ways — the return path carries RIST NACKs and SRT ACKs —
// dropping a fraction at random, holding some back a few ms (reordering) and adding a delay.
// The PRNG is seeded, so a run's drop/reorder pattern is the same every time. Bounded: it keeps
// at most `maxHeld` datagrams in flight and stops with the test (teardown).
//
//   client ──▶ relay.port ──▶ target          (forward: the sender's data, handshakes)
//   client ◀── relay.port ◀── target          (return: NACKs, ACKs, keep-alives)
//
// Each side has its own socket: `port` faces the client (who sends to it); a second socket
// talks to the target, so the target sees the relay as its peer. The first address that sends
// to `port` is taken as the client (and the one every returned datagram goes to). Simple-profile
// RIST uses two ports (even for data, odd for RTCP): make one relay per port.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';

/** Receive buffer of the relay's sockets, bytes. */
const RECV_BUFFER = 4 << 20;

export interface LossyRelayOptions {
  /** Where datagrams from the client go (sluice's port, or a peer's). */
  targetPort: number;
  targetHost?: string;
  /** Port the relay listens on for the client; 0 = any free port. */
  listenPort?: number;
  /** Fraction of datagrams dropped, each direction, 0..1. */
  loss?: number;
  /** Fraction of (kept) datagrams held back by `reorderMs` so later ones overtake them. */
  reorder?: number;
  reorderMs?: number;
  /** Delay added to every datagram (one way), ms. */
  delayMs?: number;
  /** Apply loss/reorder to the return path too (default true). */
  lossyReturn?: boolean;
  /** PRNG seed (same seed, same pattern). */
  seed?: number;
  /** Datagrams in flight (delayed or held) at most; beyond that new ones are dropped and counted. */
  maxHeld?: number;
}

export interface LossyRelayStats {
  forwarded: number;
  returned: number;
  /** Dropped on purpose, both directions, and per direction. */
  dropped: number;
  droppedForward: number;
  droppedReturn: number;
  reordered: number;
  overflow: number;
  /** Bytes offered to the relay (before any drop), per direction: what each side sent. */
  bytesForward: number;
  bytesReturn: number;
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class LossyRelay {
  readonly stats: LossyRelayStats = {
    forwarded: 0,
    returned: 0,
    dropped: 0,
    droppedForward: 0,
    droppedReturn: 0,
    reordered: 0,
    overflow: 0,
    bytesForward: 0,
    bytesReturn: 0,
  };
  private front!: Socket;
  private back!: Socket;
  private client: RemoteInfo | undefined;
  // One PRNG per direction: the pattern of each does not depend on how the two interleave.
  private readonly randForward: () => number;
  private readonly randReturn: () => number;
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  port = 0;

  constructor(private readonly opts: LossyRelayOptions) {
    this.randForward = seededRandom(opts.seed ?? 1);
    this.randReturn = seededRandom((opts.seed ?? 1) ^ 0x5bd1e995);
  }

  async start(): Promise<this> {
    // Room for a burst while the one event loop is busy forwarding the other way (the default
    // 208 KB dropped 16 of 500 four-byte datagrams here); the kernel caps it at rmem_max.
    this.front = createSocket({ type: 'udp4', recvBufferSize: RECV_BUFFER });
    this.back = createSocket({ type: 'udp4', recvBufferSize: RECV_BUFFER });
    this.front.on('message', (msg, rinfo) => {
      if (
        !this.client ||
        this.client.port !== rinfo.port ||
        this.client.address !== rinfo.address
      ) {
        this.client = rinfo;
      }
      this.pass(msg, true);
    });
    this.back.on('message', (msg) => this.pass(msg, false));
    const bind = (s: Socket, port: number) =>
      new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.bind(port, '127.0.0.1', () => {
          s.off('error', reject);
          s.on('error', () => {}); // ICMP port unreachable while a side restarts: not fatal
          resolve();
        });
      });
    await bind(this.front, this.opts.listenPort ?? 0);
    await bind(this.back, 0);
    this.port = this.front.address().port;
    return this;
  }

  private pass(msg: Buffer, forward: boolean): void {
    if (this.closed) return;
    if (forward) this.stats.bytesForward += msg.length;
    else this.stats.bytesReturn += msg.length;
    const lossy = forward || this.opts.lossyReturn !== false;
    const rand = forward ? this.randForward : this.randReturn;
    if (lossy && rand() < (this.opts.loss ?? 0)) {
      this.stats.dropped++;
      if (forward) this.stats.droppedForward++;
      else this.stats.droppedReturn++;
      return;
    }
    let wait = this.opts.delayMs ?? 0;
    if (lossy && rand() < (this.opts.reorder ?? 0)) {
      wait += this.opts.reorderMs ?? 5;
      this.stats.reordered++;
    }
    const send = () => {
      if (this.closed) return;
      if (forward) {
        this.stats.forwarded++;
        this.back.send(msg, this.opts.targetPort, this.opts.targetHost ?? '127.0.0.1');
      } else if (this.client) {
        this.stats.returned++;
        this.front.send(msg, this.client.port, this.client.address);
      }
    };
    if (wait <= 0) {
      send();
      return;
    }
    if (this.timers.size >= (this.opts.maxHeld ?? 10_000)) {
      this.stats.overflow++;
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      send();
    }, wait);
    this.timers.add(timer);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.front.close();
    this.back.close();
  }
}

/** Start a relay that closes on the test's teardown. */
export async function lossyRelay(
  t: { teardown(fn: () => unknown): void },
  opts: LossyRelayOptions,
): Promise<LossyRelay> {
  const r = await new LossyRelay(opts).start();
  t.teardown(() => r.close());
  return r;
}
