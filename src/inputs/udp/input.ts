// `udp` input: datagrams received in batches by the native recvmmsg receiver (unicast,
// multicast on `bind-if`, SSM), with periodic re-joins and the granted receive buffer reported.

import { num, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport } from '../../engine/input.ts';
import { UdpReceiver } from '../../native/udp.ts';
import type { Timer } from '../../util/clock.ts';
import { isMulticast } from '../../util/net.ts';

/** What a shed input says: why, and what the operator can do. */
export const SHED_MESSAGE =
  'shed: the server cannot keep up with every stream and drops this one first (its order is ' +
  'among the highest); give it a lower order, or move streams to another server';

/** Receive buffer asked for when the record leaves `socket-buffer-size` at 0 (system default
 *  loses packets near 0.4 Gbit/s; 8 MB keeps a few hundred ms of an 8 Mbit/s stream). */
export const DEFAULT_UDP_BUFFER = 8 * 1024 * 1024;
/** Datagrams are handed to JS at most this long after the first of a batch arrived (or at 64).
 *  An 8 Mbit/s stream then crosses into JS ~50 times a second with ~15 datagrams, rather than
 *  200 times with ~4: every per-batch cost downstream (analysis call, splicer, HTTP writes)
 *  drops fourfold (bench/stream-ingest.ts), for 20 ms of added latency at most. */
export const UDP_BATCH_LATENCY_MS = 20;

export class UdpInput implements InputTransport {
  private rx: UdpReceiver | null = null;
  private rejoinTimer: Timer | null = null;
  private datagrams = 0;
  private bytes = 0;
  private lastError = '';
  private warning = '';
  /** The receive thread sheds this input (the server cannot carry every stream). */
  private shed = false;
  private rejoins = 0;

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {}

  start(): void {
    const port = num(this.cfg, 'port', 0);
    if (port < 1) throw new Error('udp input: port is not set');
    const requested = num(this.cfg, 'socket-buffer-size', 0) || DEFAULT_UDP_BUFFER;
    // `address` is the multicast group; the spec ignores it for unicast (bind to every address).
    const group = str(this.cfg, 'address');
    const address = isMulticast(group) ? group : '';
    const bindIf = str(this.cfg, 'bind-if');
    const ssm = str(this.cfg, 'ssm-address');
    this.rx = new UdpReceiver({
      port,
      ...(address ? { address } : {}),
      ...(bindIf ? { bindIf } : {}),
      ...(ssm ? { ssm } : {}),
      bufferSize: requested,
      batchLatencyMs: UDP_BATCH_LATENCY_MS,
      owner: { stream: this.ctx.streamName, input: this.ctx.index },
      // Under overload the receive thread sheds whole streams, the highest order first.
      priority: this.ctx.priority ?? 0,
      onShed: (shed) => {
        this.shed = shed;
        if (shed) this.ctx.log.warn({ order: this.ctx.priority ?? 0 }, SHED_MESSAGE);
        else this.ctx.log.info('udp input: the server keeps up again, receiving');
      },
      onData: (batch, n) => {
        this.datagrams += n;
        this.bytes += batch.length;
        this.ctx.onData(batch, true); // the receiver's own block: rewritten in place, no copy
      },
      onError: (err) => {
        this.lastError = err.message;
        this.ctx.log.warn({ err }, 'udp input error');
      },
    });
    if (this.rx.bufferWarning) {
      this.warning = this.rx.bufferWarning;
      this.ctx.log.warn({ requested, granted: this.rx.grantedBufferSize }, this.warning);
    }
    const rejoin = num(this.cfg, 'mcast-rejoin-interval', 0);
    if (rejoin > 0 && address) {
      this.rejoinTimer = this.ctx.clock.setInterval(() => {
        try {
          this.rx?.rejoin();
          this.rejoins++;
        } catch (err) {
          this.lastError = (err as Error).message;
        }
      }, rejoin * 1000);
    }
  }

  async close(): Promise<void> {
    this.rejoinTimer?.cancel();
    this.rejoinTimer = null;
    const rx = this.rx;
    this.rx = null;
    rx?.close();
  }

  status(): Record<string, unknown> {
    const group = str(this.cfg, 'address');
    const address = isMulticast(group) ? group : '';
    const ssm = str(this.cfg, 'ssm-address');
    return {
      datagrams: this.datagrams,
      bytes: this.bytes,
      bufferRequested: num(this.cfg, 'socket-buffer-size', 0) || DEFAULT_UDP_BUFFER,
      bufferGranted: this.rx?.grantedBufferSize ?? 0,
      ...(address ? { group: address, rejoins: this.rejoins } : {}),
      ...(ssm ? { ssm } : {}),
      ...(this.rx ? { receiver: this.rx.stats() } : {}),
      ...(this.warning ? { warning: this.warning } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
      ...(this.shed ? { shed: true } : {}),
    };
  }

  /** While shed, the input's message (and, past alert-delay, its alert). */
  fault(): string {
    return this.shed ? `${SHED_MESSAGE} (order ${this.ctx.priority ?? 0})` : '';
  }
}
