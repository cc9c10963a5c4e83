// `rist` output: the stream's output TS sent to RIST receivers (librist in the native core),
// simple or main profile, with an optional pre-shared key: the receiver at `address`:`port` and
// any further ones (`rist-addr-*`: a second path to the same receiver, or other receivers),
// each duplicated (weight 0) or load-shared by weight. librist keeps a retransmission buffer
// and answers the receivers' NACKs; one native call per bus batch.
import { int, str } from '../../config/spec-values.ts';
import type { TransportMetrics } from '../../engine/input.ts';
import type { OutputContext, StreamOutput } from '../../engine/output.ts';
import { RistSender, type RistSenderStats, type RistSendPeer } from '../../native/rist.ts';

/** Retransmission buffer kept for the receiver's requests (librist's default, and the
 *  receiving input's own buffer): a packet lost on the path can be asked for during 1 s. */
export const RIST_SEND_BUFFER_MS = 1000;

export class RistOutput implements StreamOutput {
  private tx: RistSender | null = null;
  private lastError = '';

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: OutputContext,
  ) {}

  /** The receivers of this record: address:port first, then the rist-addr-* ones. */
  private peers(): RistSendPeer[] {
    const more = (this.cfg['rist-addr-address'] as string[] | undefined) ?? [];
    const ports = (this.cfg['rist-addr-port'] as number[] | undefined) ?? [];
    const weights = (this.cfg['rist-addr-weight'] as number[] | undefined) ?? [];
    return [
      {
        address: str(this.cfg, 'address'),
        port: int(this.cfg, 'port', 0),
        weight: int(this.cfg, 'weight', 0),
      },
      ...more.map((address, i) => ({ address, port: ports[i] ?? 0, weight: weights[i] ?? 0 })),
    ];
  }

  async start(): Promise<void> {
    const address = str(this.cfg, 'address');
    const port = int(this.cfg, 'port', 0);
    if (!address || port < 1) throw new Error('rist output: address and port are required');
    const profile = int(this.cfg, 'rist-profile', 1) === 0 ? 0 : 1;
    const passphrase = str(this.cfg, 'passphrase');
    if (passphrase && profile === 0) {
      this.ctx.log.warn('rist output: passphrase ignored (the simple profile has no encryption)');
    }
    this.tx = new RistSender({
      profile,
      peers: this.peers(),
      bufferMs: RIST_SEND_BUFFER_MS,
      ...(passphrase && profile === 1 ? { secret: passphrase } : {}),
    });
  }

  packets(buf: Buffer): void {
    try {
      this.tx?.write(buf); // librist copies: nothing kept past the call
    } catch (err) {
      this.lastError = (err as Error).message;
    }
  }

  async close(): Promise<void> {
    const tx = this.tx;
    this.tx = null;
    tx?.close();
  }

  metrics(): TransportMetrics {
    const s: Partial<RistSenderStats> = this.tx?.stats() ?? {};
    return {
      protocol: 'rist',
      rttSeconds: (s.rtt ?? 0) / 1000,
      packets: { sent: s.sent ?? 0, retransmitted: s.retransmitted ?? 0 },
    };
  }

  status(): Record<string, unknown> {
    const s: Partial<RistSenderStats> = this.tx?.stats() ?? {};
    return {
      type: 'rist',
      profile: int(this.cfg, 'rist-profile', 1) === 0 ? 'simple' : 'main',
      destination: this.peers()
        .map((p) => `${p.address}:${p.port}`)
        .join(', '),
      peers: s.peers ?? 0,
      encrypted: !!str(this.cfg, 'passphrase') && int(this.cfg, 'rist-profile', 1) === 1,
      connected: (s.connected ?? 0) > 0,
      peersConnected: s.connected ?? 0,
      packets: s.blocks ?? 0,
      bytes: s.bytes ?? 0,
      writeErrors: s.writeErrors ?? 0,
      sent: s.sent ?? 0,
      retransmitted: s.retransmitted ?? 0,
      rttMs: s.rtt ?? 0,
      bandwidthBps: s.bandwidth ?? 0,
      retryBandwidthBps: s.retryBandwidth ?? 0,
      quality: s.quality ?? 100,
      ...(s.lastLog ? { lastLog: s.lastLog } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
