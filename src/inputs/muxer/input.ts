// `muxer` input: a multiplex (the input of an `mpts: true` stream) built from other streams,
// one programme each (docs/multiplex.md). Each programme's stream is read from its bus, looked
// up again every second (a source created late or recreated); the multiplexing itself is
// src/mpegts/multiplexer.ts. Constant rate: a short tick sends the slots due by the clock.
import { bool, int, num, str } from '../../config/spec-values.ts';
import type { StreamBus } from '../../engine/bus.ts';
import type { InputContext, InputTransport } from '../../engine/input.ts';
import {
  MAX_PROGRAMMES,
  Multiplexer,
  type MuxProgramme,
  PSI_INTERVAL_MS,
} from '../../mpegts/multiplexer.ts';
import type { Timer } from '../../util/clock.ts';

/** How often the programme streams are looked up again. */
const RELOOK_MS = 1000;
/** Constant-rate tick: the slots due since the last one go out together. */
const PACE_TICK_MS = 5;
const KBIT = 1000;

interface Feed {
  streamId: number;
  bus: StreamBus | undefined;
  off: (() => void) | null;
  ended: boolean;
}

export class MuxerInput implements InputTransport {
  private readonly mux: Multiplexer;
  private readonly feeds: Feed[];
  private readonly refused: string;
  private readonly timers: Timer[] = [];
  private closed = false;
  private readonly reported = new Set<string>();

  constructor(
    cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    const items = Array.isArray(cfg['programmes'])
      ? (cfg['programmes'] as Record<string, unknown>[])
      : [];
    const programmes: MuxProgramme[] = items.map((p) => ({
      label: `stream ${int(p, 'stream-id', 0)}`,
      pnr: int(p, 'pnr', 0),
      serviceName: str(p, 'service-name'),
      serviceType: int(p, 'service-type', 1),
    }));
    this.refused = refusal(programmes);
    this.feeds = items.map((p) => ({
      streamId: int(p, 'stream-id', 0),
      bus: undefined,
      off: null,
      ended: false,
    }));
    this.mux = new Multiplexer(
      {
        transportStreamId: int(cfg, 'mpegts-streamid', 1),
        networkId: int(cfg, 'mpegts-nid', 1),
        networkName: str(cfg, 'mpegts-net-name'),
        provider: str(cfg, 'sdt-provider-name'),
        country: str(cfg, 'mpegts-country-code'),
        autoPid: bool(cfg, 'auto-pid', true),
        bitrate: Math.round(num(cfg, 'mpegts-output-bitrate', 20000) * KBIT),
        programmes,
      },
      () => ctx.clock.now(),
    );
  }

  start(): void {
    if (this.refused) return;
    const { clock } = this.ctx;
    this.attach();
    this.timers.push(clock.setInterval(() => this.attach(), RELOOK_MS));
    if (this.mux.settings.bitrate > 0) {
      this.timers.push(
        clock.setInterval(() => this.send(this.mux.paced(clock.monotonic())), PACE_TICK_MS),
      );
    } else {
      this.timers.push(
        clock.setInterval(() => this.send(this.mux.take(clock.monotonic())), PSI_INTERVAL_MS),
      );
    }
  }

  private send(buf: Buffer): void {
    if (buf.length > 0 && !this.closed) this.ctx.onData(buf, true);
    this.reportRefusals();
  }

  /** Log each programme left out once (the status lists them all along). */
  private reportRefusals(): void {
    for (const { pnr, reason } of this.mux.refusals()) {
      if (this.reported.has(reason)) continue;
      this.reported.add(reason);
      this.ctx.log.error({ pnr }, reason);
    }
  }

  /** Subscribe to each programme stream's current bus (again, when it was recreated). */
  private attach(): void {
    if (this.closed) return;
    this.feeds.forEach((f, i) => {
      const bus = this.ctx.bus({ kind: 'stream', key: String(f.streamId) });
      if (bus === f.bus) return;
      f.off?.();
      f.off = null;
      f.bus = bus;
      f.ended = false;
      this.mux.setRunning(i, false);
      if (!bus) return;
      this.mux.sourceDiscontinuity(i);
      f.off = bus.subscribe({
        packets: (b) => {
          f.ended = false;
          const { clock } = this.ctx;
          this.mux.push(i, b, clock.monotonic());
          if (this.mux.settings.bitrate === 0) this.send(this.mux.take(clock.monotonic()));
        },
        discontinuity: () => this.mux.sourceDiscontinuity(i),
        end: () => {
          f.ended = true;
          this.mux.setRunning(i, false);
        },
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) t.cancel();
    this.timers.length = 0;
    for (const f of this.feeds) f.off?.();
    for (const f of this.feeds) f.off = null;
  }

  fault(): string {
    return this.refused;
  }

  status(): Record<string, unknown> {
    const programmes = this.mux.programmeStats().map((p, i) => ({
      streamId: this.feeds[i]!.streamId,
      ...p,
      running: p.running && !!this.feeds[i]!.bus && !this.feeds[i]!.ended,
    }));
    return {
      bitrate: this.mux.settings.bitrate,
      ...this.mux.stats,
      collisions: programmes.filter((p) => p.refused).map((p) => p.refused),
      programmes,
    };
  }
}

/** Why the programme list cannot be multiplexed ('' when it can). */
function refusal(list: MuxProgramme[]): string {
  if (list.length > MAX_PROGRAMMES) return `more than ${MAX_PROGRAMMES} programmes`;
  const seen = new Map<number, number>();
  for (const [i, p] of list.entries()) {
    const first = seen.get(p.pnr);
    if (first !== undefined) return `pnr ${p.pnr} is given to programmes ${first + 1} and ${i + 1}`;
    seen.set(p.pnr, i);
  }
  return '';
}
