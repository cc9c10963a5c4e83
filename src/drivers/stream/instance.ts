// StreamInstance: one running stream. Inputs in order (primary first) feed a splicer that keeps
// one continuous output TS across switches; the output goes to the bus (HTTP-TS, OTT, outputs).
// A 250 ms tick applies the failover policy; a `check-interval` timer re-tests the primary.

import type { Logger } from 'pino';
import { bool, num, str } from '../../config/spec-values.ts';
import type { Resource } from '../../config/types.ts';
import { withArchive } from '../../dvr/attach.ts';
import { AlertGate } from '../../engine/alerts.ts';
import { EIT_SINK_SERVICE, type StreamBus } from '../../engine/bus.ts';
import {
  checkActive,
  checkPrimary,
  type FailoverSettings,
  type InputHealth,
} from '../../engine/failover.ts';
import { BusHub } from '../../engine/hub.ts';
import { NOT_SUPPORTED_YET } from '../../engine/input.ts';
import { InputRunner } from '../../engine/input-runner.ts';
import { BitrateMeter, SWITCH_LOG_SIZE, type SwitchEntry } from '../../engine/meter.ts';
import type { StreamOutput } from '../../engine/output.ts';
import { bindingFromStreamSpec, type StreamBinding } from '../../epg/bindings.ts';
import { INPUT_FACTORIES } from '../../inputs/registry.ts';
import { TS_PACKET_SIZE } from '../../mpegts/packet.ts';
import {
  EIT_PF_ACTUAL_TABLE_ID,
  EIT_SCHEDULE_OTHER_LAST_TABLE_ID,
  TDT_TABLE_ID,
  TOT_TABLE_ID,
} from '../../mpegts/psi.ts';
import { Splicer } from '../../mpegts/splicer.ts';
import type { Section, Tr101290Counters } from '../../native/ts.ts';
import { HttpTsFanout } from '../../ott/http-ts.ts';
import type { OttReply, OttRequest } from '../../ott/request.ts';
import { OTT_ROUTER_SERVICE } from '../../ott/router.ts';
import { OTT_FACTORY_SERVICE, type OttService } from '../../ott/types.ts';
import { OUTPUT_FACTORIES } from '../../outputs/registry.ts';
import type { Host, Instance, ResourceStatus } from '../../reconciler/driver.ts';
import type { FieldChange } from '../../reconciler/types.ts';
import type { Timer } from '../../util/clock.ts';
import { storageById } from '../storage.ts';
import { readUpdate } from './hot.ts';
import { streamRegistry } from './registry.ts';

export type StreamState = 'paused' | 'starting' | 'running' | 'no-signal' | 'error';
type Spec = Record<string, unknown>;

const TICK_MS = 250;
/** The sections `epg-export` forwards: EIT (all of 0x4E–0x6F), TDT and TOT. */
const EIT_TABLES = (tid: number) =>
  (tid >= EIT_PF_ACTUAL_TABLE_ID && tid <= EIT_SCHEDULE_OTHER_LAST_TABLE_ID) ||
  tid === TDT_TABLE_ID ||
  tid === TOT_TABLE_ID;
/** bitrate-mode 2: the constant rate is this much above the measured peak. */
const AUTO_CBR_HEADROOM = 1.1;

export class StreamInstance implements Instance<Spec> {
  readonly hub: BusHub;
  readonly httpTs = new HttpTsFanout();
  key: string;
  private spec: Spec;
  private log: Logger;
  private runners: InputRunner[] = [];
  /** Running outputs by index, each with the function that takes it off the bus. */
  private outputs: ({ out: StreamOutput; off: () => void } | null)[] = [];
  private outputErrors: string[] = [];
  private active = -1;
  private pendingSplice: string | null = null;
  private splicer = new Splicer();
  private ott: OttService | null = null;
  private unregisterName: (() => void) | null = null;
  private tick: Timer | null = null;
  private check: Timer | null = null;
  private running = false;
  private startedAt = 0;
  private lastOutput = -1;
  private switches: SwitchEntry[] = [];
  private switchCount = 0;
  private alerts: AlertGate;
  private outMeter: BitrateMeter;
  private autoRate = 0;
  private closed = false;
  private message = '';

  constructor(
    res: Resource<Spec>,
    private readonly host: Host,
  ) {
    this.key = res.key;
    this.spec = res.spec;
    this.log = host.log.child({ stream: this.name });
    this.hub = new BusHub(this.log);
    this.hub.subscribe(this.httpTs);
    this.alerts = new AlertGate(host.clock, this.log);
    this.outMeter = new BitrateMeter(host.clock);
  }

  get name(): string {
    return str(this.spec, 'stream-name');
  }
  get id(): number {
    return num(this.spec, 'id', 0);
  }
  get order(): number {
    return num(this.spec, 'order', 0);
  }

  /** The stream's EPG binding (epg-source, epg-channel, epg-channel-set) from its current
   *  record; the EPG drivers read it through the stream registry. */
  epgBinding(): StreamBinding {
    return bindingFromStreamSpec(this.spec);
  }

  async start(): Promise<void> {
    this.registerName();
    this.applyAll();
    streamRegistry(this.host.services).add(this);
    if (!bool(this.spec, 'pause', true)) await this.startPipeline();
  }

  // ---- pipeline ---------------------------------------------------------------------------

  private async startPipeline(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.startedAt = this.host.clock.monotonic();
    this.lastOutput = -1;
    this.splicer.reset();
    this.message = '';
    const inputs = this.inputSpecs();
    this.runners = inputs.map((cfg, i) => this.makeRunner(i, cfg));
    const first = this.runners.findIndex((r) => r.supported);
    if (first < 0) {
      this.message = inputs.length ? 'no input of a supported type' : 'the stream has no input';
    } else {
      this.active = first;
      this.runners[first]!.open('active');
    }
    await this.startOutputs();
    this.tick = this.host.clock.setInterval(() => this.onTick(), TICK_MS);
    this.scheduleCheck();
    if (bool(this.spec, 'trace', false)) this.log.info({ active: this.active }, 'stream started');
  }

  private async stopPipeline(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.tick?.cancel();
    this.check?.cancel();
    this.tick = this.check = null;
    await Promise.all(this.runners.map((r) => r.close()));
    await Promise.all(this.outputs.map((_, j) => this.stopOutput(j)));
    this.outputs = [];
    this.active = -1;
    this.hub.end();
    this.alerts.clear();
  }

  private inputSpecs(): Spec[] {
    const v = this.spec['input'];
    return Array.isArray(v) ? (v as Spec[]) : [];
  }

  private outputSpecs(): Spec[] {
    const v = this.spec['output'];
    return Array.isArray(v) ? (v as Spec[]) : [];
  }

  private makeRunner(index: number, cfg: Spec): InputRunner {
    return new InputRunner({
      factories: INPUT_FACTORIES,
      bus: (ref) =>
        ref.kind === 'stream'
          ? this.host.lookup<StreamInstance>('stream', ref.key)?.hub
          : this.host.lookup<Instance & { readonly hub?: StreamBus }>('dvb-adapter', ref.key)?.hub,
      index,
      cfg,
      log: this.log,
      clock: this.host.clock,
      dataDir: this.host.dataDir,
      streamName: this.name,
      wantSections: () => bool(this.spec, 'epg-export', false),
      onPackets: (r, p, owned) => this.onPackets(r, p, owned),
      onSections: (r, s) => this.onSections(r, s),
      onDiscontinuity: (r, reason) => {
        // Spliced like a switch to the same input: the output stays continuous.
        if (r.index === this.active) this.pendingSplice = `input ${r.index}: ${reason}`;
      },
    });
  }

  private async startOutputs(): Promise<void> {
    const specs = this.outputSpecs();
    this.outputs = specs.map(() => null);
    this.outputErrors = specs.map(() => '');
    await Promise.all(specs.map((cfg, j) => this.startOutput(j, cfg)));
  }

  private async startOutput(j: number, cfg: Spec): Promise<void> {
    const type = str(cfg, 'type');
    const factory = OUTPUT_FACTORIES[type];
    if (!factory) {
      this.outputErrors[j] = `output type ${type}: ${NOT_SUPPORTED_YET}`;
      return;
    }
    const mode = num(this.spec, 'bitrate-mode', 0);
    const out = factory(cfg, {
      log: this.log.child({ output: j }),
      clock: this.host.clock,
      constantRate: mode === 2 || mode === 3,
      cbrRate: () => this.cbrRate(),
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

  /** bit/s for bitrate-modes 2 and 3 (mode 3 with mpegts-bitrate 0 works like mode 2). */
  private cbrRate(): number {
    const fixed = num(this.spec, 'mpegts-bitrate', 0);
    if (num(this.spec, 'bitrate-mode', 0) === 3 && fixed > 0) return fixed * 1000;
    return this.autoRate;
  }

  // ---- data path --------------------------------------------------------------------------

  private onPackets(r: InputRunner, packets: Buffer, owned: boolean): void {
    if (r.index !== this.active) return;
    if (this.pendingSplice !== null) {
      this.splicer.splice();
      this.hub.discontinuity(this.pendingSplice);
      const last = this.switches[this.switches.length - 1];
      if (last && last.firstPacketMs === undefined) {
        last.firstPacketMs = Math.round(this.host.clock.monotonic() - last.mono);
      }
      this.pendingSplice = null;
    }
    const out = this.splicer.push(packets, owned);
    if (out.length === 0) return;
    this.lastOutput = this.host.clock.monotonic();
    this.outMeter.add(out.length);
    this.hub.packets(out);
  }

  private onSections(r: InputRunner, sections: Section[]): void {
    const sink = this.host.services.get(EIT_SINK_SERVICE);
    if (!sink || r.index !== this.active) return;
    for (const s of sections) {
      if (EIT_TABLES(s.tableId)) sink.section({ stream: this.name, pid: s.pid }, s.data);
    }
  }

  // ---- failover ---------------------------------------------------------------------------

  private settings(): FailoverSettings {
    return {
      streamTimeoutMs: num(this.spec, 'stream-timeout', 30_000_000) / 1000,
      errorRate: num(this.spec, 'failover-error-rate', 20),
    };
  }

  private health(): InputHealth[] {
    const s = this.settings();
    const windowMs = num(this.spec, 'failover-error-window', 10) * 1000;
    const now = this.host.clock.monotonic();
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
    if (!this.running || this.active < 0) return;
    const s = this.settings();
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
  }

  private onCheck(): void {
    if (!this.running || this.active <= 0 || !bool(this.spec, 'fallback-check', true)) return;
    const primary = this.runners[0];
    if (!primary?.supported) return;
    if (!primary.isOpen) {
      primary.open('probe');
      return; // judged at the next check, once it had time to deliver
    }
    const d = checkPrimary(this.health(), this.active, this.settings());
    if (d) this.switchTo(0, d.reason);
  }

  private switchTo(to: number, reason: string): void {
    const from = this.active;
    if (to === from) return;
    const entry: SwitchEntry = {
      at: new Date(this.host.clock.now()).toISOString(),
      mono: this.host.clock.monotonic(),
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
      if (from === 0 && bool(this.spec, 'fallback-check', true)) old.mode = 'probe';
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
    if (num(this.spec, 'bitrate-mode', 0) !== 2 && num(this.spec, 'bitrate-mode', 0) !== 3) return;
    const peak = this.outMeter.peak();
    if (peak > 0 && peak * AUTO_CBR_HEADROOM > this.autoRate) {
      // Only raised, never lowered: the rate stays constant once the content is known.
      this.autoRate =
        Math.ceil((peak * AUTO_CBR_HEADROOM) / 8000 / TS_PACKET_SIZE) * TS_PACKET_SIZE * 8000;
    }
  }

  private evaluateAlerts(health: InputHealth[], s: FailoverSettings): void {
    const state = this.state();
    this.alerts.set(
      'no-signal',
      state === 'no-signal',
      `stream ${this.name}: no signal on any input`,
    );
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
      `stream ${this.name}: on backup input ${this.active}` +
        (primary ? ` (primary: ${primary.problem() || primary.validityNow()})` : ''),
    );
    const st = this.runners[this.active]?.stats();
    const scrambled = !!st && st.pids.some((p) => p.scrambled !== 0);
    this.alerts.set(
      'scrambled',
      scrambled && !bool(this.spec, 'scrambled-channel', false),
      `stream ${this.name}: scrambled content on the active input`,
    );
  }

  state(): StreamState {
    if (!this.running) return 'paused';
    if (this.active < 0) return 'error';
    const now = this.host.clock.monotonic();
    const timeout = this.settings().streamTimeoutMs;
    // Output alone is not enough: the active input must be delivering valid TS (PAT + PMT).
    const valid = this.runners[this.active]?.deliveredWithin(timeout) ?? false;
    if (valid && this.lastOutput >= 0 && now - this.lastOutput < timeout) return 'running';
    if (now - this.startedAt < timeout) return 'starting';
    return 'no-signal';
  }

  // ---- HTTP, OTT --------------------------------------------------------------------------

  private registerName(): void {
    const router = this.host.services.get(OTT_ROUTER_SERVICE);
    if (!router || !this.name) return;
    try {
      this.unregisterName = router.register(this.name, (req, reply, rest) =>
        this.handleHttp(req, reply, rest),
      );
    } catch (err) {
      this.message = (err as Error).message;
    }
  }

  private handleHttp(req: OttRequest, reply: OttReply, rest: string): unknown {
    if (rest === 'mpegts') {
      if (num(this.spec, 'ott-http', 0) !== 1) {
        return reply
          .code(404)
          .send({ status: 404, message: `HTTP-TS is off for ${this.name} (ott-http 0)` });
      }
      if (!this.running) {
        // A paused stream sends nothing: say so instead of holding the client open forever.
        return reply.code(503).send({ status: 503, message: `stream ${this.name} is paused` });
      }
      this.httpTs.serve(reply);
      return reply;
    }
    if (this.ott) return this.ott.handle(req, reply, rest);
    return reply.code(404).send({ status: 404, message: `no ${rest} for stream ${this.name}` });
  }

  private syncOtt(): void {
    const want = num(this.spec, 'ott-hls', 0) > 0;
    const factory = this.host.services.get(OTT_FACTORY_SERVICE);
    if (want && factory && !this.ott) {
      const ott = factory({
        name: this.name,
        spec: this.spec,
        bus: this.hub,
        clock: this.host.clock,
        log: this.log.child({ ott: true }),
        services: this.host.services,
      });
      // DVR hook (src/dvr/attach.ts): archive playback on the live URLs and the recorder.
      this.ott = withArchive(ott, {
        storage: (id) => storageById(this.host, id),
        services: this.host.services,
        clock: this.host.clock,
        log: this.host.log,
        name: this.name,
        spec: () => this.spec,
        state: () => this.state(),
        scrambled: () =>
          (this.runners[this.active]?.stats()?.pids ?? [])
            .filter((p) => p.scrambled !== 0)
            .map((p) => p.pid),
      });
    } else if (!want && this.ott) {
      this.ott.close();
      this.ott = null;
    } else {
      this.ott?.update(this.spec);
    }
  }

  /** Settings the stream takes from its record at start and at every whole restart. */
  private applyAll(): void {
    this.splicer.dropNull = num(this.spec, 'bitrate-mode', 0) === 1;
    this.applyAlerts();
    if (num(this.spec, 'ott-http', 0) !== 1) this.httpTs.closeAll();
    this.syncOtt();
  }

  private applyAlerts(): void {
    this.alerts.enabled = bool(this.spec, 'enable-alert', true);
    this.alerts.delayMs = num(this.spec, 'alert-delay', 0) * 1000;
  }

  /** The primary's fallback check runs every `check-interval` µs (at least once a second). */
  private scheduleCheck(): void {
    this.check?.cancel();
    const every = Math.max(1000, num(this.spec, 'check-interval', 60_000_000) / 1000);
    this.check = this.host.clock.setInterval(() => this.onCheck(), every);
  }

  // ---- reconciler contract ----------------------------------------------------------------

  /** Carry out what the plan says, and only that: hot fields through their effects
   *  (./hot.ts), restarts scoped to one input or output where the plan scopes them. */
  async update(next: Resource<Spec>, changes: FieldChange[]): Promise<void> {
    const prevName = this.name;
    this.spec = next.spec;
    this.key = next.key;
    const u = readUpdate(changes);
    if (u.unknownHot.length) {
      this.log.warn({ fields: u.unknownHot }, 'hot fields without a setter: restarting the stream');
    }
    if (this.name !== prevName) {
      this.unregisterName?.();
      this.unregisterName = null;
      this.ott?.close();
      this.ott = null;
      this.httpTs.closeAll();
      this.registerName();
      this.log = this.host.log.child({ stream: this.name });
    }
    if (u.whole) this.applyAll();
    else {
      if (u.effects.has('alerts')) this.applyAlerts();
      if (u.effects.has('archive')) this.ott?.update(this.spec);
      if (u.effects.has('check-timer') && this.running) this.scheduleCheck();
    }
    if (bool(this.spec, 'pause', true)) {
      await this.stopPipeline();
      this.httpTs.closeAll(); // clients get the end of the stream, not a silent connection
      return;
    }
    if (!this.running) return this.startPipeline();
    if (u.whole) {
      await this.stopPipeline();
      return this.startPipeline();
    }
    for (const i of u.inputs) await this.restartInput(i);
    for (const j of u.outputs) await this.restartOutputAt(j);
  }

  private async restartInput(i: number): Promise<void> {
    const specs = this.inputSpecs();
    const old = this.runners[i];
    const mode = old?.mode ?? 'off';
    await old?.close();
    if (i >= specs.length) {
      this.runners.length = Math.min(this.runners.length, specs.length);
      if (this.active >= specs.length) {
        this.active = -1;
        const first = this.runners.findIndex((r) => r.supported);
        if (first >= 0) this.switchTo(first, 'active input removed');
      }
      return;
    }
    const r = this.makeRunner(i, specs[i]!);
    this.runners[i] = r;
    if (mode !== 'off') r.open(mode);
    if (i === this.active) this.pendingSplice = `input ${i} restarted (config change)`;
    if (this.active < 0 && r.supported) {
      this.active = i;
      r.open('active');
    }
    this.log.info({ input: i }, 'input restarted for a config change');
  }

  private async restartOutputAt(j: number): Promise<void> {
    await this.stopOutput(j);
    const specs = this.outputSpecs();
    if (j >= specs.length) {
      this.outputs.length = Math.min(this.outputs.length, specs.length);
      this.outputErrors.length = this.outputs.length;
      return;
    }
    await this.startOutput(j, specs[j]!);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.stopPipeline();
    this.unregisterName?.();
    this.unregisterName = null;
    this.ott?.close();
    this.ott = null;
    this.httpTs.closeAll();
    streamRegistry(this.host.services).remove(this);
  }

  /** The figures `/metrics` exports, without the rest of status() (programs, OTT, archive):
   *  a scrape of a hundred streams must not hold the event loop. */
  metricsSnapshot(): StreamMetricsSnapshot {
    const st = this.runners[this.active]?.stats() ?? null;
    return {
      state: this.state(),
      bitrateIn: st ? st.pcrBitrate || st.arrivalBitrate : 0,
      bitrateOut: this.outMeter.rate(),
      activeInput: this.active,
      switchCount: this.switchCount,
      httpClients: this.httpTs.stats().clients,
      tr101290: st?.tr101290 ?? null,
    };
  }

  status(): ResourceStatus {
    const state = this.state();
    const act = this.runners[this.active];
    const st = act?.stats() ?? null;
    return {
      state,
      ...(this.message ? { message: this.message } : {}),
      id: this.id,
      name: this.name,
      displayName: str(this.spec, 'display-name'),
      activeInput: this.active,
      inputs: this.runners.map((r) => r.status()),
      outputs: this.outputSpecs().map((_, j) => ({
        ...(this.outputs[j]?.out.status() ?? {}),
        ...(this.outputErrors[j] ? { state: 'error', message: this.outputErrors[j] } : {}),
      })),
      bitrateIn: st ? st.pcrBitrate || st.arrivalBitrate : 0,
      bitrateOut: this.outMeter.rate(),
      tr101290: st?.tr101290 ?? null,
      programs: act?.programs() ?? [],
      switches: this.switches.map(({ mono: _m, ...e }) => e),
      switchCount: this.switchCount,
      splicer: this.splicer.stats,
      alerts: this.alerts.list(),
      httpTs: this.httpTs.stats(),
      ...(this.ott ? { ott: this.ott.status() } : {}),
    };
  }
}

export interface StreamMetricsSnapshot {
  state: string;
  bitrateIn: number;
  bitrateOut: number;
  activeInput: number;
  switchCount: number;
  httpClients: number;
  tr101290: Tr101290Counters | null;
}
