// `prompeg` input: RTP media with SMPTE 2022-1 (Pro-MPEG CoP3) FEC. Media on `port`, column FEC
// on port + 2, row FEC on port + 4; or, with `prompeg-multiplexing`, all three on `port`, the FEC
// told apart by its RTP payload type (96). Lost media packets are rebuilt from the FEC
// (src/protocols/fec/decoder.ts) and everything is put back in order by the RTP reorder buffer,
// which waits for a hole as long as the FEC matrix needs. Optional non-standard
// `prompeg-header-xor` and `passphrase` (AES-128-CTR of the payload; docs/transports.md).
import dgram from 'node:dgram';
import { bool, int, num, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport, TransportMetrics } from '../../engine/input.ts';
import { PayloadCipher } from '../../protocols/fec/cipher.ts';
import { FecDecoder } from '../../protocols/fec/decoder.ts';
import { FEC_PAYLOAD_TYPE, parseFec } from '../../protocols/fec/header.ts';
import { parseRtp, type RtpPacket, RtpSequencer } from '../../protocols/rtp/packet.ts';
import type { Timer } from '../../util/clock.ts';
import { isMulticast, resolveInterface } from '../../util/net.ts';
import { socketBound } from '../udp/bound.ts';
import { DEFAULT_UDP_BUFFER } from '../udp/input.ts';

/** Larger datagrams are not RTP-carried TS from a sane sender (Ethernet MTU): dropped, counted. */
export const MAX_DATAGRAM = 1500;
/** Column FEC on port + 2, row FEC on port + 4 (SMPTE 2022-1). */
export const COLUMN_PORT_OFFSET = 2;
export const ROW_PORT_OFFSET = 4;
/** A hole not repaired within this time is given up even if fewer packets than the FEC window
 *  have come since (a sender that pauses, a very low rate). */
export const GAP_TIMEOUT_MS = 2000;
const GAP_CHECK_MS = 50;
/** Bad packets in a row (none good between) before the input says why. */
const BAD_RUN = 10;
/** Packets in a row from a new SSRC before it replaces the one in use. */
const SSRC_SWITCH_RUN = 3;

type Flow = 'media' | 'column' | 'row';

export class PrompegInput implements InputTransport {
  private socks: dgram.Socket[] = [];
  private readonly decoder: FecDecoder;
  private readonly seq: RtpSequencer;
  private cipher: PayloadCipher | null = null;
  private readonly xor: number;
  private readonly multiplexing: boolean;
  private gapTimer: Timer | null = null;
  private gapSeq = -1;
  private gapSince = 0;
  private readonly datagrams = { media: 0, column: 0, row: 0 };
  private notRtp = 0;
  private oversized = 0;
  private notMpegTs = 0;
  private fecHeaderErrors = 0;
  private recoveredLate = 0;
  private badFecRun = 0;
  private badTsRun = 0;
  private lastFecError = '';
  private fecProblem = '';
  private tsProblem = '';
  private socketError = '';
  private ssrc = -1;
  private candidate = -1;
  private candidateRun = 0;
  private foreignSsrc = 0;

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.xor = int(cfg, 'prompeg-header-xor', 0) & 0xff;
    this.multiplexing = bool(cfg, 'prompeg-multiplexing', false);
    this.seq = new RtpSequencer(true, (p) => ctx.onData(p.payload));
    this.decoder = new FecDecoder((d) => this.onRecovered(d));
  }

  /** Every socket's bind (media and FEC ports). */
  private bound: Promise<void>[] = [];

  async opened(): Promise<void> {
    await Promise.all(this.bound);
  }

  start(): void {
    const port = num(this.cfg, 'port', 0);
    if (port < 1) throw new Error('prompeg input: port is not set');
    if (!this.multiplexing && port + ROW_PORT_OFFSET > 65535)
      throw new Error(
        `prompeg input: port ${port} + 4 is beyond 65535 (column FEC on port + 2, row FEC on port + 4)`,
      );
    const passphrase = str(this.cfg, 'passphrase');
    if (passphrase) this.cipher = new PayloadCipher(passphrase);
    this.open(port, 'media');
    if (!this.multiplexing) {
      this.open(port + COLUMN_PORT_OFFSET, 'column');
      this.open(port + ROW_PORT_OFFSET, 'row');
    }
    this.gapTimer = this.ctx.clock.setInterval(() => this.checkGap(), GAP_CHECK_MS);
  }

  private open(port: number, flow: Flow): void {
    const group = str(this.cfg, 'address');
    const local = resolveInterface(str(this.cfg, 'bind-if'));
    const ssm = str(this.cfg, 'ssm-address');
    const multicast = group !== '' && isMulticast(group);
    const sock = dgram.createSocket({ type: 'udp4', reuseAddr: multicast });
    this.socks.push(sock);
    sock.on('error', (err) => {
      this.socketError = `port ${port}: ${err.message}`;
      this.ctx.log.warn({ err, port }, 'prompeg input socket error');
    });
    sock.on('message', (d) => (flow === 'media' ? this.onMedia(d) : this.onFec(d, flow)));
    this.bound.push(socketBound(sock));
    sock.bind({ port, address: multicast ? group : group || local || undefined }, () => {
      try {
        const want = num(this.cfg, 'socket-buffer-size', 0) || DEFAULT_UDP_BUFFER;
        try {
          sock.setRecvBufferSize(flow === 'media' ? want : Math.max(want >> 2, 1 << 20));
        } catch {
          // the system refused; it keeps its default
        }
        if (multicast) {
          if (ssm) sock.addSourceSpecificMembership(ssm, group, local || undefined);
          else sock.addMembership(group, local || undefined);
        }
      } catch (err) {
        this.socketError = `port ${port}: ${(err as Error).message}`;
        this.ctx.log.error({ err }, 'prompeg input: multicast join failed');
      }
    });
  }

  private onMedia(d: Buffer): void {
    if (this.multiplexing && d.length >= 2 && (d[1]! & 0x7f) === FEC_PAYLOAD_TYPE) {
      this.onFec(d, 'column');
      return;
    }
    this.datagrams.media++;
    if (d.length > MAX_DATAGRAM) {
      this.oversized++;
      return;
    }
    const p = parseRtp(d);
    if (!p) {
      this.notRtp++;
      return;
    }
    if (!this.sameSource(p.ssrc)) return;
    const payload = this.payloadOf(p);
    if (!payload) return;
    if (!this.decoder.pushMedia(d, p.seq, p.ssrc)) return; // already recovered or a duplicate
    this.seq.push({ ...p, payload });
  }

  /** The SSRC in use is kept until SSRC_SWITCH_RUN packets in a row come from another one (a
   *  sender restart): a stray or forged datagram does not reset the FEC and reorder state. */
  private sameSource(ssrc: number): boolean {
    if (this.ssrc < 0 || ssrc === this.ssrc) {
      this.ssrc = ssrc;
      this.candidateRun = 0;
      return true;
    }
    if (ssrc !== this.candidate) {
      this.candidate = ssrc;
      this.candidateRun = 0;
    }
    if (++this.candidateRun < SSRC_SWITCH_RUN) {
      this.foreignSsrc++;
      return false;
    }
    this.ssrc = ssrc;
    this.candidateRun = 0;
    return true;
  }

  /** The payload as TS (decrypted with the passphrase), or null when it is not TS (counted;
   *  a run of them is the input's fault, in words). */
  private payloadOf(p: RtpPacket): Buffer | null {
    const payload = this.cipher
      ? this.cipher.apply(p.ssrc, p.timestamp, p.seq, p.payload)
      : p.payload;
    if (payload.length === 0 || payload[0] !== 0x47) {
      this.notMpegTs++;
      if (++this.badTsRun >= BAD_RUN)
        this.tsProblem = this.cipher
          ? 'payload does not decrypt to MPEG-TS: passphrase differs?'
          : 'payload is not MPEG-TS: does the sender encrypt (passphrase)?';
      return null;
    }
    this.badTsRun = 0;
    this.tsProblem = '';
    return payload;
  }

  private onFec(d: Buffer, flow: 'column' | 'row'): void {
    // In multiplexed mode every FEC packet arrives here as 'column'; the header's D bit decides.
    this.datagrams[flow]++;
    if (d.length > MAX_DATAGRAM) {
      this.oversized++;
      return;
    }
    const f = parseFec(d, this.xor);
    if (typeof f === 'string') {
      this.fecHeaderErrors++;
      this.lastFecError = f;
      if (++this.badFecRun >= BAD_RUN)
        this.fecProblem = `FEC header not understood (${f}): prompeg-header-xor differs?`;
      return;
    }
    this.badFecRun = 0;
    this.fecProblem = '';
    this.decoder.pushFec(f);
    this.seq.depth = this.decoder.window();
  }

  private onRecovered(d: Buffer): void {
    const p = parseRtp(d);
    const payload = p && this.payloadOf(p);
    if (!p || !payload) return;
    const dup = this.seq.duplicates;
    this.seq.push({ ...p, payload });
    if (this.seq.duplicates > dup) this.recoveredLate++; // the reorder buffer had given it up
  }

  /** Give a hole up once it has waited GAP_TIMEOUT_MS (the FEC window in packets did not pass). */
  private checkGap(): void {
    if (this.seq.holding === 0) {
      this.gapSeq = -1;
      return;
    }
    const now = this.ctx.clock.monotonic();
    if (this.seq.expectedSeq !== this.gapSeq) {
      this.gapSeq = this.seq.expectedSeq;
      this.gapSince = now;
    } else if (now - this.gapSince >= GAP_TIMEOUT_MS) {
      this.seq.skipGap();
      this.gapSeq = -1;
    }
  }

  async close(): Promise<void> {
    this.gapTimer?.cancel();
    this.gapTimer = null;
    const socks = this.socks;
    this.socks = [];
    this.decoder.reset();
    await Promise.all(
      socks.map(
        (s) =>
          new Promise<void>((resolve) => {
            try {
              s.close(() => resolve());
            } catch {
              resolve(); // already closed after an error
            }
          }),
      ),
    );
  }

  fault(): string {
    return this.socketError || this.tsProblem || this.fecProblem;
  }

  private counts() {
    const s = this.decoder.stats;
    const recovered = s.recovered - this.recoveredLate;
    const unrecoverable = this.seq.lost;
    return { received: s.media, recovered, unrecoverable, lost: recovered + unrecoverable };
  }

  metrics(): TransportMetrics {
    const s = this.decoder.stats;
    return {
      protocol: 'prompeg',
      rttSeconds: 0,
      packets: {
        ...this.counts(),
        fec: s.fecColumns + s.fecRows,
        rejected:
          this.notRtp +
          this.foreignSsrc +
          this.oversized +
          this.notMpegTs +
          this.fecHeaderErrors +
          s.fecOutOfWindow +
          s.fecInconsistent,
      },
    };
  }

  status(): Record<string, unknown> {
    const s = this.decoder.stats;
    const port = num(this.cfg, 'port', 0);
    return {
      mode: this.multiplexing ? 'multiplexed' : 'standard',
      ports: this.multiplexing
        ? `${port}`
        : `${port} media, ${port + COLUMN_PORT_OFFSET} column, ${port + ROW_PORT_OFFSET} row`,
      matrix: this.decoder.l ? { l: this.decoder.l, d: this.decoder.d } : null,
      encrypted: this.cipher !== null,
      headerXor: this.xor,
      ...this.counts(),
      recoveredByRow: s.recoveredByRow,
      recoveredByColumn: s.recoveredByColumn,
      recoveredLate: this.recoveredLate,
      fecColumns: s.fecColumns,
      fecRows: s.fecRows,
      datagrams: { ...this.datagrams },
      reordered: this.seq.reordered,
      duplicates: this.seq.duplicates + s.duplicates,
      restarts: s.restarts,
      notRtp: this.notRtp,
      foreignSsrc: this.foreignSsrc,
      oversized: this.oversized,
      notMpegTs: this.notMpegTs,
      fecHeaderErrors: this.fecHeaderErrors,
      fecOutOfWindow: s.fecOutOfWindow,
      fecInconsistent: s.fecInconsistent,
      windowPackets: this.seq.depth,
      ...(this.lastFecError ? { lastFecError: this.lastFecError } : {}),
      ...(this.fecProblem ? { fecProblem: this.fecProblem } : {}),
      ...(this.tsProblem ? { tsProblem: this.tsProblem } : {}),
      ...(this.socketError ? { lastError: this.socketError } : {}),
    };
  }
}
