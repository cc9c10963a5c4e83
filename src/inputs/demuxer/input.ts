// `demuxer` input: one programme of a multiplex (an `mpts: true` stream) as a single-programme
// TS. The multiplex is analysed once per source bus by a shared splitter (./shared.ts,
// src/mpegts/programme-splitter.ts); this input is one consumer of it. A programme that leaves
// the PAT is this input's fault (the stream fails over); its return is spliced.
import { int } from '../../config/spec-values.ts';
import type { StreamBus } from '../../engine/bus.ts';
import type { BusRef, InputContext, InputTransport } from '../../engine/input.ts';
import type { ConsumerEvents } from '../../mpegts/programme-splitter.ts';
import type { Timer } from '../../util/clock.ts';
import { leaseProgramme, leaseT2miProgramme, type SplitterLease } from './shared.ts';

/** How often the source bus is looked up again (a source created late, or recreated). */
const RELOOK_MS = 1000;
const MAX_PNR = 0xffff;
/** pnr above 65535: (PLP + 1) × 65536 + programme number inside the T2-MI inner carrier. */
const T2MI_SHIFT = 65536;
/** `src` 1: `mpts-id` is a tuner adapter's id. */
const SRC_ADAPTER = 1;

/** What a `pnr` value addresses: a programme of the multiplex, or one inside the inner TS of
 *  a T2-MI PLP (docs/multiplex.md). */
export function decodePnr(pnr: number): { plp: number | null; programme: number } {
  if (pnr <= MAX_PNR) return { plp: null, programme: pnr };
  return { plp: Math.floor(pnr / T2MI_SHIFT) - 1, programme: pnr % T2MI_SHIFT };
}

export function encodePnr(plp: number, programme: number): number {
  return (plp + 1) * T2MI_SHIFT + programme;
}

export class DemuxerInput implements InputTransport {
  private readonly mptsId: number;
  private readonly pnr: number;
  /** The PLP of a programme inside a T2-MI carrier (null: a programme of the multiplex). */
  private readonly plp: number | null;
  /** The programme number in the splitter: `pnr`, or its low 16 bits inside a PLP. */
  private readonly programme: number;
  private readonly ref: BusRef;
  /** What `mpts-id` names, for faults: a multiplex stream or a tuner adapter. */
  private readonly source: string;
  /** A fault that no retry mends (a configuration this build cannot serve). */
  private readonly refused: string;
  private bus: StreamBus | undefined;
  private lease: SplitterLease | null = null;
  private timer: Timer | null = null;
  private ended = false;
  private returns = 0;
  private closed = false;
  /** The source's mpegts-filter-ca-clear as leased (a tuner adapter's; false for a stream). */
  private caClear = false;

  constructor(
    cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.mptsId = int(cfg, 'mpts-id', 0);
    this.pnr = int(cfg, 'pnr', 0);
    const src = int(cfg, 'src', 0);
    // src 1: the multiplex is a tuner adapter's TS (src/drivers/dvb-adapter/), whole.
    this.source = src === SRC_ADAPTER ? 'tuner adapter' : 'multiplex stream';
    this.ref = { kind: src === SRC_ADAPTER ? 'adapter' : 'stream', key: String(this.mptsId) };
    this.refused = refusal(this.pnr);
    const { plp, programme } = decodePnr(this.pnr);
    this.plp = plp;
    this.programme = programme;
  }

  start(): void {
    if (this.refused) return;
    this.attach();
    this.timer = this.ctx.clock.setInterval(() => this.attach(), RELOOK_MS);
  }

  /** Subscribe to the source's current bus (again, when the source was recreated). */
  private attach(): void {
    if (this.closed) return;
    const bus = this.ctx.bus(this.ref);
    // A tuner adapter's CA stripping is fixed per lease: a change of it leases again.
    const caClear = bus?.filterCaClear === true;
    if (bus === this.bus && caClear === this.caClear) return;
    this.caClear = caClear;
    this.lease?.release();
    this.lease = null;
    this.bus = bus;
    this.ended = false;
    if (!bus) return;
    const lease = (events: ConsumerEvents) =>
      this.plp === null
        ? leaseProgramme(bus, this.pnr, events, { filterCaClear: caClear })
        : leaseT2miProgramme(bus, this.plp, this.programme, events, { filterCaClear: caClear });
    this.lease = lease({
      packets: (b) => {
        this.ended = false;
        this.ctx.onData(b, true);
      },
      returned: () => {
        this.returns++;
        this.ctx.log.info({ pnr: this.pnr }, 'programme back in the multiplex');
        this.ctx.onDiscontinuity?.(`programme ${this.pnr} is back in the multiplex`);
      },
      discontinuity: (reason) => this.ctx.onDiscontinuity?.(`multiplex: ${reason}`),
      end: () => {
        this.ended = true;
      },
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
    this.lease?.release();
    this.lease = null;
  }

  fault(): string {
    if (this.refused) return this.refused;
    if (!this.bus) return `${this.source} ${this.mptsId} is not running`;
    if (this.ended) return `${this.source} ${this.mptsId} stopped`;
    const t2 = this.lease?.t2mi?.();
    if (t2 && t2.carrier === 'absent') {
      return `no T2-MI carrier in ${this.source} ${this.mptsId}`;
    }
    if (this.lease?.consumer.presence === 'absent') {
      return this.plp === null
        ? `programme ${this.pnr} is not in the multiplex`
        : `programme ${this.programme} is not in PLP ${this.plp} (pnr ${this.pnr})`;
    }
    return '';
  }

  status(): Record<string, unknown> {
    const c = this.lease?.consumer.stats();
    return {
      mptsId: this.mptsId,
      pnr: this.pnr,
      programmeReturns: this.returns,
      ...(c
        ? {
            present: c.presence === 'present',
            presence: c.presence,
            pmtPid: c.pmtPid,
            pids: c.pids,
            scrambled: c.scrambled,
            caStripped: c.caStripped,
            packetsOut: c.packetsOut,
            tablesRewritten: c.tablesRewritten,
            pmtVersionsFollowed: c.pmtVersionsFollowed,
            badPids: c.badPids,
            multiplex: this.lease!.splitterStats(),
            ...(this.lease!.t2mi ? { t2mi: this.lease!.t2mi() } : {}),
          }
        : {}),
    };
  }
}

/** Why a record cannot be served by this build ('' when it can). */
function refusal(pnr: number): string {
  if (pnr < 1) return 'pnr is not set';
  const { plp, programme } = decodePnr(pnr);
  if (plp !== null && programme < 1) return `pnr ${pnr}: programme 0 in PLP ${plp}`;
  return '';
}
