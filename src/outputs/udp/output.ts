// `udp` and `rtp` outputs: the stream's output TS sent as datagrams of `packets-per-datagram`
// packets (RTP adds a 12-byte header, payload type 33 by default), unicast or multicast with
// `ttl` and `bind-if`. In bitrate-modes 2 and 3 the output is paced at a constant rate and
// padded with null packets.
import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import { num, str } from '../../config/spec-values.ts';
import type { OutputContext, StreamOutput } from '../../engine/output.ts';
import { ConstantRatePacer } from '../../mpegts/pacer.ts';
import { TS_PACKET_SIZE } from '../../mpegts/packet.ts';
import { isMulticast, resolveInterface } from '../../util/net.ts';

export const DEFAULT_PACKETS_PER_DATAGRAM = 7;
export const RTP_PAYLOAD_MP2T = 33;
const RTP_HEADER = 12;
const RTP_CLOCK_PER_MS = 90;

export class DatagramOutput implements StreamOutput {
  private sock: dgram.Socket | null = null;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private seq = randomInt(0, 0x10000);
  private readonly ssrc = randomInt(0, 0x7fffffff);
  private readonly perDatagram: number;
  private readonly rtp: boolean;
  private readonly payloadType: number;
  private pacer: ConstantRatePacer | null = null;
  private datagrams = 0;
  private bytes = 0;
  private errors = 0;
  private lastError = '';

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: OutputContext,
  ) {
    this.rtp = str(cfg, 'type') === 'rtp';
    this.perDatagram = Math.max(
      1,
      Math.min(7, num(cfg, 'packets-per-datagram', DEFAULT_PACKETS_PER_DATAGRAM)),
    );
    this.payloadType = num(cfg, 'rtp-payload-type', RTP_PAYLOAD_MP2T) & 0x7f;
  }

  async start(): Promise<void> {
    const address = str(this.cfg, 'address');
    const port = num(this.cfg, 'port', 0);
    if (!address || port < 1)
      throw new Error(`${str(this.cfg, 'type')} output: address and port are required`);
    const local = resolveInterface(str(this.cfg, 'bind-if'));
    const sock = dgram.createSocket({ type: 'udp4', reuseAddr: true });
    sock.on('error', (err) => {
      this.errors++;
      this.lastError = err.message;
    });
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind({ address: local || undefined, port: 0 }, () => {
        sock.off('error', reject);
        resolve();
      });
    });
    if (isMulticast(address)) {
      sock.setMulticastTTL(num(this.cfg, 'ttl', 1));
      sock.setMulticastLoopback(true);
      if (local) sock.setMulticastInterface(local);
    } else {
      sock.setTTL(Math.max(1, num(this.cfg, 'ttl', 64)));
    }
    sock.connect(port, address);
    await new Promise<void>((resolve) => sock.once('connect', () => resolve()));
    this.sock = sock;
    if (this.ctx.constantRate) {
      this.pacer = new ConstantRatePacer(
        this.ctx.clock,
        () => this.ctx.cbrRate(),
        (b) => this.sendNow(b),
      );
    }
  }

  packets(buf: Buffer): void {
    if (!this.sock) return;
    // Queued for pacing or for the socket's send: kept past this call, so copied (stream/bus.ts).
    const own = Buffer.from(buf);
    if (this.pacer) {
      this.pacer.push(own);
      return;
    }
    this.sendNow(own);
  }

  end(): void {
    this.pacer?.drain();
  }

  /** Cut into datagrams; a tail shorter than a full datagram waits for the next batch. */
  private sendNow(buf: Buffer): void {
    this.pending.push(buf);
    this.pendingBytes += buf.length;
    const full = TS_PACKET_SIZE * this.perDatagram;
    if (this.pendingBytes < full) return;
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    let o = 0;
    for (; o + full <= all.length; o += full) this.send(all.subarray(o, o + full));
    const rest = all.subarray(o);
    this.pending = rest.length ? [Buffer.from(rest)] : [];
    this.pendingBytes = rest.length;
  }

  private send(payload: Buffer): void {
    const s = this.sock;
    if (!s) return;
    let d = payload;
    if (this.rtp) {
      const h = Buffer.alloc(RTP_HEADER);
      h[0] = 0x80;
      h[1] = this.payloadType;
      h.writeUInt16BE(this.seq, 2);
      this.seq = (this.seq + 1) & 0xffff;
      h.writeUInt32BE(Math.floor(this.ctx.clock.monotonic() * RTP_CLOCK_PER_MS) >>> 0, 4);
      h.writeUInt32BE(this.ssrc, 8);
      d = Buffer.concat([h, payload]);
    }
    this.datagrams++;
    this.bytes += d.length;
    s.send(d, (err) => {
      if (err) {
        this.errors++;
        this.lastError = err.message;
      }
    });
  }

  async close(): Promise<void> {
    this.pacer?.stop();
    this.pacer = null;
    const s = this.sock;
    this.sock = null;
    if (!s) return;
    await new Promise<void>((resolve) => {
      try {
        s.close(() => resolve());
      } catch {
        resolve();
      }
    });
  }

  status(): Record<string, unknown> {
    return {
      type: str(this.cfg, 'type'),
      destination: `${str(this.cfg, 'address')}:${num(this.cfg, 'port', 0)}`,
      datagrams: this.datagrams,
      bytes: this.bytes,
      errors: this.errors,
      ...(this.pacer ? { cbr: this.pacer.status() } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
