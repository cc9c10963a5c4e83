// The scanner of a mode 1 adapter: from the transponders it is given, tunes each in turn, waits
// for lock, reads PAT/PMT/SDT/NIT from the whole TS (src/dvb/scan.ts) and follows the NIT to
// the network's other transponders. One scan at a time; results stay until the next one.
import type { Logger } from 'pino';
import type { DvbAdapterSpec } from '../../config/spec-types.generated.ts';
import type { TransponderTuning } from '../../dvb/delivery.ts';
import { TransponderScan } from '../../dvb/scan.ts';
import { tuningOf } from '../../dvb/tuning.ts';
import { decodeDvbText } from '../../epg/text.ts';
import { TsAnalyzer } from '../../native/ts.ts';
import type { SpecOf } from '../../reconciler/driver.ts';
import type { Clock } from '../../util/clock.ts';
import type { DvbDevices, Frontend } from './devices.ts';

type Spec = SpecOf<'dvb-adapter'>;

/** A transponder that has not locked by then is listed as `no lock`. */
export const LOCK_TIMEOUT_MS = 3000;
/** Tables still missing by then (no SDT or NIT on the multiplex) end the transponder's scan. */
export const TABLES_TIMEOUT_MS = 8000;
const LOCK_POLL_MS = 100;
/** A network that announces more is cut here. */
const MAX_TRANSPONDERS = 256;

export interface ScanEntry {
  tuning: TransponderTuning;
  state: 'pending' | 'scanning' | 'locked' | 'no lock' | 'error';
  message?: string;
  transportStreamId?: number | null;
  originalNetworkId?: number | null;
  networkName?: string | null;
  services?: {
    pnr: number;
    name: string;
    provider: string;
    type: number;
    scrambled: boolean;
    pmtPid: number;
    pids: number[];
  }[];
}

export class Scanner {
  state: 'scanning' | 'done' | 'stopped' = 'scanning';
  readonly entries: ScanEntry[] = [];
  private stopped = false;
  private fe: Frontend | null = null;
  private dvr: { close(): void } | null = null;

  constructor(
    private readonly spec: Spec,
    private readonly devices: DvbDevices,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Scans `initial` and every transponder the networks announce; resolves when done. */
  async run(initial: TransponderTuning[]): Promise<void> {
    for (const t of initial) this.add(t);
    const s = this.spec;
    try {
      this.fe = this.devices.frontend(s.adapter, s.device, !s['lnb-sharing'], false);
      for (let i = 0; i < this.entries.length && !this.stopped; i++)
        await this.one(this.entries[i]!);
    } catch (err) {
      this.log.warn({ err }, 'scan failed');
      for (const e of this.entries)
        if (e.state === 'pending')
          Object.assign(e, { state: 'error', message: (err as Error).message });
    } finally {
      this.close();
      if (!this.stopped) this.state = 'done';
    }
  }

  stop(): void {
    this.stopped = true;
    this.state = 'stopped';
    this.close();
  }

  private close(): void {
    this.dvr?.close();
    this.dvr = null;
    this.fe?.close();
    this.fe = null;
  }

  private add(t: TransponderTuning): void {
    if (this.entries.length >= MAX_TRANSPONDERS) return;
    if (
      this.entries.some(
        (e) =>
          e.tuning.type === t.type &&
          e.tuning.freq === t.freq &&
          e.tuning['lnb-polarization'] === t['lnb-polarization'],
      )
    )
      return;
    this.entries.push({ tuning: t, state: 'pending' });
  }

  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimeout(resolve, ms));
  }

  private async one(e: ScanEntry): Promise<void> {
    const { codeRateHp, codeRateLp, rollOff, ...members } = e.tuning;
    const r = tuningOf({ ...this.spec, mode: 0, ...members } as DvbAdapterSpec, {
      codeRateHp,
      codeRateLp,
      rollOff,
    });
    if (!r.ok) {
      Object.assign(e, { state: 'error', message: r.problem.message });
      return;
    }
    e.state = 'scanning';
    const fe = this.fe!;
    await fe.tune(r.tuning);
    const lockBy = this.clock.monotonic() + LOCK_TIMEOUT_MS;
    while (!fe.status().lock) {
      if (this.stopped || this.clock.monotonic() >= lockBy) {
        e.state = 'no lock';
        return;
      }
      await this.wait(LOCK_POLL_MS);
    }
    const scan = new TransponderScan(r.tuning.system);
    const analyzer = new TsAnalyzer({ psiPids: 'all', tr101290: false });
    const s = this.spec;
    this.dvr = this.devices.dvr(
      { adapter: s.adapter, demux: s.device, bufferBlocks: s['buffer-size'] ?? 0 },
      (batch) => {
        analyzer.push(batch);
        for (const sec of analyzer.takeSections()) scan.section(sec.pid, sec.tableId, sec.data);
      },
    );
    const tablesBy = this.clock.monotonic() + TABLES_TIMEOUT_MS;
    while (!scan.complete && !this.stopped && this.clock.monotonic() < tablesBy)
      await this.wait(LOCK_POLL_MS);
    this.dvr?.close();
    this.dvr = null;
    const res = scan.result();
    const text = (b: Buffer) => decodeDvbText(b);
    Object.assign(e, {
      state: 'locked',
      transportStreamId: res.transportStreamId,
      originalNetworkId: res.originalNetworkId,
      networkName: res.networkName ? text(res.networkName) : null,
      services: res.services.map((x) => ({ ...x, name: text(x.name), provider: text(x.provider) })),
    });
    for (const t of res.network) this.add(t);
  }

  status(): Record<string, unknown> {
    return {
      state: this.state,
      transponders: this.entries.map((e) => ({ ...e.tuning, ...e, tuning: undefined })),
    };
  }
}
