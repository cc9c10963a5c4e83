// StreamEngine: the running part of one stream. Inputs in order (primary first) feed a splicer
// that keeps one continuous output TS across switches; the output goes to the hub (HTTP-TS,
// OTT, push outputs). A 250 ms tick applies the failover policy (./failover.ts); a timer every
// `checkIntervalMs` re-tests the primary while a backup runs. It knows nothing of config
// records or the reconciler: the stream driver (src/drivers/stream/) reads the record into
// StreamSettings and says what to restart.

import type { Logger } from 'pino';
import { ComponentFilter } from '../mpegts/component-filter.ts';
import { TS_PACKET_SIZE } from '../mpegts/packet.ts';
import {
  EIT_PF_ACTUAL_TABLE_ID,
  EIT_SCHEDULE_OTHER_LAST_TABLE_ID,
  TDT_TABLE_ID,
  TOT_TABLE_ID,
} from '../mpegts/psi.ts';
import { Splicer, type SplicerStats } from '../mpegts/splicer.ts';
import type { BissTarget } from '../native/biss.ts';
import type { Program, Section, Tr101290Counters } from '../native/ts.ts';
import type { Clock, Timer } from '../util/clock.ts';
import { type Alert, AlertGate } from './alerts.ts';
import type { EitSink, StreamBus } from './bus.ts';
import type { ClusterIdentity } from './cluster.ts';
import { checkActive, checkPrimary, type FailoverSettings, type InputHealth } from './failover.ts';
import { BusHub } from './hub.ts';
import {
  type BusRef,
  type EncoderMetrics,
  type InputFactory,
  NOT_SUPPORTED_YET,
  type TransportMetrics,
} from './input.ts';
import { moveInput, sameEndpoint } from './input-move.ts';
import { InputRunner } from './input-runner.ts';
import { BitrateMeter, SWITCH_LOG_SIZE, type SwitchEntry } from './meter.ts';
import type { OutputFactory, StreamOutput } from './output.ts';

export type StreamState = 'paused' | 'starting' | 'running' | 'no-signal' | 'error';

/** What the engine takes from the stream's record, already read and in engine units. */
export interface StreamSettings {
  name: string;
  /** The stream's `order`: under overload, streams of the highest order are shed first. */
  order?: number;
  /** Input records in priority order (primary first), each for its type's factory. */
  inputs: readonly Record<string, unknown>[];
  /** Push output records, each for its type's factory. */
  outputs: readonly Record<string, unknown>[];
  /** Silence (no valid TS) after which the active input counts as dead. */
  streamTimeoutMs: number;
  /** Priority-1 errors per second above which an input is left; 0 = never. */
  errorRate: number;
  errorWindowMs: number;
  /** Period of the primary's re-test while a backup runs (at least 1 s is used). */
  checkIntervalMs: number;
  fallbackCheck: boolean;
  /** 0 as received, 1 null packets dropped, 2 constant rate (auto), 3 constant rate (fixed). */
  bitrateMode: number;
  /** kbit/s for bitrate-mode 3; 0 = measured as in mode 2. */
  fixedRateKbps: number;
  /** Hand EIT/TDT/TOT sections of the active input to the EIT sink. */
  epgExport: boolean;
  /** Scrambled content is expected: no alert for it. */
  scrambledChannel: boolean;
  /** BISS descrambling targets (a multiplex stream's biss-pnr / biss-key); empty: none. */
  biss?: readonly BissTarget[];
  enableAlert: boolean;
  alertDelayMs: number;
  trace: boolean;
  /** Log what the TS analysis of each input finds as it changes (`mpegts-trace`). */
  mpegtsTrace?: boolean;
  /** `stream-type`: 0 every component, 1 audio only, 2 video only. */
  streamType?: number;
}

export interface StreamEngineDeps {
  log: Logger;
  clock: Clock;
  dataDir: string;
  inputFactories: Readonly<Record<string, InputFactory>>;
  outputFactories: Readonly<Record<string, OutputFactory>>;
  /** Another stream's or adapter's bus, for inputs that read one (InputContext.bus). */
  bus(ref: BusRef): StreamBus | undefined;
  /** Where exported EIT/TDT/TOT sections go, if the server has a guide. */
  eitSink(): EitSink | undefined;
  /** The server's cluster identity, for inputs and outputs with peer-auth. */
  cluster?(): ClusterIdentity | undefined;
}

/** The engine's part of a stream's status (the driver adds the record's and OTT's parts). */
export interface StreamEngineStatus {
  state: StreamState;
  message?: string;
  activeInput: number;
  inputs: Record<string, unknown>[];
  outputs: Record<string, unknown>[];
  bitrateIn: number;
  bitrateOut: number;
  tr101290: Tr101290Counters | null;
  programs: Program[];
  switches: Omit<SwitchEntry, 'mono'>[];
  switchCount: number;
  splicer: SplicerStats;
  alerts: Alert[];
}

/** The figures `/metrics` exports: cheap enough for a scrape of a hundred streams. */
export interface StreamMetrics {
  state: StreamState;
  bitrateIn: number;
  bitrateOut: number;
  activeInput: number;
  switchCount: number;
  tr101290: Tr101290Counters | null;
  /** Totals since the stream was created (counters: they only grow). */
  bytesIn: number;
  bytesOut: number;
  /** Link counters of the active input's transport (RIST, SRT), null for the others. */
  transport: TransportMetrics | null;
  /** Encoder progress of the active input (a transcoder), null for the others. */
  encoder: EncoderMetrics | null;
  /** Link counters of the outputs that have them (RIST, SRT), with their position. */
  outputTransports: (TransportMetrics & { output: number })[];
}

const TICK_MS = 250;
/** The sections `epg-export` forwards: EIT (all of 0x4E–0x6F), TDT and TOT. */
const EIT_TABLES = (tid: number) =>
  (tid >= EIT_PF_ACTUAL_TABLE_ID && tid <= EIT_SCHEDULE_OTHER_LAST_TABLE_ID) ||
  tid === TDT_TABLE_ID ||
  tid === TOT_TABLE_ID;
/** bitrate-mode 2: the constant rate is this much above the measured peak. */
const AUTO_CBR_HEADROOM = 1.1;

/** BISS targets in words: `programme 101, 102`, `the T2-MI carrier (PLP 0)`. */
function bissWhat(pnrs: number[]): string {
  const progs = pnrs.filter((p) => p > 0);
  const carriers = pnrs.filter((p) => p < 0).map((p) => -p - 1);
  return [
    ...(progs.length ? [`programme ${progs.join(', ')}`] : []),
    ...(carriers.length ? [`the T2-MI carrier (PLP ${carriers.join(', ')})`] : []),
  ].join(', ');
}

export class StreamEngine {
  readonly hub: BusHub;
  /** Replaced by the driver when the record changes; read at each use. */
  settings: StreamSettings;
  private log: Logger;
  private readonly clock: Clock;
  private runners: InputRunner[] = [];
  /** Running outputs by index, each with the function that takes it off the bus. */
  private outputs: ({ out: StreamOutput; off: () => void } | null)[] = [];
  private outputErrors: string[] = [];
  private active = -1;
  private pendingSplice: string | null = null;
  private readonly splicer = new Splicer();
  /** Audio-only / video-only (`stream-type` 1, 2); null keeps every component. */
  private components: ComponentFilter | null = null;
  private tick: Timer | null = null;
  /** One-shot at the active input's silence deadline, when it falls before the next tick. */
  private deadline: Timer | null = null;
  private check: Timer | null = null;
  private running_ = false;
  private startedAt = 0;
  private lastOutput = -1;
  private readonly switches: SwitchEntry[] = [];
  private switchCount = 0;
  private readonly alerts: AlertGate;
  private readonly outMeter: BitrateMeter;
  private autoRate = 0;
  private message = '';
  /** Bytes of TS the inputs delivered (probes included) and the stream put on its bus. */
  private bytesIn = 0;
  private bytesOut = 0;

  constructor(
    settings: StreamSettings,
    private readonly deps: StreamEngineDeps,
  ) {
    this.settings = settings;
    this.log = deps.log;
    this.clock = deps.clock;
    this.hub = new BusHub(this.log);
    this.alerts = new AlertGate(this.clock, this.log);
    this.outMeter = new BitrateMeter(this.clock);
    this.applyAlerts();
  }

  get running(): boolean {
    return this.running_;
  }

  /** The logger of a renamed stream. */
  relabel(log: Logger): void {
    this.log = log;
  }

  // ---- pipeline ---------------------------------------------------------------------------

  async start(): Promise<void> {
    if (this.running_) return;
    this.running_ = true;
    this.startedAt = this.clock.monotonic();
    this.lastOutput = -1;
    this.splicer.reset();
    this.splicer.dropNull = this.settings.bitrateMode === 1;
    const st = this.settings.streamType ?? 0;
    this.components = st === 0 ? null : new ComponentFilter(st === 1 ? 'audio' : 'video');
    this.message = '';
    const inputs = this.settings.inputs;
    this.runners = inputs.map((cfg, i) => this.makeRunner(i, cfg));
    const first = this.runners.findIndex((r) => r.supported);
    if (first < 0) {
      this.message = inputs.length ? 'no input of a supported type' : 'the stream has no input';
    } else {
      this.active = first;
      this.runners[first]!.open('active');
    }
    await this.startOutputs();
    this.tick = this.clock.setInterval(() => this.onTick(), TICK_MS);
    this.scheduleCheck();
    if (this.settings.trace) this.log.info({ active: this.active }, 'stream started');
  }

  async stop(): Promise<void> {
    if (!this.running_) return;
    this.running_ = false;
    this.tick?.cancel();
    this.check?.cancel();
    this.deadline?.cancel();
    this.tick = this.check = this.deadline = null;
    await Promise.all(this.runners.map((r) => r.close()));
    await Promise.all(this.outputs.map((_, j) => this.stopOutput(j)));
    this.outputs = [];
    this.active = -1;
    this.hub.end();
    this.alerts.clear();
  }

  private makeRunner(index: number, cfg: Record<string, unknown>): InputRunner {
    return new InputRunner({
      factories: this.deps.inputFactories,
      bus: (ref) => this.deps.bus(ref),
      cluster: () => this.deps.cluster?.(),
      ...(this.settings.order !== undefined ? { priority: this.settings.order } : {}),
      index,
      cfg,
      log: this.log,
      clock: this.clock,
      dataDir: this.deps.dataDir,
      streamName: this.settings.name,
      wantSections: () => this.settings.epgExport,
      mpegtsTrace: () => this.settings.mpegtsTrace === true,
      ...(this.settings.biss?.length ? { biss: this.settings.biss } : {}),
      onPackets: (r, p, owned) => this.onPackets(r, p, owned),
      onSections: (r, s) => this.onSections(r, s),
      smooth: () => this.hub.smooth(),
      onDiscontinuity: (r, reason) => {
        // Spliced like a switch to the same input: the output stays continuous.
        if (r.index === this.active && this.runners[r.index] === r) {
          this.pendingSplice = `input ${r.index}: ${reason}`;
        }
      },
    });
  }

  private async startOutputs(): Promise<void> {
    const specs = this.settings.outputs;
    this.outputs = specs.map(() => null);
    this.outputErrors = specs.map(() => '');
    await Promise.all(specs.map((cfg, j) => this.startOutput(j, cfg)));
  }

  private async startOutput(j: number, cfg: Record<string, unknown>): Promise<void> {
    const type = typeof cfg['type'] === 'string' ? cfg['type'] : '';
    const factory = this.deps.outputFactories[type];
    if (!factory) {
      this.outputErrors[j] = `output type ${type}: ${NOT_SUPPORTED_YET}`;
      return;
    }
    const mode = this.settings.bitrateMode;
    const out = factory(cfg, {
      log: this.log.child({ output: j }),
      clock: this.clock,
      constantRate: mode === 2 || mode === 3,
      cbrRate: () => this.cbrRate(),
      cluster: () => this.deps.cluster?.(),
    });
    try {
      await out.start();
      this.outputs[j] = { out, off: this.hub.subscribe(out) };
      this.outputErrors[j] = '';
    } catch (err) {
      this.outputErrors[j] = (err as Error).message;
      this.log.error({ output: j, err: this.outputErrors[j] }, 'output failed to start');
      await out.close();
    }
  }

  private async stopOutput(j: number): Promise<void> {
    const o = this.outputs[j];
    o?.off();
    await o?.out.close();
    this.outputs[j] = null;
  }

  /** bit/s for bitrate-modes 2 and 3 (mode 3 with no fixed rate works like mode 2). */
  private cbrRate(): number {
    const { bitrateMode, fixedRateKbps } = this.settings;
    if (bitrateMode === 3 && fixedRateKbps > 0) return fixedRateKbps * 1000;
    return this.autoRate;
  }

  /** Restart input `i` alone (its record changed, was added or removed). An input that moves
   *  to another port or address binds there before the old one closes (./input-move.ts):
   *  when it cannot, the old one keeps receiving and this throws why. */
  async restartInput(i: number): Promise<void> {
    const specs = this.settings.inputs;
    const old = this.runners[i];
    const mode = old?.mode ?? 'off';
    const cfg = specs[i];
    if (old && cfg && mode !== 'off' && old.isOpen && !sameEndpoint(old.cfg, cfg)) {
      await moveInput(
        {
          index: i,
          old,
          mode,
          clock: this.clock,
          make: (c) => this.makeRunner(i, c),
          install: (r) => {
            this.runners[i] = r;
          },
        },
        cfg,
      );
      if (i === this.active) this.pendingSplice = `input ${i} moved (config change)`;
      this.log.info({ input: i }, 'input moved for a config change');
      return;
    }
    await old?.close();
    if (!cfg) {
      this.runners.length = Math.min(this.runners.length, specs.length);
      if (this.active >= specs.length) {
        this.active = -1;
        const first = this.runners.findIndex((r) => r.supported);
        if (first >= 0) this.switchTo(first, 'active input removed');
      }
      return;
    }
    const r = this.makeRunner(i, cfg);
    this.runners[i] = r;
    if (mode !== 'off') r.open(mode);
    if (i === this.active) this.pendingSplice = `input ${i} restarted (config change)`;
    if (this.active < 0 && r.supported) {
      this.active = i;
      r.open('active');
    }
    this.log.info({ input: i }, 'input restarted for a config change');
  }

  /** Restart output `j` alone (its record changed, was added or removed). */
  async restartOutput(j: number): Promise<void> {
    await this.stopOutput(j);
    const specs = this.settings.outputs;
    if (j >= specs.length) {
      this.outputs.length = Math.min(this.outputs.length, specs.length);
      this.outputErrors.length = this.outputs.length;
      return;
    }
    await this.startOutput(j, specs[j]!);
  }

  // ---- data path --------------------------------------------------------------------------

  private onPackets(r: InputRunner, packets: Buffer, owned: boolean): void {
    // A runner opened beside the input's own while it moves is heard only once installed.
    if (this.runners[r.index] !== r) return;
    this.bytesIn += packets.length;
    if (r.index !== this.active) return;
    if (this.pendingSplice !== null) {
      this.splicer.splice();
      this.hub.discontinuity(this.pendingSplice);
      this.pendingSplice = null;
    }
    let out = this.splicer.push(packets, owned);
    if (this.components) out = this.components.push(out);
    if (out.length === 0) return;
    // Switch → first packet out (the splicer has let the new input through: its PAT came).
    const last = this.switches[this.switches.length - 1];
    if (last && last.firstPacketMs === undefined) {
      last.firstPacketMs = Math.round(this.clock.monotonic() - last.mono);
    }
    this.lastOutput = this.clock.monotonic();
    this.bytesOut += out.length;
    this.outMeter.add(out.length);
    this.hub.packets(out);
  }

  private onSections(r: InputRunner, sections: Section[]): void {
    const sink = this.deps.eitSink();
    if (!sink || r.index !== this.active || this.runners[r.index] !== r) return;
    for (const s of sections) {
      if (EIT_TABLES(s.tableId)) sink.section({ stream: this.settings.name, pid: s.pid }, s.data);
    }
  }

  // ---- failover ---------------------------------------------------------------------------

  private failover(): FailoverSettings {
    return { streamTimeoutMs: this.settings.streamTimeoutMs, errorRate: this.settings.errorRate };
  }

  private health(): InputHealth[] {
    const s = this.failover();
    const windowMs = this.settings.errorWindowMs;
    const now = this.clock.monotonic();
    return this.runners.map((r) => ({
      supported: r.supported,
      usable: r.supported && !(r.failed && !r.isOpen),
      // The active input's clock starts when it became active, not when it was opened to be
      // probed: otherwise a dead primary re-entered from a dead backup is left at once.
      openFor: !r.isOpen
        ? -1
        : now - (r.mode === 'active' ? Math.max(r.openedAt, r.activeSince) : r.openedAt),
      alive: r.deliveredWithin(s.streamTimeoutMs),
      errorRate: r.isOpen ? r.errorRate(windowMs) : null,
    }));
  }

  private onTick(): void {
    if (!this.running_ || this.active < 0) return;
    const s = this.failover();
    const health = this.health();
    const d = checkActive(health, this.active, s);
    if (d) {
      // Say what was wrong with the input left: "no valid TS for 2 s (no PMT)".
      const r = this.runners[this.active];
      const why = d.reason.startsWith('no valid TS') && r ? r.problem() || r.validityNow() : '';
      this.switchTo(d.to, why ? `${d.reason} (${why})` : d.reason);
    }
    this.outMeter.sample();
    this.updateAutoRate();
    this.evaluateAlerts(health, s);
    this.armDeadline();
  }

  /** Monotonic ms at which the active input's silence reaches stream-timeout (failover.ts:
   *  no valid TS for the timeout, and active for at least as long), or -1 when it is closed. */
  private silenceDeadline(): number {
    const r = this.runners[this.active];
    if (!r?.isOpen) return -1;
    const timeout = this.settings.streamTimeoutMs;
    const since = Math.max(r.openedAt, r.activeSince);
    return Math.max(r.lastValid >= 0 ? r.lastValid + timeout + 1 : 0, since + timeout);
  }

  /** The tick runs every 250 ms, so a deadline between two ticks was decided up to a tick late
   *  (kill → switch up to timeout + 250 ms): when it falls before the next tick, a one-shot
   *  timer decides at the deadline itself. */
  private armDeadline(): void {
    if (this.deadline) return;
    const at = this.silenceDeadline();
    if (at < 0) return;
    const wait = at - this.clock.monotonic();
    // A deadline already passed was decided (or, with no input to go to, cannot be): the tick
    // carries on. Re-arming for it would spin.
    if (wait <= 0 || wait >= TICK_MS) return;
    this.deadline = this.clock.setTimeout(() => {
      this.deadline = null;
      this.onTick();
    }, wait);
  }

  private onCheck(): void {
    if (!this.running_ || this.active <= 0 || !this.settings.fallbackCheck) return;
    const primary = this.runners[0];
    if (!primary?.supported) return;
    if (!primary.isOpen) {
      primary.open('probe');
      return; // judged at the next check, once it had time to deliver
    }
    const d = checkPrimary(this.health(), this.active, this.failover());
    if (d) this.switchTo(0, d.reason);
  }

  private switchTo(to: number, reason: string): void {
    const from = this.active;
    if (to === from) return;
    const entry: SwitchEntry = {
      at: new Date(this.clock.now()).toISOString(),
      mono: this.clock.monotonic(),
      from,
      to,
      reason,
    };
    this.switches.push(entry);
    if (this.switches.length > SWITCH_LOG_SIZE) this.switches.shift();
    this.switchCount++;
    this.log.warn({ from, to, reason }, 'input switch');
    const old = this.runners[from];
    if (old) {
      if (from === 0 && this.settings.fallbackCheck) old.mode = 'probe';
      else void old.close();
    }
    this.active = to;
    const next = this.runners[to]!;
    if (to === 0) {
      // Back on the primary: backups other than the one just left are closed too.
      for (const r of this.runners) if (r.index !== 0 && r.isOpen) void r.close();
    }
    next.open('active');
    this.pendingSplice = `input ${from} → ${to}: ${reason}`;
  }

  private updateAutoRate(): void {
    const mode = this.settings.bitrateMode;
    if (mode !== 2 && mode !== 3) return;
    const peak = this.outMeter.peak();
    if (peak > 0 && peak * AUTO_CBR_HEADROOM > this.autoRate) {
      // Only raised, never lowered: the rate stays constant once the content is known.
      this.autoRate =
        Math.ceil((peak * AUTO_CBR_HEADROOM) / 8000 / TS_PACKET_SIZE) * TS_PACKET_SIZE * 8000;
    }
  }

  /** The alert gate's switch and delay, from the settings. */
  applyAlerts(): void {
    this.alerts.enabled = this.settings.enableAlert;
    this.alerts.delayMs = this.settings.alertDelayMs;
  }

  /** Every fault of the alert gate, raised or not (the alerter's view; cheaper than status()). */
  alertList(): Alert[] {
    return this.alerts.list();
  }

  /** A fault found outside the engine (the alerter's error-rate rules), put through the same
   *  gate so that enable-alert and alert-delay apply to it; ignored while stopped. */
  reportFault(key: string, present: boolean, message: string): void {
    if (this.running_) this.alerts.set(key, present, message);
  }

  /** (Re)arm the primary's fallback check at `checkIntervalMs` (at least once a second). */
  scheduleCheck(): void {
    this.check?.cancel();
    this.check = null;
    if (!this.running_) return;
    const every = Math.max(1000, this.settings.checkIntervalMs);
    this.check = this.clock.setInterval(() => this.onCheck(), every);
  }

  private evaluateAlerts(health: InputHealth[], s: FailoverSettings): void {
    const name = this.settings.name;
    const state = this.state();
    this.alerts.set('no-signal', state === 'no-signal', `stream ${name}: no signal on any input`);
    health.forEach((h, i) => {
      const bad = h.errorRate !== null && s.errorRate > 0 && h.errorRate > s.errorRate;
      this.alerts.set(
        `input-${i}-errors`,
        bad,
        `input ${i}: priority-1 errors ${h.errorRate?.toFixed(1)}/s`,
      );
      const r = this.runners[i]!;
      this.alerts.set(
        `input-${i}-unsupported`,
        !r.supported,
        `input ${i}: type ${r.type} not supported yet`,
      );
      const problem = r.supported ? r.problem() : '';
      this.alerts.set(`input-${i}-failed`, problem !== '', `input ${i}: ${problem}`);
    });
    // Running on a backup is worth an alert (the primary is down or bad), but not on top of
    // no-signal, where every input is tried in turn.
    const onBackup = this.active > 0 && state !== 'no-signal';
    const primary = this.runners[0];
    this.alerts.set(
      'backup-active',
      onBackup,
      `stream ${name}: on backup input ${this.active}` +
        (primary ? ` (primary: ${primary.problem() || primary.validityNow()})` : ''),
    );
    const still = (this.runners[this.active]?.bissStats()?.targets ?? []).filter(
      (x) => x.state === 'still scrambled',
    );
    this.alerts.set(
      'scrambled',
      this.scrambledPids().length > 0 && !this.settings.scrambledChannel,
      still.length > 0
        ? `stream ${name}: still scrambled after BISS descrambling: ${bissWhat(still.map((x) => x.pnr))} (wrong key?)`
        : `stream ${name}: scrambled content on the active input`,
    );
  }

  // ---- what it reports --------------------------------------------------------------------

  state(): StreamState {
    if (!this.running_) return 'paused';
    if (this.active < 0) return 'error';
    const now = this.clock.monotonic();
    const timeout = this.settings.streamTimeoutMs;
    // Output alone is not enough: the active input must be delivering valid TS (PAT + PMT).
    const valid = this.runners[this.active]?.deliveredWithin(timeout) ?? false;
    if (valid && this.lastOutput >= 0 && now - this.lastOutput < timeout) return 'running';
    if (now - this.startedAt < timeout) return 'starting';
    return 'no-signal';
  }

  /** PIDs of the active input with scrambled packets (after BISS descrambling, if any). */
  scrambledPids(): number[] {
    return this.runners[this.active]?.scrambledPids() ?? [];
  }

  metrics(): StreamMetrics {
    const st = this.runners[this.active]?.stats() ?? null;
    return {
      state: this.state(),
      bitrateIn: this.runners[this.active]?.bitrate() ?? 0,
      bitrateOut: this.outMeter.rate(),
      activeInput: this.active,
      switchCount: this.switchCount,
      tr101290: st?.tr101290 ?? null,
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      transport: this.runners[this.active]?.transportMetrics() ?? null,
      encoder: this.runners[this.active]?.encoderMetrics() ?? null,
      outputTransports: this.outputs.flatMap((o, output) => {
        const m = o?.out.metrics?.();
        return m ? [{ ...m, output }] : [];
      }),
    };
  }

  status(): StreamEngineStatus {
    const act = this.runners[this.active];
    const st = act?.stats() ?? null;
    return {
      state: this.state(),
      ...(this.message ? { message: this.message } : {}),
      activeInput: this.active,
      inputs: this.runners.map((r) => r.status()),
      outputs: this.settings.outputs.map((_, j) => ({
        ...(this.outputs[j]?.out.status() ?? {}),
        ...(this.outputErrors[j] ? { state: 'error', message: this.outputErrors[j] } : {}),
      })),
      bitrateIn: this.runners[this.active]?.bitrate() ?? 0,
      bitrateOut: this.outMeter.rate(),
      tr101290: st?.tr101290 ?? null,
      programs: act?.programs() ?? [],
      switches: this.switches.map(({ mono: _m, ...e }) => e),
      switchCount: this.switchCount,
      splicer: this.splicer.stats,
      alerts: this.alerts.list(),
    };
  }
}
