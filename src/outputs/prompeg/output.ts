// `prompeg` output: the stream as RTP (7 TS packets a datagram by default) with SMPTE 2022-1 FEC:
// column FEC to port + 2 and row FEC to port + 4 (standard receivers read the media alone and
// ignore the rest), or with `prompeg-multiplexing` all three to `port`. L × D from
// `prompeg-columns` × `prompeg-rows`, 1-D with `prompeg-row-fec` false; the non-standard
// `prompeg-header-xor` and `passphrase` as the input has them (docs/transports.md).
import { randomInt } from 'node:crypto';
import type dgram from 'node:dgram';
import { bool, int, str } from '../../config/spec-values.ts';
import type { TransportMetrics } from '../../engine/input.ts';
import type { OutputContext, StreamOutput } from '../../engine/output.ts';
import { DatagramCutter } from '../../mpegts/datagrams.ts';
import { ConstantRatePacer } from '../../mpegts/pacer.ts';
import { PayloadCipher } from '../../protocols/fec/cipher.ts';
import { checkMatrix, FecEncoder } from '../../protocols/fec/encoder.ts';
import { FEC_PAYLOAD_TYPE, RTP_HEADER_SIZE } from '../../protocols/fec/header.ts';
import { writeRtpHeader } from '../../protocols/rtp/packet.ts';
import { openDatagramSocket } from '../datagram-socket.ts';

const RTP_PAYLOAD_MP2T = 33;
const RTP_CLOCK_PER_MS = 90;
/** FEC flows on port + 2 (column) and port + 4 (row), as the input expects. */
const COLUMN_PORT_OFFSET = 2;
const ROW_PORT_OFFSET = 4;

type Flow = 'media' | 'column' | 'row';

export class PrompegOutput implements StreamOutput {
  private socks: Partial<Record<Flow, dgram.Socket>> = {};
  private encoder: FecEncoder | null = null;
  private cipher: PayloadCipher | null = null;
  private pacer: ConstantRatePacer | null = null;
  private seq = randomInt(0, 0x10000);
  private readonly ssrc = randomInt(1, 0x7fffffff);
  private readonly cutter: DatagramCutter;
  private readonly payloadType: number;
  private readonly multiplexing: boolean;
  private readonly sent = { media: 0, column: 0, row: 0 };
  private bytes = 0;
  private errors = 0;
  private lastError = '';

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: OutputContext,
  ) {
    this.cutter = new DatagramCutter(Math.max(1, Math.min(7, int(cfg, 'packets-per-datagram', 7))));
    this.payloadType = int(cfg, 'rtp-payload-type', RTP_PAYLOAD_MP2T) & 0x7f;
    this.multiplexing = bool(cfg, 'prompeg-multiplexing', false);
  }

  async start(): Promise<void> {
    const address = str(this.cfg, 'address');
    const port = int(this.cfg, 'port', 0);
    if (!address || port < 1) throw new Error('prompeg output: address and port are required');
    if (!this.multiplexing && port + ROW_PORT_OFFSET > 65535)
      throw new Error(`prompeg output: port ${port} + 4 is beyond 65535 (row FEC on port + 4)`);
    const l = int(this.cfg, 'prompeg-columns', 5);
    const d = int(this.cfg, 'prompeg-rows', 5);
    const bad = checkMatrix(l, d);
    if (bad) throw new Error(`prompeg output: ${bad}`);
    if (this.multiplexing && this.payloadType === FEC_PAYLOAD_TYPE)
      throw new Error(
        `prompeg output: rtp-payload-type ${FEC_PAYLOAD_TYPE} is the FEC's: multiplexed media must use another`,
      );
    const passphrase = str(this.cfg, 'passphrase');
    if (passphrase) this.cipher = new PayloadCipher(passphrase);
    this.socks.media = await this.connect(address, port);
    if (!this.multiplexing) {
      this.socks.column = await this.connect(address, port + COLUMN_PORT_OFFSET);
      this.socks.row = await this.connect(address, port + ROW_PORT_OFFSET);
    }
    this.encoder = new FecEncoder(
      {
        l,
        d,
        rows: bool(this.cfg, 'prompeg-row-fec', true),
        xor: int(this.cfg, 'prompeg-header-xor', 0),
      },
      (kind, dg) => this.sendOn(kind, dg),
    );
    if (this.ctx.constantRate) {
      this.pacer = new ConstantRatePacer(
        this.ctx.clock,
        () => this.ctx.cbrRate(),
        (b) => this.cut(b),
      );
    }
  }

  private connect(address: string, port: number): Promise<dgram.Socket> {
    return openDatagramSocket({
      address,
      port,
      bindIf: str(this.cfg, 'bind-if'),
      multicastTtl: int(this.cfg, 'ttl', 1),
      onError: (err) => {
        this.errors++;
        this.lastError = err.message;
      },
    });
  }

  packets(buf: Buffer): void {
    if (!this.encoder) return;
    // Kept past this call (a datagram's tail, the pacing queue): copied (engine/bus.ts).
    const own = Buffer.from(buf);
    if (this.pacer) this.pacer.push(own);
    else this.cut(own);
  }

  end(): void {
    this.pacer?.drain();
  }

  /** Cut into datagrams of equal size (FEC wants them so); a shorter tail waits. */
  private cut(buf: Buffer): void {
    this.cutter.push(buf, (d) => this.sendMedia(d));
  }

  private sendMedia(payload: Buffer): void {
    const d = Buffer.allocUnsafe(RTP_HEADER_SIZE + payload.length);
    const ts = Math.floor(this.ctx.clock.monotonic() * RTP_CLOCK_PER_MS) >>> 0;
    writeRtpHeader(d, this.payloadType, this.seq, ts, this.ssrc);
    if (this.cipher) this.cipher.apply(this.ssrc, ts, this.seq, payload).copy(d, RTP_HEADER_SIZE);
    else payload.copy(d, RTP_HEADER_SIZE);
    this.seq = (this.seq + 1) & 0xffff;
    this.sendOn('media', d);
    this.encoder?.push(d); // FEC over the bytes on the wire (encrypted, when encrypting)
  }

  private sendOn(flow: Flow, d: Buffer): void {
    const s = this.socks[flow] ?? this.socks.media;
    if (!s) return;
    this.sent[flow]++;
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
    this.encoder = null;
    const socks = Object.values(this.socks);
    this.socks = {};
    await Promise.all(
      socks.map(
        (s) =>
          new Promise<void>((resolve) => {
            try {
              s.close(() => resolve());
            } catch {
              resolve();
            }
          }),
      ),
    );
  }

  metrics(): TransportMetrics {
    return {
      protocol: 'prompeg',
      rttSeconds: 0,
      packets: { sent: this.sent.media, fec: this.sent.column + this.sent.row },
    };
  }

  status(): Record<string, unknown> {
    const port = int(this.cfg, 'port', 0);
    const address = str(this.cfg, 'address');
    return {
      type: 'prompeg',
      destination: this.multiplexing
        ? `${address}:${port}`
        : `${address}:${port} media, :${port + COLUMN_PORT_OFFSET} column, :${port + ROW_PORT_OFFSET} row`,
      mode: this.multiplexing ? 'multiplexed' : 'standard',
      matrix: {
        l: int(this.cfg, 'prompeg-columns', 5),
        d: int(this.cfg, 'prompeg-rows', 5),
        rows: bool(this.cfg, 'prompeg-row-fec', true),
      },
      encrypted: this.cipher !== null,
      headerXor: int(this.cfg, 'prompeg-header-xor', 0),
      datagrams: this.sent.media,
      fecColumns: this.sent.column,
      fecRows: this.sent.row,
      bytes: this.bytes,
      errors: this.errors,
      ...(this.pacer ? { cbr: this.pacer.status() } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
