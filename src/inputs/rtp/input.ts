// `rtp` input: RTP over UDP (unicast or multicast). Each datagram's header is parsed (CSRC list,
// extension, padding), sequence gaps are counted, and with `rtp-reorder` a jitter buffer puts
// packets back in order. Uses a dgram socket: RTP needs datagram boundaries.
import dgram from 'node:dgram';
import { bool, num, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport } from '../../engine/input.ts';
import { parseRtp, RtpSequencer } from '../../protocols/rtp/packet.ts';
import type { Timer } from '../../util/clock.ts';
import { isMulticast, resolveInterface } from '../../util/net.ts';
import { socketBound } from '../udp/bound.ts';
import { DEFAULT_UDP_BUFFER } from '../udp/input.ts';

/** A packet missing from the jitter buffer longer than this is given up on. */
const REORDER_FLUSH_MS = 100;

export class RtpInput implements InputTransport {
  private sock: dgram.Socket | null = null;
  private seq: RtpSequencer;
  private flushTimer: Timer | null = null;
  private rejoinTimer: Timer | null = null;
  private datagrams = 0;
  private notRtp = 0;
  private payloadTypes = new Set<number>();
  private granted = 0;
  private requested = 0;
  private lastError = '';

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.seq = new RtpSequencer(bool(cfg, 'rtp-reorder', false), (p) => ctx.onData(p.payload));
  }

  private bound: Promise<void> = Promise.resolve();

  opened(): Promise<void> {
    return this.bound;
  }

  start(): void {
    const port = num(this.cfg, 'port', 0);
    if (port < 1) throw new Error('rtp input: port is not set');
    const group = str(this.cfg, 'address');
    const local = resolveInterface(str(this.cfg, 'bind-if'));
    const ssm = str(this.cfg, 'ssm-address');
    const multicast = group !== '' && isMulticast(group);
    // Only multicast receivers may share a port: a unicast port shared with another socket
    // would silently lose datagrams to it.
    const sock = dgram.createSocket({ type: 'udp4', reuseAddr: multicast });
    this.sock = sock;
    sock.on('error', (err) => {
      this.lastError = err.message;
      this.ctx.log.warn({ err }, 'rtp input socket error');
    });
    sock.on('message', (d) => this.onDatagram(d));
    this.bound = socketBound(sock);
    sock.bind({ port, address: multicast ? group : group || local || undefined }, () => {
      try {
        const want = num(this.cfg, 'socket-buffer-size', 0) || DEFAULT_UDP_BUFFER;
        this.requested = want;
        try {
          sock.setRecvBufferSize(want);
        } catch {
          // the system refused; the granted size below says what we got
        }
        // Linux reports twice the size it grants (the doubling covers its bookkeeping).
        this.granted = Math.floor(sock.getRecvBufferSize() / 2);
        if (this.granted < want)
          this.ctx.log.warn(
            { requested: want, granted: this.granted },
            'rtp input: the system granted a smaller receive buffer (raise net.core.rmem_max)',
          );
        if (multicast) this.join(sock, group, local, ssm);
      } catch (err) {
        this.lastError = (err as Error).message;
        this.ctx.log.error({ err }, 'rtp input: multicast join failed');
      }
    });
    if (bool(this.cfg, 'rtp-reorder', false)) {
      this.flushTimer = this.ctx.clock.setInterval(() => this.seq.flush(), REORDER_FLUSH_MS);
    }
    const rejoin = num(this.cfg, 'mcast-rejoin-interval', 0);
    if (rejoin > 0 && multicast) {
      this.rejoinTimer = this.ctx.clock.setInterval(() => {
        if (!this.sock) return;
        try {
          this.leave(this.sock, group, local, ssm);
        } catch {
          // not joined: join below anyway
        }
        this.join(this.sock, group, local, ssm);
      }, rejoin * 1000);
    }
  }

  private join(sock: dgram.Socket, group: string, local: string, ssm: string): void {
    if (ssm) sock.addSourceSpecificMembership(ssm, group, local || undefined);
    else sock.addMembership(group, local || undefined);
  }

  private leave(sock: dgram.Socket, group: string, local: string, ssm: string): void {
    if (ssm) sock.dropSourceSpecificMembership(ssm, group, local || undefined);
    else sock.dropMembership(group, local || undefined);
  }

  private onDatagram(d: Buffer): void {
    this.datagrams++;
    const p = parseRtp(d);
    if (!p) {
      this.notRtp++;
      return;
    }
    this.payloadTypes.add(p.payloadType);
    this.seq.push(p);
  }

  async close(): Promise<void> {
    this.flushTimer?.cancel();
    this.rejoinTimer?.cancel();
    this.flushTimer = this.rejoinTimer = null;
    const s = this.sock;
    this.sock = null;
    if (!s) return;
    await new Promise<void>((resolve) => {
      try {
        s.close(() => resolve());
      } catch {
        resolve(); // already closed after an error
      }
    });
  }

  status(): Record<string, unknown> {
    return {
      datagrams: this.datagrams,
      notRtp: this.notRtp,
      rtpLost: this.seq.lost,
      rtpReordered: this.seq.reordered,
      rtpDuplicates: this.seq.duplicates,
      payloadTypes: [...this.payloadTypes],
      bufferRequested: this.requested,
      bufferGranted: this.granted,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
