// `udp` and `rtp` outputs: the stream's output TS sent as datagrams of `packets-per-datagram`
// packets (RTP adds a 12-byte header, payload type 33 by default), unicast or multicast with
// `ttl` and `bind-if`. In bitrate-modes 2 and 3 the output is paced at a constant rate and
// padded with null packets.
import { randomInt } from 'node:crypto';
import type dgram from 'node:dgram';
import { num, str } from '../../config/spec-values.ts';
import type { OutputContext, StreamOutput } from '../../engine/output.ts';
import { DatagramCutter } from '../../mpegts/datagrams.ts';
import { ConstantRatePacer } from '../../mpegts/pacer.ts';
import { RTP_FIXED_HEADER, writeRtpHeader } from '../../protocols/rtp/packet.ts';
import { openDatagramSocket } from '../datagram-socket.ts';

export const DEFAULT_PACKETS_PER_DATAGRAM = 7;
export const RTP_PAYLOAD_MP2T = 33;
const RTP_CLOCK_PER_MS = 90;

export class DatagramOutput implements StreamOutput {
  private sock: dgram.Socket | null = null;
  private seq = randomInt(0, 0x10000);
  private readonly ssrc = randomInt(0, 0x7fffffff);
  private readonly cutter: DatagramCutter;
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
    this.cutter = new DatagramCutter(
      Math.max(1, Math.min(7, num(cfg, 'packets-per-datagram', DEFAULT_PACKETS_PER_DATAGRAM))),
    );
    this.payloadType = num(cfg, 'rtp-payload-type', RTP_PAYLOAD_MP2T) & 0x7f;
  }

  async start(): Promise<void> {
    const address = str(this.cfg, 'address');
    const port = num(this.cfg, 'port', 0);
    if (!address || port < 1)
      throw new Error(`${str(this.cfg, 'type')} output: address and port are required`);
    const sock = await openDatagramSocket({
      address,
      port,
      bindIf: str(this.cfg, 'bind-if'),
      multicastTtl: num(this.cfg, 'ttl', 1),
      unicastTtl: Math.max(1, num(this.cfg, 'ttl', 64)),
      reuseAddr: true,
      onError: (err) => {
        this.errors++;
        this.lastError = err.message;
      },
    });
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
    this.cutter.push(buf, (d) => this.send(d));
  }

  private send(payload: Buffer): void {
    const s = this.sock;
    if (!s) return;
    let d = payload;
    if (this.rtp) {
      d = Buffer.allocUnsafe(RTP_FIXED_HEADER + payload.length);
      const ts = Math.floor(this.ctx.clock.monotonic() * RTP_CLOCK_PER_MS);
      writeRtpHeader(d, this.payloadType, this.seq, ts, this.ssrc);
      this.seq = (this.seq + 1) & 0xffff;
      payload.copy(d, RTP_FIXED_HEADER);
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
