// Multiplexing (the muxer input): several single-programme transport streams in, one multiplex
// out. Each source's PAT and PMT are read to find its programme; its elementary and PCR PIDs
// are carried under the multiplex's own PIDs (auto-pid: a block per programme) or their own
// (collisions refused); its EIT (actual, of its service) is readdressed to the multiplex. The
// multiplex's own tables are generated: PAT (with the NIT), a PMT per programme, SDT actual
// (provider and service names), NIT actual (network name, service list), TDT and TOT. Output
// is either constant-rate (a given number of packets per call, null packets where nothing is
// due, PCRs restamped onto the constant-rate position: ./source-timing.ts) or as it comes.
// Continuity counters are the multiplex's own, per output PID.
import { EIT_FIXED_SIZE, isEitActual, readdressEit } from './eit.ts';
import {
  buildNit,
  countryAvailabilityDescriptor,
  networkNameDescriptor,
  serviceListDescriptor,
} from './nit.ts';
import {
  AF_DISCONTINUITY,
  AF_PCR,
  AFC_ADAPTATION,
  EIT_PID,
  hasPayload,
  NIT_PID,
  NULL_PID,
  nullPacket,
  PAT_PID,
  PID_COUNT,
  pid as pidOf,
  SDT_PID,
  setCc,
  TDT_PID,
  TS_PACKET_SIZE,
} from './packet.ts';
import { PCR_PER_MS, readPcr, writePcr } from './pcr.ts';
import {
  buildPat,
  buildPmt,
  DESCRIPTOR_SERVICE,
  OwnVersion,
  type Pmt,
  type PmtStream,
  parseDescriptors,
  parsePat,
  parsePmt,
  parseSectionHeader,
  SDT_ACTUAL_TABLE_ID,
  sectionPackets,
  versionless,
} from './psi.ts';
import {
  buildSdt,
  buildServiceDescriptor,
  parseSdt,
  parseServiceDescriptor,
  RUNNING_STATUS_RUNNING,
  type SdtService,
} from './sdt.ts';
import { SectionReader } from './section-reader.ts';
import { type Release, SourceTiming } from './source-timing.ts';
import { buildTdt, buildTot } from './time-tables.ts';

/** auto-pid: programme i (0-based, list order) owns PIDs AUTO_PID_BASE + i × AUTO_PID_BLOCK
 *  onwards: the block's first PID is its PMT, then its elementary streams in PMT order, then
 *  its PCR PID when the PCR has a PID of its own. */
export const AUTO_PID_BASE = 0x100;
export const AUTO_PID_BLOCK = 0x40;
export const MAX_PROGRAMMES = Math.floor((NULL_PID - AUTO_PID_BASE) / AUTO_PID_BLOCK);
/** PIDs 0x0000–0x001F carry tables (13818-1, EN 300 468 5.1.3). */
const LAST_TABLE_PID = 0x1f;
/** Table repetition, ms: PAT and PMTs (TR 101 290 asks ≤ 500), SDT (≤ 2000), NIT (≤ 10000),
 *  TDT/TOT (≤ 30000). */
export const PSI_INTERVAL_MS = 100;
export const SDT_INTERVAL_MS = 500;
export const NIT_INTERVAL_MS = 1000;
export const TIME_INTERVAL_MS = 1000;
/** running_status 1: not running (EN 300 468 Table 6), for a programme whose source stopped. */
export const RUNNING_STATUS_NOT_RUNNING = 1;
/** Constant rate: a programme whose last PCR left this long ago gets one in an adaptation-only
 *  packet (TR 101 290 PCR_repetition: at most 40 ms apart; sources often send one per 40 ms
 *  frame, which the slot scheduling would stretch past the limit). */
export const PCR_INSERT_MS = 30;
/** EN 300 468 Annex A: a first byte 0x15 says the text is UTF-8. */
const UTF8_TEXT = 0x15;
/** service_descriptor: 1 + 1 + provider + 1 + name ≤ 255. */
const SERVICE_TEXT_ROOM = 252;
const BYTES_PER_PACKET_BITS = TS_PACKET_SIZE * 8;
const NULL = nullPacket();

export interface MuxProgramme {
  /** The source as messages name it: `stream 12`. */
  label: string;
  pnr: number;
  /** Service name; empty: the source's own SDT name, else the label. */
  serviceName: string;
  serviceType: number;
}

export interface MuxSettings {
  transportStreamId: number;
  networkId: number;
  networkName: string;
  provider: string;
  /** ISO 3166 alpha-3, '' = not signalled. */
  country: string;
  autoPid: boolean;
  /** bit/s; 0 = not paced (packets go out as they come). */
  bitrate: number;
  programmes: MuxProgramme[];
}

/** DVB text (EN 300 468 Annex A): ASCII as is, anything else as UTF-8 with its marker. */
export function dvbText(s: string): Buffer {
  if (/^[\x20-\x7e]*$/.test(s)) return Buffer.from(s, 'latin1');
  return Buffer.concat([Buffer.from([UTF8_TEXT]), Buffer.from(s, 'utf8')]);
}

export interface ProgrammeStats {
  label: string;
  pnr: number;
  running: boolean;
  /** Output PMT PID (-1 while unknown). */
  pmtPid: number;
  /** [source PID, output PID] pairs carried. */
  pids: [number, number][];
  packetsIn: number;
  packetsOut: number;
  /** Packets waiting for their release time. */
  queued: number;
  /** Packets dropped: no anchor yet (before the first PCR), queue full. */
  dropped: number;
  eitSections: number;
  pcrResyncs: number;
  /** Net 27 MHz ticks the programme's PCR anchor moved to follow its source clock. */
  pcrSlewTicks: number;
  /** PCRs sent in adaptation-only packets (PCR_INSERT_MS). */
  pcrInserted: number;
  /** Why the programme is left out ('' when it is in). */
  refused: string;
}

/** The packets of one source waiting for their release time (parallel arrays, FIFO). */
class Queue {
  pkts: Buffer[] = [];
  at: number[] = [];
  /** PCR offset of a PCR packet, NaN for others. */
  offset: number[] = [];
  disc: boolean[] = [];
  head = 0;

  get size(): number {
    return this.pkts.length - this.head;
  }

  push(p: Buffer, at: number, offset: number, disc: boolean): void {
    this.pkts.push(p);
    this.at.push(at);
    this.offset.push(offset);
    this.disc.push(disc);
  }

  shift(): void {
    this.head++;
    if (this.head >= 1024 && this.head * 2 >= this.pkts.length) {
      this.pkts = this.pkts.slice(this.head);
      this.at = this.at.slice(this.head);
      this.offset = this.offset.slice(this.head);
      this.disc = this.disc.slice(this.head);
      this.head = 0;
    }
  }
}

class Source {
  running = false;
  srcPnr = -1;
  srcPmtPid = -1;
  pmt: Pmt | null = null;
  pmtSection: Buffer | null = null;
  /** Source PID → output PID (-1: not carried). */
  readonly map = new Int16Array(PID_COUNT).fill(-1);
  outPmtPid = -1;
  outPcrPid = NULL_PID;
  outStreams: PmtStream[] = [];
  refused = '';
  sdtName: Buffer | null = null;
  eitPf = false;
  eitSchedule = false;
  readonly timing = new SourceTiming();
  /** Constant rate: the slot of the last PCR sent and its offset (NaN before the first). */
  lastPcrSlot = 0;
  lastPcrOffset = Number.NaN;
  pcrInserted = 0;
  readonly queue = new Queue();
  readonly pmtVersion = new OwnVersion();
  packetsIn = 0;
  packetsOut = 0;
  dropped = 0;
  eitSections = 0;
  readonly patReader: SectionReader;
  pmtReader: SectionReader | null = null;
  readonly sdtReader: SectionReader;
  readonly eitReader: SectionReader;

  constructor(
    readonly index: number,
    readonly cfg: MuxProgramme,
    mux: Multiplexer,
  ) {
    this.patReader = new SectionReader((s) => mux.sourcePat(this, s));
    this.sdtReader = new SectionReader((s) => mux.sourceSdt(this, s));
    this.eitReader = new SectionReader((s) => mux.sourceEit(this, s));
  }
}

export class Multiplexer {
  readonly sources: Source[];
  private readonly cc = new Int8Array(PID_COUNT).fill(-1);
  /** Table packets waiting for the next slots (they go before elementary packets). */
  private tablePackets: Buffer[] = [];
  private readonly due = { psi: -Infinity, sdt: -Infinity, nit: -Infinity, time: -Infinity };
  private readonly patVersion = new OwnVersion();
  private readonly sdtVersion = new OwnVersion();
  private readonly nitVersion = new OwnVersion();
  /** Output PID → the source that holds it (keep-pid collisions are checked against it). */
  private readonly owner = new Map<number, Source>();
  private readonly provider: Buffer;
  private readonly networkName: Buffer;
  /** Constant rate: the local time of slot 0 and the slots sent since. */
  private start = Number.NaN;
  private slots = 0;
  private readonly maxQueued: number;
  /** Packets in every source's queue. */
  private queuedTotal = 0;
  readonly stats = { packetsOut: 0, nullPackets: 0, tablePackets: 0, overflow: 0, skippedSlots: 0 };

  constructor(
    readonly settings: MuxSettings,
    /** Wall clock (ms since the epoch) for TDT and TOT. */
    private readonly wallClock: () => number,
  ) {
    this.sources = settings.programmes.map((p, i) => new Source(i, p, this));
    this.provider = dvbText(settings.provider);
    this.networkName = dvbText(settings.networkName);
    // At most a second of output waits in the queues; more is dropped (content above rate).
    this.maxQueued = settings.bitrate > 0 ? Math.ceil(settings.bitrate / BYTES_PER_PACKET_BITS) : 0;
    if (settings.autoPid) {
      this.sources.forEach((s, i) => {
        if (i < MAX_PROGRAMMES) s.outPmtPid = AUTO_PID_BASE + i * AUTO_PID_BLOCK;
        else s.refused = `more than ${MAX_PROGRAMMES} programmes: no PID block left`;
      });
    }
  }

  /** Packets (aligned) of source `i`, arrived at local time `now` (ms). */
  push(i: number, buf: Buffer, now: number): void {
    const s = this.sources[i]!;
    s.running = true;
    for (let o = 0; o + TS_PACKET_SIZE <= buf.length; o += TS_PACKET_SIZE) {
      const p = pidOf(buf, o);
      s.packetsIn++;
      if (p === PAT_PID) s.patReader.packet(buf, o);
      else if (p === s.srcPmtPid) s.pmtReader?.packet(buf, o);
      else if (p === SDT_PID) s.sdtReader.packet(buf, o);
      else if (p === EIT_PID) s.eitReader.packet(buf, o);
      const out = s.map[p]!;
      if (out < 0 || s.refused) continue;
      this.carry(s, buf, o, out, now);
    }
  }

  private carry(s: Source, buf: Buffer, o: number, out: number, now: number): void {
    const paced = this.settings.bitrate > 0;
    if (paced && this.queuedTotal >= this.maxQueued) {
      s.dropped++;
      this.stats.overflow++;
      return;
    }
    const pkt = Buffer.from(buf.subarray(o, o + TS_PACKET_SIZE));
    pkt[1] = (pkt[1]! & 0xe0) | (out >> 8);
    pkt[2] = out & 0xff;
    let rel: Release | null = null;
    let at = now;
    if (paced) {
      if (out === s.outPcrPid && readPcr(pkt, 0) >= 0) {
        rel = s.timing.pcr(readPcr(pkt, 0), now);
        at = rel.at;
      } else {
        at = s.timing.other();
        if (Number.isNaN(at)) {
          s.dropped++; // before the first PCR: no timing yet
          return;
        }
      }
    }
    s.queue.push(pkt, at, rel ? rel.offset : Number.NaN, rel?.discontinuity ?? false);
    this.queuedTotal++;
  }

  /** Source `i` spliced or restarted: its sections start over, its timing re-anchors. */
  sourceDiscontinuity(i: number): void {
    const s = this.sources[i]!;
    s.patReader.reset();
    s.pmtReader?.reset();
    s.sdtReader.reset();
    s.eitReader.reset();
    s.timing.reset();
  }

  /** Source `i` stopped (or came back): its programme stays, `running_status` follows. */
  setRunning(i: number, running: boolean): void {
    this.sources[i]!.running = running;
  }

  sourcePat(s: Source, section: Buffer): void {
    if (section[0] !== 0x00) return;
    const pat = parsePat(section);
    const first = pat.programs.find((p) => p.pid > LAST_TABLE_PID && p.pid !== NULL_PID);
    if (!first) return;
    if (first.programNumber === s.srcPnr && first.pid === s.srcPmtPid) return;
    s.srcPnr = first.programNumber;
    s.srcPmtPid = first.pid;
    s.pmtReader = new SectionReader((sec) => this.sourcePmt(s, sec));
  }

  sourcePmt(s: Source, section: Buffer): void {
    if (section[0] !== 0x02) return;
    const pmt = parsePmt(section);
    if (pmt.programNumber !== s.srcPnr) return;
    if (s.pmt && Buffer.compare(section, s.pmtSection ?? Buffer.alloc(0)) === 0) return;
    s.pmtSection = section;
    s.pmt = pmt;
    this.mapProgramme(s);
  }

  /** Work out the output PIDs of `s` from its PMT (auto block, or its own PIDs if free). */
  private mapProgramme(s: Source): void {
    if (!this.settings.autoPid) {
      this.claimOwnPids();
      return;
    }
    const pmt = s.pmt!;
    s.map.fill(-1);
    const streams = pmt.streams.filter((e) => e.pid > LAST_TABLE_PID && e.pid !== NULL_PID);
    const pcrOwn = pmt.pcrPid !== NULL_PID && !streams.some((e) => e.pid === pmt.pcrPid);
    if (s.refused) return;
    const base = s.outPmtPid;
    const room = AUTO_PID_BLOCK - 1 - (pcrOwn ? 1 : 0);
    const kept = streams.slice(0, room);
    kept.forEach((e, k) => {
      s.map[e.pid] = base + 1 + k;
    });
    if (pcrOwn) s.map[pmt.pcrPid] = base + 1 + kept.length;
    s.outStreams = kept.map((e) => ({ ...e, pid: s.map[e.pid]! }));
    s.outPcrPid = pmt.pcrPid === NULL_PID ? NULL_PID : s.map[pmt.pcrPid]!;
  }

  /**
   * Own PIDs: each must be free of the multiplex's tables and of every other programme. The
   * programmes claim theirs in list order, worked out again whenever a PMT changes: of two that
   * collide the earlier in the list keeps its PIDs whichever PMT came first, and a later one left
   * out comes back as soon as the collision goes away.
   */
  private claimOwnPids(): void {
    this.owner.clear();
    for (const s of this.sources) if (s.pmt) this.claimOwn(s);
  }

  private claimOwn(s: Source): void {
    const pmt = s.pmt!;
    s.map.fill(-1);
    const streams = pmt.streams.filter((e) => e.pid > LAST_TABLE_PID && e.pid !== NULL_PID);
    const pcrOwn = pmt.pcrPid !== NULL_PID && !streams.some((e) => e.pid === pmt.pcrPid);
    s.refused = '';
    const wanted = [s.srcPmtPid, ...streams.map((e) => e.pid)];
    if (pcrOwn) wanted.push(pmt.pcrPid);
    for (const p of wanted) {
      const other = this.owner.get(p);
      if (p <= LAST_TABLE_PID) {
        s.refused = `PID ${p} of ${s.cfg.label} (pnr ${s.cfg.pnr}) is a table PID of the multiplex: programme ${s.cfg.pnr} left out`;
      } else if (other) {
        s.refused = `PID ${p} of ${s.cfg.label} (pnr ${s.cfg.pnr}) collides with ${other.cfg.label} (pnr ${other.cfg.pnr}): programme ${s.cfg.pnr} left out`;
      }
      if (s.refused) break;
    }
    if (s.refused) {
      s.outPmtPid = -1;
      s.outStreams = [];
      s.outPcrPid = NULL_PID;
      return;
    }
    for (const p of wanted) {
      this.owner.set(p, s);
      if (p !== s.srcPmtPid) s.map[p] = p;
    }
    s.outPmtPid = s.srcPmtPid;
    s.outStreams = streams.map((e) => ({ ...e }));
    s.outPcrPid = pmt.pcrPid;
  }

  sourceSdt(s: Source, section: Buffer): void {
    if (section[0] !== SDT_ACTUAL_TABLE_ID) return;
    const svc = parseSdt(section).services.find((x) => x.serviceId === s.srcPnr);
    if (!svc) return;
    for (const d of parseDescriptors(svc.descriptors)) {
      if (d.tag !== DESCRIPTOR_SERVICE) continue;
      const sd = parseServiceDescriptor(d.data);
      if (sd) s.sdtName = Buffer.from(sd.name);
    }
  }

  sourceEit(s: Source, section: Buffer): void {
    if (section.length < EIT_FIXED_SIZE + 4 || !isEitActual(section[0]!)) return;
    const h = parseSectionHeader(section);
    if (h.tableIdExtension !== s.srcPnr || s.refused || s.outPmtPid < 0) return;
    if (section[0] === 0x4e) s.eitPf = true;
    else s.eitSchedule = true;
    s.eitSections++;
    const out = readdressEit(section, {
      serviceId: s.cfg.pnr,
      transportStreamId: this.settings.transportStreamId,
      originalNetworkId: this.settings.networkId,
    });
    this.tablePackets.push(...split(sectionPackets(out, EIT_PID, 0)));
  }

  /** Programmes in the multiplex's tables: known output PMT PID, not refused. */
  private listed(): Source[] {
    return this.sources.filter((s) => !s.refused && s.outPmtPid >= 0);
  }

  /** Queue the tables due at local time `now`. */
  private tables(now: number): void {
    const due = (k: keyof typeof this.due, every: number): boolean => {
      if (now < this.due[k]) return false;
      this.due[k] = now + every;
      return true;
    };
    const add = (section: Buffer, pid: number) =>
      this.tablePackets.push(...split(sectionPackets(section, pid, 0)));
    const listed = this.listed();
    if (due('psi', PSI_INTERVAL_MS)) {
      add(this.pat(listed), PAT_PID);
      for (const s of listed) add(this.pmt(s), s.outPmtPid);
    }
    if (due('sdt', SDT_INTERVAL_MS)) add(this.sdt(listed), SDT_PID);
    if (due('nit', NIT_INTERVAL_MS)) add(this.nit(listed), NIT_PID);
    if (due('time', TIME_INTERVAL_MS)) {
      const wall = this.wallClock();
      add(buildTdt(wall), TDT_PID);
      add(buildTot(wall), TDT_PID);
    }
  }

  private pat(listed: Source[]): Buffer {
    const pat = {
      transportStreamId: this.settings.transportStreamId,
      currentNext: true,
      networkPid: NIT_PID,
      programs: listed.map((s) => ({ programNumber: s.cfg.pnr, pid: s.outPmtPid })),
    };
    const body = buildPat({ ...pat, version: 0 });
    return buildPat({ ...pat, version: this.patVersion.next(versionless(body), 0) });
  }

  private pmt(s: Source): Buffer {
    const pmt: Pmt = {
      programNumber: s.cfg.pnr,
      version: 0,
      currentNext: true,
      pcrPid: s.outPcrPid,
      programInfo: s.pmt?.programInfo ?? Buffer.alloc(0),
      streams: s.outStreams,
    };
    const body = buildPmt(pmt);
    return buildPmt({ ...pmt, version: s.pmtVersion.next(versionless(body), s.pmt?.version ?? 0) });
  }

  /** Service name bytes of `s`, cut so that provider and name fit one service_descriptor. */
  serviceName(s: Source): Buffer {
    const name = s.cfg.serviceName
      ? dvbText(s.cfg.serviceName)
      : (s.sdtName ?? dvbText(s.cfg.label));
    return name.subarray(0, Math.max(0, SERVICE_TEXT_ROOM - this.provider.length));
  }

  private sdt(listed: Source[]): Buffer {
    const country = this.settings.country
      ? countryAvailabilityDescriptor(this.settings.country)
      : Buffer.alloc(0);
    const services: SdtService[] = listed.map((s) => ({
      serviceId: s.cfg.pnr,
      eitSchedule: s.eitSchedule,
      eitPresentFollowing: s.eitPf,
      runningStatus: s.running ? RUNNING_STATUS_RUNNING : RUNNING_STATUS_NOT_RUNNING,
      freeCaMode: false,
      descriptors: Buffer.concat([
        buildServiceDescriptor({
          serviceType: s.cfg.serviceType,
          provider: this.provider.subarray(0, SERVICE_TEXT_ROOM),
          name: this.serviceName(s),
        }),
        country,
      ]),
    }));
    const sdt = {
      actual: true,
      transportStreamId: this.settings.transportStreamId,
      originalNetworkId: this.settings.networkId,
      currentNext: true,
      services,
    };
    const body = buildSdt({ ...sdt, version: 0 });
    return buildSdt({ ...sdt, version: this.sdtVersion.next(versionless(body), 0) });
  }

  private nit(listed: Source[]): Buffer {
    const nit = {
      actual: true,
      networkId: this.settings.networkId,
      currentNext: true,
      descriptors: this.networkName.length
        ? networkNameDescriptor(this.networkName)
        : Buffer.alloc(0),
      transportStreams: [
        {
          transportStreamId: this.settings.transportStreamId,
          originalNetworkId: this.settings.networkId,
          descriptors: serviceListDescriptor(
            listed.map((s) => ({ serviceId: s.cfg.pnr, serviceType: s.cfg.serviceType })),
          ),
        },
      ],
    };
    const body = buildNit({ ...nit, version: 0 });
    return buildNit({ ...nit, version: this.nitVersion.next(versionless(body), 0) });
  }

  /** Not paced: the tables due at `now` and every packet waiting, on the output's counters. */
  take(now: number): Buffer {
    this.tables(now);
    const parts: Buffer[] = [];
    for (const p of this.tablePackets) parts.push(this.stamp(p));
    this.stats.tablePackets += this.tablePackets.length;
    this.tablePackets = [];
    for (const s of this.sources) {
      const q = s.queue;
      while (q.size > 0) {
        parts.push(this.stamp(q.pkts[q.head]!));
        s.packetsOut++;
        q.shift();
        this.queuedTotal--;
      }
    }
    this.stats.packetsOut += parts.length;
    return Buffer.concat(parts);
  }

  /** Constant rate: the packets of the slots due by local time `now` (ms) at `bitrate`:
   *  tables first, then the elementary packets released by then (earliest first), null packets
   *  in the rest; PCRs restamped onto each slot's position. A stall of more than a second is
   *  not made up (those slots are skipped and counted). */
  paced(now: number): Buffer {
    const rate = this.settings.bitrate;
    if (Number.isNaN(this.start)) this.start = now;
    const slotMs = (BYTES_PER_PACKET_BITS * 1000) / rate;
    let due = Math.floor((now - this.start) / slotMs) - this.slots;
    const cap = Math.ceil(rate / BYTES_PER_PACKET_BITS);
    if (due > cap) {
      this.stats.skippedSlots += due - cap;
      this.slots += due - cap;
      due = cap;
    }
    if (due <= 0) return Buffer.alloc(0);
    this.tables(now);
    const out = Buffer.allocUnsafe(due * TS_PACKET_SIZE);
    const ticksPerSlot = (BYTES_PER_PACKET_BITS * PCR_PER_MS * 1000) / rate;
    const insertSlots = Math.max(1, Math.floor(PCR_INSERT_MS / slotMs));
    for (let k = 0; k < due; k++, this.slots++) {
      const o = k * TS_PACKET_SIZE;
      const slotAt = this.start + this.slots * slotMs;
      const table = this.tablePackets.shift();
      if (table) {
        this.stamp(table).copy(out, o);
        this.stats.tablePackets++;
        continue;
      }
      const late = this.pcrLate(insertSlots);
      if (late) {
        const pkt = pcrOnlyPacket(late.outPcrPid);
        writePcr(
          this.stamp(pkt),
          0,
          this.start * PCR_PER_MS + this.slots * ticksPerSlot + late.lastPcrOffset,
        );
        pkt.copy(out, o);
        late.lastPcrSlot = this.slots;
        late.pcrInserted++;
        continue;
      }
      const s = this.next(slotAt);
      if (!s) {
        NULL.copy(out, o);
        this.stats.nullPackets++;
        continue;
      }
      const q = s.queue;
      const pkt = this.stamp(q.pkts[q.head]!);
      const offset = q.offset[q.head]!;
      if (!Number.isNaN(offset)) {
        // The slot's position on the output's 27 MHz timeline, plus the programme's offset.
        const position = this.start * PCR_PER_MS + this.slots * ticksPerSlot;
        writePcr(pkt, 0, position + offset);
        if (q.disc[q.head]) pkt[5] = pkt[5]! | AF_DISCONTINUITY;
        s.lastPcrSlot = this.slots;
        s.lastPcrOffset = offset;
      }
      pkt.copy(out, o);
      s.packetsOut++;
      q.shift();
      this.queuedTotal--;
    }
    this.stats.packetsOut += due;
    return out;
  }

  /** A running programme whose last PCR is `slots` or more slots old (the first such). */
  private pcrLate(slots: number): Source | undefined {
    for (const s of this.sources) {
      if (!s.running || Number.isNaN(s.lastPcrOffset) || s.outPcrPid === NULL_PID) continue;
      if (this.slots - s.lastPcrSlot >= slots) return s;
    }
    return undefined;
  }

  /** The source whose head packet is released earliest, if by `at`. */
  private next(at: number): Source | undefined {
    let best: Source | undefined;
    let bestAt = at;
    for (const s of this.sources) {
      const q = s.queue;
      if (q.size === 0) continue;
      const t = q.at[q.head]!;
      if (t <= bestAt) {
        best = s;
        bestAt = t;
      }
    }
    return best;
  }

  /** The packet with the output PID's next continuity counter (payload packets count). */
  private stamp(p: Buffer): Buffer {
    const id = pidOf(p, 0);
    let c = this.cc[id]!;
    if (hasPayload(p, 0) || c < 0) c = (c + 1) & 0x0f;
    this.cc[id] = c;
    setCc(p, 0, c);
    return p;
  }

  /** Why programmes are left out (PID collisions, no PID block left). */
  refusals(): { pnr: number; reason: string }[] {
    return this.sources
      .filter((s) => s.refused)
      .map((s) => ({ pnr: s.cfg.pnr, reason: s.refused }));
  }

  programmeStats(): ProgrammeStats[] {
    return this.sources.map((s) => ({
      label: s.cfg.label,
      pnr: s.cfg.pnr,
      running: s.running,
      pmtPid: s.refused ? -1 : s.outPmtPid,
      pids: [...s.map.entries()].filter(([, o]) => o >= 0) as [number, number][],
      packetsIn: s.packetsIn,
      packetsOut: s.packetsOut,
      queued: s.queue.size,
      dropped: s.dropped,
      eitSections: s.eitSections,
      pcrResyncs: s.timing.resyncs,
      pcrSlewTicks: s.timing.slewTicks,
      pcrInserted: s.pcrInserted,
      refused: s.refused,
    }));
  }
}

/** An adaptation-only packet of `pid` carrying a PCR (written by the caller). */
function pcrOnlyPacket(pid: number): Buffer {
  const p = Buffer.alloc(TS_PACKET_SIZE, 0xff);
  p[0] = 0x47;
  p[1] = (pid >> 8) & 0x1f;
  p[2] = pid & 0xff;
  p[3] = AFC_ADAPTATION;
  p[4] = TS_PACKET_SIZE - 5; // adaptation_field_length: the rest of the packet
  p[5] = AF_PCR;
  return p;
}

function split(packets: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o < packets.length; o += TS_PACKET_SIZE) {
    out.push(packets.subarray(o, o + TS_PACKET_SIZE));
  }
  return out;
}
