// One input of a stream: its transport plus a native TS analyzer. Tracks when valid TS last
// arrived (aligned packets *and* a fresh PAT + PMT without sync loss, see validity.ts) and the
// priority-1 error rate, which the failover policy reads. Only the active input's packets reach
// the output; a probing input (primary re-test) is analysed and dropped.

import type { Logger } from 'pino';
import { TS_PACKET_SIZE } from '../mpegts/packet.ts';
import { BissDescrambler, type BissStats, type BissTarget } from '../native/biss.ts';
import { type Program, type Section, TsAnalyzer, type TsStats } from '../native/ts.ts';
import type { Clock } from '../util/clock.ts';
import type { StreamBus } from './bus.ts';
import type { ClusterIdentity } from './cluster.ts';
import {
  type BusRef,
  type EncoderMetrics,
  type InputFactory,
  type InputTransport,
  NOT_SUPPORTED_YET,
  type TransportMetrics,
} from './input.ts';
import { TsTrace } from './ts-trace.ts';
import { TsValidity } from './validity.ts';

export type InputMode = 'off' | 'active' | 'probe';

export interface RunnerOptions {
  /** Input types this build implements, by the record's `type` (src/inputs/registry.ts). */
  factories: Readonly<Record<string, InputFactory>>;
  /** Finds another stream's or adapter's bus for inputs that read one (InputContext.bus). */
  bus(ref: BusRef): StreamBus | undefined;
  /** The server's cluster identity (InputContext.cluster). */
  cluster?(): ClusterIdentity | undefined;
  /** The stream's `order` (InputContext.priority). */
  priority?: number;
  index: number;
  cfg: Record<string, unknown>;
  log: Logger;
  clock: Clock;
  dataDir: string;
  streamName: string;
  /** Hand out EIT/TDT/TOT sections (epg-export). */
  wantSections: () => boolean;
  /** Log what the analysis finds as it changes (`mpegts-trace`), read at each sample. */
  mpegtsTrace?: () => boolean;
  /** BISS targets (a multiplex stream's biss-pnr / biss-key): the active input's packets are
   *  descrambled before they go on. Empty or absent: none. */
  biss?: readonly BissTarget[];
  /** `owned`: nobody else holds `packets` (the splicer may rewrite them without a copy). */
  onPackets(runner: InputRunner, packets: Buffer, owned: boolean): void;
  onSections(runner: InputRunner, sections: Section[]): void;
  /** The transport's next bytes do not continue the previous ones (inputs/types.ts). */
  onDiscontinuity(runner: InputRunner, reason: string): void;
  /** The stream's consumers want its packets evenly spread in time (InputContext.smooth). */
  smooth?(): boolean;
}

interface ErrorSample {
  at: number;
  p1: number;
}

const STATS_EVERY_MS = 250;
/** An input is shown `receiving` while valid TS arrived within this long (validity itself
 *  allows PSI gaps of up to 2 s: PSI_FRESH_MS). */
const RECEIVING_WITHIN_MS = 3000;
/** A rate is of the bytes that arrived within this long before now: an input that sent none
 *  in it reads 0 (the analyzer's own figure is of the last bytes fed, kept while none come). */
export const RATE_WINDOW_MS = 2000;
/** This much junk and not one aligned packet: the source is not a transport stream. */
const NOT_TS_JUNK_BYTES = TS_PACKET_SIZE * 64;

export class InputRunner {
  readonly index: number;
  readonly type: string;
  readonly cfg: Record<string, unknown>;
  mode: InputMode = 'off';
  private transport: InputTransport | null = null;
  private analyzer: TsAnalyzer | null = null;
  /** Monotonic ms of the last valid TS packets; -1 = none since opened. */
  lastValid = -1;
  /** Monotonic ms the transport last handed over bytes; -1 = never. */
  private lastBytes = -1;
  openedAt = -1;
  /** Monotonic ms the input last became the active one (-1 = never): a switch to an input that
   *  was already open to be probed gives it a whole `stream-timeout` from then to prove itself. */
  activeSince = -1;
  private error = '';
  /** Why a config change could not move this input to its new endpoint ('' = none): it keeps
   *  receiving here meanwhile (./input-move.ts). Shown in the status. */
  moveError = '';
  /** What open() threw, its errno `code` kept (opened()). */
  private openError: Error | null = null;
  private samples: ErrorSample[] = [];
  private lastSample = -1;
  private lastStats: TsStats | null = null;
  private lastPrograms: Program[] = [];
  private validity = new TsValidity();
  private biss: BissDescrambler | null = null;
  private lastBiss: BissStats | null = null;
  /** `mpegts-trace` of this input. */
  private readonly trace: TsTrace;

  constructor(private readonly o: RunnerOptions) {
    this.index = o.index;
    this.cfg = o.cfg;
    this.trace = new TsTrace(o.log, { input: o.index });
    const type = o.cfg['type'];
    this.type = typeof type === 'string' ? type : '';
  }

  get supported(): boolean {
    return this.type in this.o.factories;
  }

  get isOpen(): boolean {
    return this.transport !== null;
  }

  get failed(): string {
    return this.error;
  }

  /** Open the transport in `mode` (or just change the mode when already open). */
  open(mode: Exclude<InputMode, 'off'>): void {
    if (mode === 'active' && this.mode !== 'active') this.activeSince = this.o.clock.monotonic();
    this.mode = mode;
    if (this.transport) return;
    const factory = this.o.factories[this.type];
    if (!factory) {
      this.error = NOT_SUPPORTED_YET;
      return;
    }
    // Sections are always taken: PAT/PMT decide validity; EIT/TDT/TOT go on with epg-export.
    this.analyzer = new TsAnalyzer({ tr101290: true, clock: this.o.clock, psiPids: 'all' });
    this.validity = new TsValidity();
    this.biss = this.o.biss?.length ? new BissDescrambler(this.o.biss) : null;
    this.lastBiss = null;
    this.lastSample = -1;
    this.lastValid = -1;
    this.openedAt = this.o.clock.monotonic();
    this.samples = [];
    this.error = '';
    this.openError = null;
    try {
      this.transport = factory(this.cfg, {
        log: this.o.log.child({ input: this.index, type: this.type }),
        clock: this.o.clock,
        dataDir: this.o.dataDir,
        streamName: this.o.streamName,
        index: this.index,
        onData: (buf, owned) => this.onData(buf, owned === true),
        bus: (ref) => this.o.bus(ref),
        cluster: () => this.o.cluster?.(),
        ...(this.o.priority !== undefined ? { priority: this.o.priority } : {}),
        onDiscontinuity: (reason) => {
          if (this.mode === 'active') this.o.onDiscontinuity(this, reason);
        },
        // A probed backup's packets go no further than its analysis.
        smooth: () => this.mode === 'active' && (this.o.smooth?.() ?? true),
      });
      this.transport.start();
    } catch (err) {
      this.openError = err as Error;
      this.error = (err as Error).message;
      this.o.log.error({ input: this.index, err: this.error }, 'input failed to open');
      const t = this.transport;
      this.transport = null;
      void t?.close();
    }
  }

  /** Settles once the open transport receives where its record says (InputTransport.opened);
   *  rejects with what kept it from opening. */
  async opened(): Promise<void> {
    if (this.openError) throw this.openError;
    if (!this.transport) throw new Error(this.error || 'the input is not open');
    await this.transport.opened?.();
  }

  async close(): Promise<void> {
    this.mode = 'off';
    const t = this.transport;
    this.transport = null;
    if (this.analyzer) this.lastStats = this.analyzer.stats();
    this.analyzer = null;
    if (this.biss) this.lastBiss = this.biss.stats();
    this.biss = null;
    await t?.close();
  }

  private onData(buf: Buffer, owned: boolean): void {
    const a = this.analyzer;
    if (!a || this.mode === 'off') return;
    let packets: Buffer;
    this.lastBytes = this.o.clock.monotonic();
    try {
      packets = a.push(buf);
    } catch (err) {
      this.error = (err as Error).message;
      return;
    }
    const now = this.o.clock.monotonic();
    const sections = a.takeSections();
    if (sections.length) {
      this.validity.sections(sections, now);
      if (this.mode === 'active' && this.o.wantSections()) this.o.onSections(this, sections);
    }
    this.stats(); // refreshes the sync-loss reading a few times a second
    if (packets.length > 0 && this.validity.verdict(now) === 'valid') this.lastValid = now;
    // push() returns `buf` (or part of it) or a new Buffer: either way owned when `buf` was.
    if (this.mode === 'active' && packets.length > 0) {
      let mine = owned || packets.buffer !== buf.buffer;
      if (this.biss) {
        // Descrambled in place: a buffer the transport keeps is copied first.
        if (!mine) packets = Buffer.from(packets);
        mine = true;
        this.biss.process(packets);
      }
      this.o.onPackets(this, packets, mine);
    }
  }

  /** The transport's link counters for /metrics (RIST, SRT), when it has any. */
  transportMetrics(): TransportMetrics | null {
    return this.transport?.metrics?.() ?? null;
  }

  /** The transport's encoder progress for /metrics (the transcoder), when it has one. */
  encoderMetrics(): EncoderMetrics | null {
    return this.transport?.encoder?.() ?? null;
  }

  /** Current analyzer statistics (cached for a short while: stats() crosses into C++). */
  stats(): TsStats | null {
    const now = this.o.clock.monotonic();
    if (this.analyzer && (this.lastSample < 0 || now - this.lastSample >= STATS_EVERY_MS)) {
      this.lastStats = this.analyzer.stats();
      this.lastSample = now;
      this.samples.push({ at: now, p1: this.lastStats.priority1 });
      this.validity.syncLossCount(this.lastStats.tr101290.tsSyncLoss, now);
      if (this.o.mpegtsTrace?.()) this.trace.sample(this.lastStats, this.programs());
      else this.trace.reset();
    }
    return this.lastStats;
  }

  /** bit/s the input delivers now: the analyzer's figure (from PCRs, else arrival times)
   *  while bytes arrive, 0 once none came within RATE_WINDOW_MS. */
  bitrate(): number {
    const st = this.stats();
    const now = this.o.clock.monotonic();
    if (!st || this.lastBytes < 0 || now - this.lastBytes > RATE_WINDOW_MS) return 0;
    return st.pcrBitrate || st.arrivalBitrate;
  }

  /** The BISS descrambler's figures (null without targets). */
  bissStats(): BissStats | null {
    if (this.biss) this.lastBiss = this.biss.stats();
    return this.lastBiss;
  }

  /** PIDs whose packets this input delivers scrambled: after BISS descrambling when the stream
   *  has targets (a wrong key leaves its PIDs here), else as the analyzer saw them. */
  scrambledPids(): number[] {
    const b = this.bissStats();
    if (b) return b.stillScrambledPids;
    const pids = this.stats()?.pids ?? [];
    return pids.filter((p) => p.scrambled !== 0).map((p) => p.pid);
  }

  programs(): Program[] {
    if (this.analyzer) this.lastPrograms = this.analyzer.programs();
    return this.lastPrograms;
  }

  /** The validity verdict now ('off' when the input is closed). */
  validityNow(): string {
    return this.mode === 'off' ? 'not probed' : this.validity.verdict(this.o.clock.monotonic());
  }

  /** Valid TS arrived within the last `ms` milliseconds. */
  deliveredWithin(ms: number): boolean {
    return this.lastValid >= 0 && this.o.clock.monotonic() - this.lastValid <= ms;
  }

  /**
   * Priority-1 errors per second over the last `windowMs`; null until the input has been
   * observed for a whole window (a fresh input is not judged on a fraction of it).
   */
  errorRate(windowMs: number): number | null {
    this.stats();
    const now = this.o.clock.monotonic();
    const s = this.samples;
    while (s.length > 2 && now - s[1]!.at >= windowMs) s.shift();
    const first = s[0];
    const last = s[s.length - 1];
    if (!first || !last || last.at - first.at < windowMs * 0.9) return null;
    return ((last.p1 - first.p1) * 1000) / (last.at - first.at);
  }

  /** What the input's state is and why: `receiving` only while valid TS arrives (not merely
   *  once, long ago); a transport fault (missing file, refused connection, child that cannot
   *  run) makes it `error` with the fault as message; junk without a sync byte is named. */
  private describe(st: TsStats | null): { state: string; message?: string } {
    if (!this.supported) return { state: NOT_SUPPORTED_YET };
    if (this.error) return { state: 'error', message: this.error };
    if (this.mode === 'off') return { state: 'idle' };
    if (this.deliveredWithin(RECEIVING_WITHIN_MS)) return { state: 'receiving' };
    const fault = this.transport?.fault?.() ?? '';
    if (fault) return { state: 'error', message: fault };
    if (st && st.packets === 0 && st.junkBytes >= NOT_TS_JUNK_BYTES) {
      return { state: 'error', message: 'not a transport stream (no 0x47 sync bytes 188 apart)' };
    }
    return { state: 'waiting' };
  }

  /** Why the input cannot deliver ('' when it can, or nothing is known): the message of the
   *  `error` state. */
  problem(): string {
    const d = this.describe(this.stats());
    return d.state === 'error' ? (d.message ?? 'error') : '';
  }

  status(): Record<string, unknown> {
    const st = this.stats();
    const now = this.o.clock.monotonic();
    const { state, message } = this.describe(st);
    return {
      index: this.index,
      type: this.type,
      mode: this.mode,
      state,
      ...(message ? { message } : {}),
      ...(this.moveError ? { moveError: this.moveError } : {}),
      lastValidAgoMs: this.lastValid < 0 ? null : Math.round(now - this.lastValid),
      ...(this.mode !== 'off' ? { validity: this.validity.verdict(now) } : {}),
      ...(this.transport ? { transport: this.transport.status() } : {}),
      ...(st
        ? {
            bitrate: this.bitrate(),
            packets: st.packets,
            junkBytes: st.junkBytes,
            syncLosses: st.syncLosses,
            tr101290: st.tr101290,
            priority1: st.priority1,
            priority2: st.priority2,
            scrambledPids: st.pids.filter((p) => p.scrambledPackets > 0).map((p) => p.pid),
          }
        : {}),
      ...(this.o.biss?.length ? { biss: this.bissStats() } : {}),
    };
  }
}
