// DvbAdapterInstance: one tuner adapter — mode 0 tunes and puts the dvr's TS on `hub` for its
// dvb inputs and demuxers (lock polled, re-tuned per src/dvb/lock-watch.ts), mode 1 scans on
// request (scanner.ts), mode 2 monitors read-only. Faults are status, retried while they may mend.
import type { Logger } from 'pino';
import type { AdapterView } from '../../alerting/sources.ts';
import type { Resource } from '../../config/types.ts';
import type { TransponderTuning } from '../../dvb/delivery.ts';
import { LockWatch } from '../../dvb/lock-watch.ts';
import { chooseFilter, type FilterChoice } from '../../dvb/pid-filter.ts';
import { isSatellite, type Tuning, tuningOf } from '../../dvb/tuning.ts';
import { EIT_SINK_SERVICE } from '../../engine/bus.ts';
import { BusHub } from '../../engine/hub.ts';
import { TsTrace } from '../../engine/ts-trace.ts';
import {
  EIT_PF_ACTUAL_TABLE_ID,
  EIT_SCHEDULE_OTHER_LAST_TABLE_ID,
  TDT_TABLE_ID,
  TOT_TABLE_ID,
} from '../../mpegts/psi.ts';
import { T2miReader } from '../../mpegts/t2mi.ts';
import { BissDescrambler } from '../../native/biss.ts';
import { type DvbStatus, WHOLE_TS_PID } from '../../native/dvb.ts';
import { TsAnalyzer } from '../../native/ts.ts';
import type { Host, Instance, ResourceStatus, SpecOf } from '../../reconciler/driver.ts';
import type { FieldChange } from '../../reconciler/types.ts';
import type { Timer } from '../../util/clock.ts';
import type { AdapterRow } from '../../web/rows.ts';
import { Cam } from './cam.ts';
import type { DvbDevices, Dvr, Frontend } from './devices.ts';
import { dvbAdapterRegistry } from './registry.ts';
import { Scanner } from './scanner.ts';
import { ProgrammeTables } from './tables.ts';

type Spec = SpecOf<'dvb-adapter'>;

/** Lock and statistics are read this often. */
export const STATUS_POLL_MS = 500;
/** A device that would not open is tried again after this long (doubling, up to the cap). */
const REOPEN_MIN_MS = 1000;
/** `mpegts-trace` samples the adapter's TS analysis at most this often. */
const TRACE_SAMPLE_MS = 250;
const REOPEN_MAX_MS = 30_000;
const EIT_PID = 0x12;
/** TDT and TOT. */
const TIME_PID = 0x14;

export class DvbAdapterInstance implements Instance<Spec> {
  readonly key: string;
  /** The adapter's TS: whole packets, for the `dvb` inputs and demuxers bound to it. */
  readonly hub: AdapterHub;
  private spec: Spec;
  private readonly log: Logger;
  private fe: Frontend | null = null;
  private dvr: Dvr | null = null;
  private tuning: Tuning | null = null;
  private poll: Timer | null = null;
  private reopen: Timer | null = null;
  private reopenMs = REOPEN_MIN_MS;
  private readonly watch = new LockWatch();
  private state = 'starting';
  private message = '';
  private warnings: string[] = [];
  private frontendName = '';
  private last: DvbStatus | null = null;
  private ber: number | null = null;
  private bytes = 0;
  /** Counts start() and close() calls: an older start() that resumes after a newer one stops. */
  private run = 0;
  private retuning = false;
  private scanner: Scanner | null = null;
  /** t2mi-mode 1 or 2: the readers get the inner TS of PLP t2mi-plp instead of the multiplex. */
  private t2mi: T2miReader | null = null;
  /** biss-pnr / biss-key: the adapter's TS descrambled before its readers get it. */
  private biss: BissDescrambler | null = null;
  /** `cam-pnr`: the CI slot's CAM, asked to descramble those programmes. */
  private cam: Cam | null = null;
  /** PAT and PMTs of the TS (for the demux filter and the CAM). */
  private tables: ProgrammeTables | null = null;
  /** The demux filter now: the whole TS, or the PIDs the readers need. */
  private filter: FilterChoice = { whole: true, reason: 'starting' };
  private filterChanges = 0;
  /** The section reader of `epg-export` (created while it is on and the guide runs). */
  private eit: TsAnalyzer | null = null;
  /** Mode 2: what the frontend reports it is tuned to. */
  private onFrequency: { system: number; frequency: number } | null = null;
  /** `mpegts-trace`: an analysis of the adapter's TS, while it is on. */
  private analysis: { analyzer: TsAnalyzer; trace: TsTrace; sampledAt: number } | null = null;
  /** `trace`: the frontend status last logged (lock and signal figures). */
  private tracedStatus = '';

  constructor(
    res: Resource<Spec>,
    private readonly host: Host,
    private readonly devices: DvbDevices,
  ) {
    this.key = res.key;
    this.spec = res.spec;
    this.log = host.log.child({ adapter: this.spec.id });
    this.hub = new AdapterHub(this.log);
  }

  get id(): number {
    return this.spec.id;
  }

  get name(): string {
    return this.spec.name;
  }

  /** (Re)opens and tunes; resolves once the first tuning is sent (or failed). A newer start()
   *  or a close() while a tuning runs wins: the older one drops what it opened. */
  async start(): Promise<void> {
    const run = ++this.run;
    this.stop();
    this.hub.filterCaClear = this.spec['mpegts-filter-ca-clear'] === true;
    this.warnings = [];
    this.message = '';
    const s = this.spec;
    const idle: [string, string] | null = s.pause
      ? ['paused', '']
      : s.adapter < 0
        ? ['unassigned', 'adapter is -1: no device assigned']
        : s.mode === 1
          ? ['ready', '']
          : null;
    if (idle) {
      this.set(...idle);
      return;
    }
    if (s.mode === 2) {
      this.monitor();
      return;
    }
    const r = tuningOf(s);
    if (!r.ok) {
      this.warnings = [r.problem.message];
      this.set('error', r.problem.message);
      return;
    }
    this.tuning = r.tuning;
    const keys = s['biss-key'] ?? [];
    const targets = (s['biss-pnr'] ?? []).map((pnr, i) => ({ pnr, key: keys[i] ?? '' }));
    this.filter = { whole: true, reason: 'the PAT is not known yet' };
    this.tables = new ProgrammeTables((pmt) => {
      if (pmt) this.cam?.setPmt(pmt);
      this.refilter();
    });
    try {
      this.biss = targets.length ? new BissDescrambler(targets) : null;
      this.t2mi = t2miReader(s, (ts) => this.hub.packets(ts));
      const fe = this.devices.frontend(s.adapter, s.device, !s['lnb-sharing'], false);
      this.fe = fe;
      this.frontendName = fe.info().name;
      if (s.trace) this.log.info({ frontend: this.frontendName, tuning: r.tuning }, 'tuning');
      await fe.tune(r.tuning);
      if (run !== this.run) return;
      this.dvr = this.devices.dvr(
        { adapter: s.adapter, demux: s.device, bufferBlocks: s['buffer-size'] ?? 0 },
        (batch) => {
          this.bytes += batch.length;
          // A fresh Buffer per batch: descrambled in place before anyone reads it.
          this.biss?.process(batch);
          this.tables?.push(batch);
          this.exportEit(batch);
          this.traceTs(batch);
          if (this.t2mi) this.t2mi.push(batch);
          else this.hub.packets(batch);
        },
      );
    } catch (err) {
      if (run === this.run) this.cannotOpen(err as Error);
      return;
    }
    const pnrs = s['cam-pnr'] ?? [];
    if (pnrs.length) {
      // ca{device} beside frontend{device}, as the demux and dvr are.
      this.cam = new Cam(s.adapter, s.device, pnrs, this.devices, this.host.clock, this.log);
      this.cam.start();
    }
    this.polling();
  }

  /** `epg-export`: the multiplex's EIT, TDT and TOT to the guide, whatever streams are bound;
   *  services without a stream binding become channels `onid.tsid.sid` (src/epg/eit-import.ts). */
  private exportEit(batch: Buffer): void {
    const sink = this.spec['epg-export'] ? this.host.services.get(EIT_SINK_SERVICE) : undefined;
    if (!sink) {
      this.eit = null;
      return;
    }
    this.eit ??= new TsAnalyzer({ psiPids: [EIT_PID, TIME_PID], tr101290: false });
    this.eit.push(batch);
    for (const s of this.eit.takeSections()) {
      const t = s.tableId;
      const eit = t >= EIT_PF_ACTUAL_TABLE_ID && t <= EIT_SCHEDULE_OTHER_LAST_TABLE_ID;
      if (eit || t === TDT_TABLE_ID || t === TOT_TABLE_ID)
        sink.section({ stream: `adapter:${this.spec.name}`, pid: s.pid }, s.data);
    }
  }

  /** `mpegts-trace`: the adapter's TS analysed and logged as it changes (src/engine/ts-trace.ts),
   *  sampled at most 4 times a second; nothing is analysed while it is off. */
  private traceTs(batch: Buffer): void {
    if (!this.spec['mpegts-trace']) {
      this.analysis = null;
      return;
    }
    const now = this.host.clock.monotonic();
    this.analysis ??= {
      analyzer: new TsAnalyzer({ tr101290: true, clock: this.host.clock, psiPids: 'all' }),
      trace: new TsTrace(this.log),
      sampledAt: -TRACE_SAMPLE_MS,
    };
    const a = this.analysis;
    a.analyzer.push(batch);
    a.analyzer.takeSections();
    if (now - a.sampledAt < TRACE_SAMPLE_MS) return;
    a.sampledAt = now;
    a.trace.sample(a.analyzer.stats(), a.analyzer.programs());
  }

  /** Mode 2: the frontend read-only, its status and the frequency it is on. */
  private monitor(): void {
    const s = this.spec;
    try {
      this.fe = this.devices.frontend(s.adapter, s.device, false, true);
      this.frontendName = this.fe.info().name;
    } catch (err) {
      this.cannotOpen(err as Error);
      return;
    }
    this.polling();
  }

  /** Sets the demux filter the readers need now (docs/dvb.md, "Demux filters"): on a new PAT or
   *  PMT, and on every status poll (readers come and go). */
  private refilter(): void {
    const dvr = this.dvr;
    const tables = this.tables;
    if (!dvr || !tables) return;
    const next = chooseFilter({
      readers: this.hub.programmes(),
      pmtOnly: this.spec['cam-pnr'] ?? [],
      pat: tables.pat,
      pmts: tables.pmts,
      perPidAllowed: !this.t2mi,
    });
    const key = (f: FilterChoice) => (f.whole ? 'whole' : f.pids.join(','));
    if (key(next) === key(this.filter)) {
      this.filter = next;
      return;
    }
    try {
      dvr.setPids(next.whole ? [WHOLE_TS_PID] : next.pids);
      this.filter = next;
      this.filterChanges++;
      this.log.info({ filter: next }, 'demux filter changed');
    } catch (err) {
      this.log.warn({ err }, 'demux filter not changed');
    }
  }

  private cannotOpen(err: Error): void {
    this.log.warn({ err }, 'tuner adapter cannot open');
    this.stop();
    this.set('error', err.message);
    this.reopen = this.host.clock.setTimeout(() => void this.start(), this.reopenMs);
    this.reopenMs = Math.min(this.reopenMs * 2, REOPEN_MAX_MS);
  }

  private polling(): void {
    this.reopenMs = REOPEN_MIN_MS;
    this.watch.reset();
    this.set('no lock');
    this.poll = this.host.clock.setInterval(() => this.pollStatus(), STATUS_POLL_MS);
    this.pollStatus();
  }

  private set(state: string, message = ''): void {
    this.state = state;
    this.message = message;
  }

  private pollStatus(): void {
    if (!this.fe) return;
    this.refilter();
    let st: DvbStatus;
    try {
      st = this.fe.status();
      if (this.spec.mode === 2) this.onFrequency = this.fe.tuned();
    } catch (err) {
      this.set('error', (err as Error).message);
      return;
    }
    this.ber = berOf(this.last, st) ?? this.ber;
    this.last = st;
    if (this.spec.trace) {
      // Logged when the lock bits change, or a figure moves by a visible step.
      const step = (v: number | null) => (v === null ? null : Math.round(v));
      const seen = JSON.stringify([st.lock, st.status, step(st.signal), step(st.cnr)]);
      if (seen !== this.tracedStatus)
        this.log.info({ status: st, ber: this.ber }, 'frontend status');
      this.tracedStatus = seen;
    }
    switch (this.watch.feed(st.lock, this.host.clock.monotonic())) {
      case 'locked':
        if (this.watch.lockChanges > 0) {
          this.log.info('tuner adapter locked again');
          this.hub.discontinuity('tuner adapter locked again');
        }
        this.set('locked');
        break;
      case 'lost':
        this.log.warn('tuner adapter lost lock');
        this.set('no lock', 'the frontend has no lock');
        this.hub.end();
        break;
      case 'retune':
        // A monitor never tunes: whoever tuned the frontend re-tunes it.
        if (this.spec.mode === 2) break;
        if (this.tuning && !this.retuning) {
          const fe = this.fe;
          this.retuning = true;
          if (this.spec.trace) this.log.info({ tuning: this.tuning }, 'tuning again');
          fe.tune(this.tuning)
            .catch((err: Error) => {
              if (fe === this.fe) this.set('error', err.message);
            })
            .finally(() => {
              this.retuning = false;
            });
        }
        break;
    }
  }

  /** Mode 1: scans from `initial` (tuning members; the record's type when they give none).
   *  Refused while the adapter is not a ready scanner or a scan runs. */
  scan(initial: Partial<TransponderTuning>[]): string {
    if (this.spec.mode !== 1) return 'only a scanner (mode 1) scans';
    if (this.state !== 'ready') return `the adapter is ${this.state}`;
    if (this.scanner?.state === 'scanning') return 'a scan is running';
    if (initial.length === 0 || initial.some((t) => !t.freq)) return 'each transponder needs freq';
    const scanner = new Scanner(this.spec, this.devices, this.host.clock, this.log);
    this.scanner = scanner;
    void scanner.run(initial.map((t) => ({ ...t, type: t.type ?? this.spec.type, freq: t.freq! })));
    return '';
  }

  private stop(): void {
    this.scanner?.stop();
    this.poll?.cancel();
    this.poll = null;
    this.reopen?.cancel();
    this.reopen = null;
    this.cam?.stop();
    this.cam = null;
    this.tables = null;
    this.dvr?.close();
    this.dvr = null;
    this.fe?.close();
    this.fe = null;
  }

  async update(next: Resource<Spec>, changes: FieldChange[]): Promise<void> {
    this.spec = next.spec;
    // `name`, `note`, `trace`, `enable-alert`, `epg-export` take effect as they are read;
    // a tuning field or `pause` starts the adapter again.
    if (changes.some((c) => c.apply === 'restart' || c.path === 'pause')) {
      this.reopenMs = REOPEN_MIN_MS;
      await this.start();
    }
  }

  async close(): Promise<void> {
    this.run++;
    dvbAdapterRegistry(this.host.services).remove(this);
    this.stop();
    this.hub.end();
    this.set('closed');
  }

  /** What the alerter's `adapter-lock` rule reads: an adapter that should be on a signal
   *  (tuning or monitoring; not paused, unassigned or unbuilt) and is not locked. */
  alertView(): AdapterView | null {
    if (!['locked', 'no lock', 'error'].includes(this.state)) return null;
    return {
      name: this.spec.name,
      enableAlert: this.spec['enable-alert'],
      locked: this.state === 'locked',
      message: this.message,
    };
  }

  /** The adapter's line on the dashboard (src/web/rows.ts); `streams`: the keys of the running
   *  streams that read it. */
  dashboardRow(streams: string[]): AdapterRow {
    const s = this.spec;
    const st = this.last;
    const scan = this.scanner;
    const found = scan?.entries ?? [];
    let frequency: number | null = s.freq ? s.freq * (isSatellite(s.type) ? 1000 : 1) : null;
    let intermediate = false;
    if (s.mode === 2 && !s.freq && this.onFrequency) {
      intermediate = isSatellite(this.onFrequency.system);
      frequency = this.onFrequency.frequency / (intermediate ? 1 : HZ_PER_KHZ);
    }
    return {
      key: this.key,
      id: s.id,
      name: s.name,
      type: s.type,
      mode: s.mode,
      state: this.state,
      ...(this.message ? { message: this.message } : {}),
      lock: this.fe !== null && st?.lock === true,
      signal: st?.signal ?? null,
      snr: st?.cnr ?? null,
      ber: this.ber,
      unc: st?.errorBlocks ?? null,
      frequency,
      intermediate,
      scan: scan?.state ?? '',
      transponders: found.filter((e) => e.state !== 'pending' && e.state !== 'scanning').length,
      services: found.reduce((n, e) => n + (e.services?.length ?? 0), 0),
      streams,
    };
  }

  /** Mode 2's frequency in `freq`'s units (spec 1: kHz for terrestrial and cable, MHz for
   *  satellite): as configured, or read back from the frontend when it is 0 (a satellite
   *  frontend knows only the LNB's IF, which it gives in kHz). */
  private monitored(): Record<string, unknown> {
    if (this.spec.freq) return { frequency: this.spec.freq };
    const on = this.onFrequency;
    if (!on) return {};
    return isSatellite(on.system)
      ? { system: on.system, intermediateFrequency: on.frequency / KHZ_PER_MHZ }
      : { system: on.system, frequency: on.frequency / HZ_PER_KHZ };
  }

  private filterStatus(): Record<string, unknown> {
    const f = this.filter;
    return f.whole
      ? { whole: true, reason: f.reason, changes: this.filterChanges }
      : { whole: false, pids: f.pids, changes: this.filterChanges };
  }

  status(): ResourceStatus {
    const s = this.spec;
    const st = this.last;
    return {
      state: this.state,
      ...(this.message ? { message: this.message } : {}),
      ...(this.warnings.length ? { warnings: this.warnings } : {}),
      id: s.id,
      name: s.name,
      mode: s.mode,
      type: s.type,
      adapter: s.adapter,
      device: s.device,
      ...(this.frontendName ? { frontend: this.frontendName } : {}),
      lock: this.fe !== null && st?.lock === true,
      signal: st?.signal ?? null,
      snr: st?.cnr ?? null,
      ber: this.ber,
      unc: st?.errorBlocks ?? null,
      ...(s.mode === 2 ? this.monitored() : {}),
      ...(this.scanner ? { scan: this.scanner.status() } : {}),
      lockChanges: this.watch.lockChanges,
      ...(s.mode === 2 ? {} : { retunes: this.watch.retunes }),
      bytes: this.bytes,
      ...(this.dvr ? { dvr: this.dvr.stats(), filter: this.filterStatus() } : {}),
      ...(this.biss ? { biss: this.biss.stats() } : {}),
      ...(this.cam ? { cam: this.cam.status() } : {}),
      ...(this.t2mi ? { t2mi: { plp: s['t2mi-plp'] ?? 0, ...this.t2mi.stats() } } : {}),
    };
  }
}

const T2MI_MANUAL = 1;

/** t2mi-mode 1 (manual: the carrier is `t2mi-pid`, or found from the tables when it is 0) or 2
 *  (automatic): a reader of the carrier handing PLP `t2mi-plp`'s inner TS to `sink`. */
function t2miReader(s: Spec, sink: (ts: Buffer) => void): T2miReader | null {
  const mode = s['t2mi-mode'] ?? 0;
  if (mode === 0) return null;
  const pid = s['t2mi-pid'] ?? 0;
  const reader = new T2miReader(mode === T2MI_MANUAL && pid > 0 ? { carrierPid: pid } : {});
  reader.addPlp(s['t2mi-plp'] ?? 0, sink);
  return reader;
}

/** The adapter's bus, with its mpegts-filter-ca-clear for the demuxers reading it. */
class AdapterHub extends BusHub {
  filterCaClear = false;
}

/** Hz on the wire for terrestrial and cable systems; spec 1 counts their frequencies in kHz. */
const HZ_PER_KHZ = 1000;
/** A satellite frontend reads its IF back in kHz; spec 1 counts satellite frequencies in MHz. */
const KHZ_PER_MHZ = 1000;

/** Bit error ratio over the last poll from the kernel's cumulative counters, or null. */
function berOf(prev: DvbStatus | null, cur: DvbStatus): number | null {
  if (cur.preErrorBits === null || cur.preTotalBits === null) return null;
  const bits = cur.preTotalBits - (prev?.preTotalBits ?? 0);
  const errors = cur.preErrorBits - (prev?.preErrorBits ?? 0);
  if (bits <= 0) return null;
  return Math.max(0, errors) / bits;
}
