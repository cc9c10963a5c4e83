// TsAnalyzer: the typed façade over the native MPEG-TS analyzer (sync, CC, PCR, PSI/SI sections,
// TR 101 290 priority 1 and 2). Arguments are checked here; the C++ side trusts them.
import { MAX_PID } from '../mpegts/packet.ts';
import { type Clock, systemClock } from '../util/clock.ts';
import { addon, type NativeTsAnalyzer } from './addon.ts';
import { codecOf, type StreamKind } from './codecs.ts';
import { argError, fromNative } from './errors.ts';

/** Default for PID_error: a PID the PMT references is absent this long (TR 101 290 leaves it to the user). */
export const DEFAULT_PID_TIMEOUT_MS = 5000;
/** PAT_error / PMT_error: table absent longer than this (TR 101 290: 0.5 s). */
export const DEFAULT_PAT_TIMEOUT_MS = 500;
/** PTS_error: no PTS on a PES PID for longer than this (TR 101 290: 700 ms). */
export const DEFAULT_PTS_TIMEOUT_MS = 700;

export interface TsAnalyzerOptions {
  /** Remove null packets (PID 0x1FFF) from what push() returns. Default false. */
  dropNull?: boolean;
  /** Evaluate the TR 101 290 indicators (sync and CC counting stay on). Default true. */
  tr101290?: boolean;
  /**
   * Which assembled sections takeSections() hands out: 'all' (every PSI/SI PID the analyzer
   * follows: PAT, CAT, PMTs, NIT, SDT/BAT, EIT, TDT/TOT) or a list of PIDs (any PID, e.g. SCTE-35).
   * Default: none are queued.
   */
  psiPids?: 'all' | number[];
  /** PID_error threshold in ms (default 5000). */
  pidTimeoutMs?: number;
  /** PAT_error / PMT_error threshold in ms (default 500). */
  patTimeoutMs?: number;
  /** PTS_error threshold in ms (default 700). */
  ptsTimeoutMs?: number;
  /** Clock used when push() gets no `nowMs` (its monotonic()). Default: the system clock. */
  clock?: Clock;
}

/** TR 101 290 counters (ETSI TR 101 290 §5.2.1 priority 1, §5.2.2 priority 2). */
export interface Tr101290Counters {
  tsSyncLoss: number;
  syncByteError: number;
  patError: number;
  continuityCountError: number;
  pmtError: number;
  pidError: number;
  transportError: number;
  crcError: number;
  pcrRepetitionError: number;
  pcrDiscontinuityIndicatorError: number;
  pcrAccuracyError: number;
  ptsError: number;
  catError: number;
}

export const PRIORITY_1: ReadonlyArray<keyof Tr101290Counters> = [
  'tsSyncLoss',
  'syncByteError',
  'patError',
  'continuityCountError',
  'pmtError',
  'pidError',
];
export const PRIORITY_2: ReadonlyArray<keyof Tr101290Counters> = [
  'transportError',
  'crcError',
  'pcrRepetitionError',
  'pcrDiscontinuityIndicatorError',
  'pcrAccuracyError',
  'ptsError',
  'catError',
];

export interface PidStats {
  pid: number;
  packets: number;
  ccErrors: number;
  /** transport_scrambling_control of the last packet (0 clear, 2 even key, 3 odd key). */
  scrambled: number;
  scrambledPackets: number;
  transportErrors: number;
  hasPcr: boolean;
  /** Last PCR in 27 MHz units, or -1. */
  lastPcr: number;
  /** Largest PCR deviation from the PCR-derived byte clock seen, in ns (PCR PIDs only). */
  pcrJitterNs: number;
  /** bit/s over the last window (PCR time when the stream has PCR, else arrival time). */
  bitrate: number;
}

export interface TsStats {
  /** Aligned packets analysed (null packets included). */
  packets: number;
  /** Bytes fed to push(). */
  bytes: number;
  nullPackets: number;
  /** Bytes thrown away while hunting for sync. */
  junkBytes: number;
  syncLosses: number;
  /** Sections whose CRC-32 failed. */
  crcErrors: number;
  /** Sections not queued because takeSections() was not called often enough. */
  sectionsDropped: number;
  /** Transport rate from consecutive PCRs (bit/s), 0 until known. */
  pcrBitrate: number;
  /** Rate of bytes fed per second of caller time (bit/s), 0 until known. */
  arrivalBitrate: number;
  tr101290: Tr101290Counters;
  priority1: number;
  priority2: number;
  pids: PidStats[];
}

export interface ProgramStream {
  pid: number;
  streamType: number;
  codec: string;
  kind: StreamKind;
  language?: string;
}

export interface Program {
  pnr: number;
  pmtPid: number;
  pcrPid: number;
  /** PMT version_number. */
  version: number;
  /** Service and provider names from the SDT (actual TS), when one was seen. */
  name?: string;
  provider?: string;
  serviceType?: number;
  streams: ProgramStream[];
}

export interface Section {
  pid: number;
  tableId: number;
  /** The whole section, table_id through CRC_32. */
  data: Buffer;
}

function checkMs(name: string, v: unknown, def: number): number {
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > 3_600_000) {
    throw argError(`${name} must be a number of milliseconds in (0, 3600000], got ${String(v)}`);
  }
  return v;
}

function checkPid(v: unknown, where: string): number {
  if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > MAX_PID) {
    throw argError(`${where} must hold PIDs 0..8191, got ${String(v)}`);
  }
  return v as number;
}

export class TsAnalyzer {
  private readonly native: NativeTsAnalyzer;
  /** Written by the native push(): [begin, end) of the zero-copy result, sections waiting. */
  private readonly meta = new Int32Array(3);
  private readonly clock: Clock;

  constructor(opts: TsAnalyzerOptions = {}) {
    if (opts === null || typeof opts !== 'object') throw argError('options must be an object');
    for (const k of ['dropNull', 'tr101290'] as const) {
      if (opts[k] !== undefined && typeof opts[k] !== 'boolean') {
        throw argError(`${k} must be a boolean`);
      }
    }
    let psiAll = false;
    let psiPids: number[] = [];
    if (opts.psiPids === 'all') psiAll = true;
    else if (Array.isArray(opts.psiPids)) psiPids = opts.psiPids.map((p) => checkPid(p, 'psiPids'));
    else if (opts.psiPids !== undefined)
      throw argError("psiPids must be 'all' or an array of PIDs");
    if (opts.clock !== undefined && typeof opts.clock?.monotonic !== 'function') {
      throw argError('clock must implement monotonic()');
    }
    this.clock = opts.clock ?? systemClock;
    try {
      this.native = new (addon().TsAnalyzer)({
        dropNull: opts.dropNull ?? false,
        tr101290: opts.tr101290 ?? true,
        psiAll,
        psiPids,
        meta: this.meta,
        pidTimeoutMs: checkMs('pidTimeoutMs', opts.pidTimeoutMs, DEFAULT_PID_TIMEOUT_MS),
        patTimeoutMs: checkMs('patTimeoutMs', opts.patTimeoutMs, DEFAULT_PAT_TIMEOUT_MS),
        ptsTimeoutMs: checkMs('ptsTimeoutMs', opts.ptsTimeoutMs, DEFAULT_PTS_TIMEOUT_MS),
      });
    } catch (err) {
      throw fromNative(err);
    }
  }

  /**
   * Feed bytes of any alignment (a datagram or a read) and get back the aligned 188-byte packets
   * found so far (null packets removed with dropNull). Bytes of an unfinished packet are kept for
   * the next call. `nowMs` is the arrival time on a monotonic millisecond clock and drives the
   * time-based indicators; it defaults to the analyzer's clock. The result may share memory with
   * `chunk` (a subarray) when no packet had to be removed or joined across calls.
   */
  push(chunk: Buffer | Uint8Array, nowMs?: number): Buffer {
    let buf: Buffer;
    if (Buffer.isBuffer(chunk)) buf = chunk;
    else if (chunk instanceof Uint8Array)
      buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    else throw argError('push() needs a Buffer');
    const now = nowMs ?? this.clock.monotonic();
    if (typeof now !== 'number' || !Number.isFinite(now)) {
      throw argError('nowMs must be a finite number');
    }
    const out = this.native.push(buf, now);
    if (out) return out;
    const begin = this.meta[0]!;
    const end = this.meta[1]!;
    return begin === 0 && end === buf.length ? buf : buf.subarray(begin, end);
  }

  /** Complete PSI/SI sections (CRC-32 checked; bad CRC counted, not returned) since the last call. */
  takeSections(): Section[] {
    // Most batches complete no section: then no crossing into C++ and no array is made.
    if (this.meta[2] === 0) return [];
    this.meta[2] = 0;
    return this.native.takeSections();
  }

  stats(): TsStats {
    const s = this.native.stats() as unknown as TsStats;
    let p1 = 0;
    let p2 = 0;
    for (const k of PRIORITY_1) p1 += s.tr101290[k];
    for (const k of PRIORITY_2) p2 += s.tr101290[k];
    s.priority1 = p1;
    s.priority2 = p2;
    return s;
  }

  /** Programmes learned from PAT/PMT, named from the SDT when one was seen. */
  programs(): Program[] {
    return this.native.programs().map((p) => {
      const prog: Program = {
        pnr: p.pnr,
        pmtPid: p.pmtPid,
        pcrPid: p.pcrPid,
        version: p.version,
        streams: p.streams.map((s) => {
          const { codec, kind } = codecOf(s);
          const out: ProgramStream = { pid: s.pid, streamType: s.streamType, codec, kind };
          if (s.language) out.language = s.language;
          return out;
        }),
      };
      if (p.serviceName) prog.name = p.serviceName;
      if (p.providerName) prog.provider = p.providerName;
      if (p.serviceType) prog.serviceType = p.serviceType;
      return prog;
    });
  }

  /** Forget everything (sync, counters, tables), e.g. after an input switch. */
  reset(): void {
    this.native.reset();
  }
}
