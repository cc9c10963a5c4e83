// Programme extraction (the demuxer): one multiplex in, one single-programme TS out per
// consumer. The splitter reads the multiplex once — PAT, CAT, SDT actual, EIT and the PMTs of
// the programmes someone asked for — and each consumer gets, in input order: its own PAT (one
// programme), its programme's PMT, SDT actual with its service only, its service's EIT
// (present/following and schedule, actual), CAT and EMM PIDs when the programme is scrambled,
// TDT/TOT, and every packet of its elementary, PCR and ECM PIDs. Tables are re-packetized on
// the consumer's own continuity counters and versioned by the consumer (a version moves when
// the bytes it sends change). Everything else is dropped.
import {
  CAT_PID,
  EIT_PID,
  hasPayload,
  NULL_PID,
  PAT_PID,
  PID_COUNT,
  pid as pidOf,
  SDT_PID,
  TDT_PID,
  TS_PACKET_SIZE,
} from './packet.ts';
import {
  type PacketRouter,
  ROUTE_DEFER,
  ROUTE_MAX_SLOT,
  ROUTE_STOP,
  ROUTE_TABLE_FIRST,
  ROUTE_TABLE_SLOTS,
  type RouteTables,
  routePackets,
} from './pid-router.ts';
import {
  buildDescriptors,
  buildPat,
  buildPmt,
  CAT_TABLE_ID,
  EIT_PF_ACTUAL_TABLE_ID,
  EIT_SCHEDULE_ACTUAL_FIRST_TABLE_ID,
  EIT_SCHEDULE_ACTUAL_LAST_TABLE_ID,
  finishSection,
  LONG_HEADER_SIZE,
  OwnVersion,
  PAT_TABLE_ID,
  PMT_TABLE_ID,
  type Pmt,
  parseDescriptors,
  parsePat,
  parsePmt,
  parseSectionHeader,
  SDT_ACTUAL_TABLE_ID,
  sectionPackets,
  sectionPacketsLength,
  versionless,
  writeSectionPackets,
} from './psi.ts';
import { buildSdt, parseSdt } from './sdt.ts';
import { SectionReader } from './section-reader.ts';

export const DESCRIPTOR_CA = 0x09;
/** PIDs 0x0000–0x001F are reserved for tables (13818-1 Table 2-3, EN 300 468 5.1.3): never an
 *  elementary stream, a PCR or a PMT of a programme. */
const LAST_TABLE_PID = 0x1f;
/** A programme counts as clear once this many payload packets of its elementary streams went
 *  by in a row with transport_scrambling_control 00 (about a second of a 1 Mbit/s service). */
export const CONFIRM_CLEAR_PACKETS = 1000;
const SCRAMBLING_MASK = 0xc0;

export interface ConsumerOptions {
  /** Strip CA descriptors, ECM and EMM PIDs and the CAT once the programme is confirmed clear
   *  (`mpegts-filter-ca-clear`). */
  filterCaClear?: boolean;
}

export interface ConsumerEvents {
  /** The programme's TS for one input batch (N × 188 bytes, valid during the call). */
  packets(buf: Buffer): void;
  /** The programme came back into the PAT after it had left: the output starts over. */
  returned?(): void;
  /** The source spliced (input switch, restart): what follows does not continue. */
  discontinuity?(reason: string): void;
  /** The source stopped delivering. */
  end?(): void;
}

export type Presence = 'unknown' | 'present' | 'absent';

export interface ConsumerStats {
  pnr: number;
  presence: Presence;
  pmtPid: number;
  /** PIDs passed as they are (elementary streams, PCR, ECM, EMM). */
  pids: number[];
  scrambled: boolean;
  /** The CA descriptors and PIDs are being stripped (filterCaClear on a clear programme). */
  caStripped: boolean;
  packetsOut: number;
  /** Table sections sent (PAT, PMT, SDT, EIT, CAT), each on this consumer's CC. */
  tablesRewritten: number;
  /** Source PMT versions taken over after the first. */
  pmtVersionsFollowed: number;
  /** Entries of the PMT refused: a PID in the table range or the PMT's own PID. */
  badPids: number;
}

export interface SplitterStats {
  packetsIn: number;
  crcErrors: number;
  sectionsDropped: number;
  /** Programmes in the last complete PAT. */
  programmes: number;
  /** PAT entries whose PMT PID is a table PID (PAT, CAT, SI) or the null PID: not followed. */
  badPatEntries: number;
  /** Batches a consumer's sink threw on (the others got theirs). */
  sinkErrors: number;
  consumers: number;
}

function withVersion(s: Buffer, v: number): Buffer {
  const out = Buffer.from(s);
  out[5] = (out[5]! & 0xc1) | ((v & 0x1f) << 1);
  return finishSection(out);
}

/** CA_PIDs of the CA descriptors in a descriptor loop. */
function caPids(loop: Buffer, into: Set<number>): boolean {
  let any = false;
  for (const d of parseDescriptors(loop)) {
    if (d.tag !== DESCRIPTOR_CA || d.data.length < 4) continue;
    any = true;
    into.add(((d.data[2]! & 0x1f) << 8) | d.data[3]!);
  }
  return any;
}

function withoutCa(loop: Buffer): Buffer {
  return buildDescriptors(parseDescriptors(loop).filter((d) => d.tag !== DESCRIPTOR_CA));
}

export class ProgrammeConsumer {
  presence: Presence = 'unknown';
  pmtPid = -1;
  private pmt: Pmt | null = null;
  private pmtSection: Buffer | null = null;
  /** ES and PCR PIDs, ECM PIDs (from the PMT). */
  private esPids = new Set<number>();
  private ecmPids = new Set<number>();
  private usesCa = false;
  private clearRun = 0;
  private seenScrambled = false;
  private ccs = new Map<number, number>();
  /** Per table PID: the last section given to sendTable() and the packets it became, resent
   *  with new continuity counters while the multiplex repeats the same bytes (PAT and PMT ten
   *  times a second per programme: building them anew was most of the demuxer's work). */
  private lastTable = new Map<number, { body: Buffer; packets: Buffer }>();
  /** The PAT section last built (for its PMT PID and transport_stream_id). */
  private patBuilt: { pmtPid: number; tsId: number; section: Buffer } | null = null;
  /** The last SDT actual section read, and the one-service section made from it (if any). */
  private sdtIn: Buffer | null = null;
  private sdtOut: { body: Buffer; start: number } | null = null;
  /** Bad PIDs counted in the last PMT section parsed (counted again at each repetition). */
  private pmtBad = 0;
  private patVersion = new OwnVersion();
  private pmtVersion = new OwnVersion();
  private sdtVersion = new OwnVersion();
  /** The splitter's output regions and this consumer's slot in them (see attach()). */
  private t: RouteTables | null = null;
  private slot = -1;
  /** Views of this consumer's region by packet count, made once: a batch is handed over
   *  without a new Buffer (its bytes are valid during the call only, so the same view serves
   *  every batch of that size; twenty views a batch were a tenth of the demuxer's time). */
  private views: (Buffer | undefined)[] = [];
  private readonly s: ConsumerStats;

  constructor(
    readonly pnr: number,
    readonly events: ConsumerEvents,
    readonly opts: ConsumerOptions,
  ) {
    this.s = {
      pnr,
      presence: 'unknown',
      pmtPid: -1,
      pids: [],
      scrambled: false,
      caStripped: false,
      packetsOut: 0,
      tablesRewritten: 0,
      pmtVersionsFollowed: 0,
      badPids: 0,
    };
  }

  stats(): ConsumerStats {
    return {
      ...this.s,
      presence: this.presence,
      pmtPid: this.pmtPid,
      pids: [...this.passPids()].sort((a, b) => a - b),
      scrambled: this.scrambled(),
      caStripped: this.caStripped(),
    };
  }

  /** The programme uses conditional access (CA descriptors in its PMT, or scrambled packets
   *  seen since the last clear run was confirmed). */
  scrambled(): boolean {
    return (this.usesCa || this.seenScrambled) && !this.confirmedClear();
  }

  private confirmedClear(): boolean {
    return this.clearRun >= CONFIRM_CLEAR_PACKETS;
  }

  caStripped(): boolean {
    return this.opts.filterCaClear === true && this.usesCa && this.confirmedClear();
  }

  /** Whether CAT and the EMM PIDs go out. */
  wantsCat(): boolean {
    return this.usesCa && !this.caStripped();
  }

  /** PIDs passed packet by packet (the EMM PIDs are the splitter's, added by it). */
  passPids(): Set<number> {
    if (this.presence !== 'present' || !this.pmt) return new Set();
    const s = new Set(this.esPids);
    if (!this.caStripped()) for (const p of this.ecmPids) s.add(p);
    return s;
  }

  // ---- what the splitter tells it ---------------------------------------------------------

  /** The programme's PMT PID from a complete PAT (-1: not listed). Returns true when the
   *  PIDs to pass changed. */
  patSeen(pmtPid: number, tsId: number): boolean {
    if (pmtPid < 0) {
      if (this.presence === 'absent') return false;
      const wasPresent = this.presence === 'present';
      this.presence = 'absent';
      this.pmtPid = -1;
      this.clearPmt();
      return wasPresent;
    }
    let changed = false;
    if (this.presence === 'absent') {
      this.presence = 'present';
      this.pmtPid = pmtPid;
      this.events.returned?.();
      changed = true;
    } else if (this.presence === 'unknown') {
      this.presence = 'present';
      changed = true;
    }
    if (pmtPid !== this.pmtPid) {
      this.pmtPid = pmtPid;
      this.clearPmt();
      changed = true;
    }
    if (this.patBuilt?.pmtPid !== pmtPid || this.patBuilt.tsId !== tsId) {
      const section = buildPat({
        transportStreamId: tsId,
        version: 0,
        currentNext: true,
        programs: [{ programNumber: this.pnr, pid: pmtPid }],
      });
      this.patBuilt = { pmtPid, tsId, section };
    }
    this.sendTable(PAT_PID, this.patBuilt.section, this.patVersion, 0);
    return changed;
  }

  private clearPmt(): void {
    this.pmt = null;
    this.pmtSection = null;
    this.esPids.clear();
    this.ecmPids.clear();
    this.usesCa = false;
    this.clearRun = 0;
    this.seenScrambled = false;
    this.pmtVersion.reset();
    this.lastTable.clear(); // versions start again: nothing cached is sent as it was
  }

  /** A PMT section of this programme on its PMT PID. Returns true when the PIDs changed. */
  pmtSeen(section: Buffer): boolean {
    if (this.presence !== 'present') return false;
    if (this.pmtSection?.equals(section)) {
      // A repetition: nothing changes but the packets' continuity counters.
      this.s.badPids += this.pmtBad;
      this.sendPmt();
      return false;
    }
    const pmt = parsePmt(section);
    const badBefore = this.s.badPids;
    if (this.pmt && pmt.version !== this.pmt.version) this.s.pmtVersionsFollowed++;
    const before = [...this.passPids()].join();
    const bad = (p: number) => p <= LAST_TABLE_PID || p === this.pmtPid || p === NULL_PID;
    const es = new Set<number>();
    const ecm = new Set<number>();
    let usesCa = caPids(pmt.programInfo, ecm);
    for (const st of pmt.streams) {
      if (bad(st.pid)) this.s.badPids++;
      else es.add(st.pid);
      if (caPids(st.descriptors, ecm)) usesCa = true;
    }
    if (!bad(pmt.pcrPid)) es.add(pmt.pcrPid);
    else if (pmt.pcrPid !== NULL_PID) this.s.badPids++;
    for (const p of ecm) if (bad(p) || es.has(p)) ecm.delete(p);
    this.pmtBad = this.s.badPids - badBefore;
    this.pmt = pmt;
    this.pmtSection = section;
    this.esPids = es;
    this.ecmPids = ecm;
    this.usesCa = usesCa;
    this.sendPmt();
    return [...this.passPids()].join() !== before;
  }

  private sendPmt(): void {
    const pmt = this.pmt;
    const section = this.pmtSection;
    if (!pmt || !section) return;
    const body = this.caStripped()
      ? buildPmt({
          ...pmt,
          programInfo: withoutCa(pmt.programInfo),
          streams: pmt.streams.map((st) => ({ ...st, descriptors: withoutCa(st.descriptors) })),
        })
      : section;
    this.sendTable(this.pmtPid, body, this.pmtVersion, pmt.version);
  }

  /** An SDT actual section: the consumer sends its own with its service only. */
  sdtSeen(section: Buffer): void {
    if (this.presence !== 'present') return;
    // A repetition of the last SDT section read: the same one-service section (or none).
    if (this.sdtIn?.equals(section)) {
      if (this.sdtOut)
        this.sendTable(SDT_PID, this.sdtOut.body, this.sdtVersion, this.sdtOut.start);
      return;
    }
    const sdt = parseSdt(section);
    this.sdtIn = section;
    this.sdtOut = null;
    const service = sdt.services.find((sv) => sv.serviceId === this.pnr);
    if (!service) return;
    const one = buildSdt({ ...sdt, actual: true, services: [service] });
    one[6] = 0; // section_number, last_section_number: one section
    one[7] = 0;
    this.sdtOut = { body: finishSection(one), start: sdt.version };
    this.sendTable(SDT_PID, this.sdtOut.body, this.sdtVersion, sdt.version);
  }

  /** An EIT actual section of this service, sent as it is. */
  eitSeen(section: Buffer): void {
    if (this.presence === 'present') this.sendSection(EIT_PID, section);
  }

  catSeen(section: Buffer): void {
    if (this.presence === 'present' && this.wantsCat()) this.sendSection(CAT_PID, section);
  }

  /** A payload packet of one of its elementary PIDs: follows the scrambling state. Returns
   *  true when the programme's clear/scrambled verdict flipped. */
  esPacket(scrambling: number): boolean {
    if (!this.opts.filterCaClear) return false;
    const stripped = this.caStripped();
    if (scrambling !== 0) {
      this.seenScrambled = true;
      this.clearRun = 0;
    } else if (this.clearRun < CONFIRM_CLEAR_PACKETS) this.clearRun++;
    if (this.caStripped() === stripped) return false;
    this.sendPmt(); // the PMT goes out at once with (or without) its CA descriptors
    return true;
  }

  isEs(pid: number): boolean {
    return this.esPids.has(pid);
  }

  // ---- output -----------------------------------------------------------------------------

  private sendTable(pid: number, section: Buffer, v: OwnVersion, start: number): void {
    const last = this.lastTable.get(pid);
    if (last?.body.equals(section)) {
      // Same bytes, same version (OwnVersion moves only when the bytes sent change).
      this.sendPackets(pid, last.packets);
      return;
    }
    const version = v.next(versionless(section), start);
    const first = this.ccs.get(pid) ?? 0;
    const packets = sectionPackets(withVersion(section, version), pid, first);
    this.ccs.set(pid, (first + packets.length / TS_PACKET_SIZE) & 0x0f);
    this.write(packets, 0, packets.length);
    this.s.tablesRewritten++;
    this.lastTable.set(pid, { body: section, packets });
  }

  /** A section sent as it came (EIT, CAT), cut straight into this batch's output: most are
   *  sent once, so the packets are not kept. */
  private sendSection(pid: number, section: Buffer): void {
    const t = this.t!;
    const bytes = sectionPacketsLength(section.length);
    if (t.lens[this.slot]! + bytes > t.region) this.flush();
    const first = this.ccs.get(pid) ?? 0;
    writeSectionPackets(section, pid, first, t.dst, this.slot * t.region + t.lens[this.slot]!);
    t.lens[this.slot] = t.lens[this.slot]! + bytes;
    this.ccs.set(pid, (first + bytes / TS_PACKET_SIZE) & 0x0f);
    this.s.tablesRewritten++;
  }

  /** A section's packets sent again, on this PID's next continuity counters. */
  private sendPackets(pid: number, pk: Buffer): void {
    const t = this.t!;
    let cc = this.ccs.get(pid) ?? 0;
    if (t.lens[this.slot]! + pk.length > t.region) this.flush();
    let at = this.slot * t.region + t.lens[this.slot]!;
    this.write(pk, 0, pk.length);
    for (let o = 0; o < pk.length; o += TS_PACKET_SIZE, at += TS_PACKET_SIZE) {
      t.dst[at + 3] = (t.dst[at + 3]! & 0xf0) | cc;
      cc = (cc + 1) & 0x0f;
    }
    this.ccs.set(pid, cc);
    this.s.tablesRewritten++;
  }

  /** Write into slot `slot` of the splitter's output regions (the router copies there too,
   *  so a programme's packets keep their order whoever copies them). */
  attach(t: RouteTables, slot: number): void {
    this.t = t;
    this.slot = slot;
    this.views = [];
  }

  /** Copy bytes [from, to) of `b` into this batch's output (handed over early when full). */
  write(b: Buffer, from: number, to: number): void {
    const t = this.t!;
    const n = to - from;
    if (t.lens[this.slot]! + n > t.region) this.flush();
    b.copy(t.dst, this.slot * t.region + t.lens[this.slot]!, from, to);
    t.lens[this.slot] = t.lens[this.slot]! + n;
  }

  /** Hand this batch's output over. */
  flush(): void {
    const t = this.t;
    if (!t) return;
    const n = t.lens[this.slot]!;
    if (n === 0) return;
    t.lens[this.slot] = 0;
    this.s.packetsOut += n / TS_PACKET_SIZE;
    const k = n / TS_PACKET_SIZE;
    let view = this.views[k];
    if (!view) {
      const base = this.slot * t.region;
      view = t.dst.subarray(base, base + n);
      this.views[k] = view;
    }
    this.events.packets(view);
  }
}

/** Bytes of output a consumer gathers before it hands them over (a whole receive batch of 448
 *  packets fits). Not a power of two on purpose: regions 128 KiB apart began on the same cache
 *  sets, so 20 consumers filling theirs at once evicted each other (bench/demux.ts: 0.43× the C
 *  bound at 128 KiB, 0.47× at 700 packets; bench/RESULTS.md "demux"). */
const REGION_BYTES = 700 * TS_PACKET_SIZE;
/** Deferred packets (SDT, EIT, TDT, repeated PAT/PMT/CAT packets) noted per routing pass
 *  before they are handled. */
const DEFERRED_MAX = 1024;

export class ProgrammeSplitter {
  private consumers = new Set<ProgrammeConsumer>();
  /** Consumers by output slot (a slot is a region of t.dst). */
  private slots: (ProgrammeConsumer | undefined)[] = [];
  private t: RouteTables = {
    codes: new Uint8Array(PID_COUNT),
    dst: Buffer.alloc(0),
    region: REGION_BYTES,
    lens: new Int32Array(0),
    deferred: new Int32Array(DEFERRED_MAX),
    state: new Int32Array(1),
    last: Buffer.alloc(ROUTE_TABLE_SLOTS * TS_PACKET_SIZE),
  };
  /** Consumers wanting each PID's packets as they are. */
  private routes: (ProgrammeConsumer[] | undefined)[] = new Array(PID_COUNT);
  /** Table PIDs read section by section (PAT, CAT, SDT, EIT, followed PMTs). */
  private readers = new Map<number, SectionReader>();
  private tsId = 0;
  private patVersion = -1;
  /** Sections of the current PAT version: section_number → programmes (pnr → PMT PID). */
  private patSections = new Map<number, Map<number, number>>();
  private patLast = 0;
  private emmPids = new Set<number>();
  private badPatEntries = 0;
  private sinkErrors = 0;
  private packetsIn = 0;
  private programmes = 0;
  private retired = { crcErrors: 0, dropped: 0 };

  /** `router`: the per-packet routing (the native core's, injected by the demuxer; the
   *  TypeScript reference by default). */
  constructor(private readonly router: PacketRouter = routePackets) {
    this.reader(PAT_PID, (s) => this.onPat(s));
    this.reader(CAT_PID, (s) => this.onCat(s));
    this.reader(SDT_PID, (s) => this.onSdt(s));
    this.reader(EIT_PID, (s) => this.onEit(s));
  }

  get size(): number {
    return this.consumers.size;
  }

  add(pnr: number, events: ConsumerEvents, opts: ConsumerOptions = {}): ProgrammeConsumer {
    const c = new ProgrammeConsumer(pnr, events, opts);
    this.consumers.add(c);
    this.attach(c);
    // What is already known of the multiplex applies at once.
    if (this.patComplete()) {
      c.patSeen(this.pmtPidOf(pnr), this.tsId);
      c.flush();
    }
    this.rebuild();
    return c;
  }

  remove(c: ProgrammeConsumer): void {
    if (!this.consumers.delete(c)) return;
    const k = this.slots.indexOf(c);
    if (k >= 0) {
      this.slots[k] = undefined;
      this.t.lens[k] = 0;
    }
    this.rebuild();
  }

  /** Give `c` the first free output slot, growing the regions when none is left. */
  private attach(c: ProgrammeConsumer): void {
    let k = this.slots.indexOf(undefined);
    if (k < 0) k = this.slots.length;
    if (k >= this.t.lens.length) {
      // Output gathered so far goes out before the regions move.
      for (const other of this.slots) other?.flush();
      const n = Math.max(4, this.t.lens.length * 2);
      this.t.dst = Buffer.allocUnsafeSlow(n * this.t.region);
      this.t.lens = new Int32Array(n);
      for (const [i, other] of this.slots.entries()) other?.attach(this.t, i);
    }
    this.slots[k] = c;
    c.attach(this.t, k);
  }

  stats(): SplitterStats {
    let crcErrors = this.retired.crcErrors;
    let dropped = this.retired.dropped;
    for (const r of this.readers.values()) {
      crcErrors += r.stats.crcErrors;
      dropped += r.stats.dropped;
    }
    return {
      packetsIn: this.packetsIn,
      crcErrors,
      sectionsDropped: dropped,
      programmes: this.programmes,
      badPatEntries: this.badPatEntries,
      sinkErrors: this.sinkErrors,
      consumers: this.consumers.size,
    };
  }

  /**
   * Aligned packets of the multiplex (N × 188 bytes). The router copies the packets of PIDs one
   * consumer takes as they are; it stops at the packets that can change the routes (PAT, PMT,
   * CAT), at PIDs several consumers take or whose scrambling a consumer follows, and those are
   * handled here in order; SDT, EIT and TDT packets are noted and handled after the batch (or
   * before the next packet handled in order), and so are PAT, PMT and CAT packets equal to the
   * last of their PID but for the continuity counter: a repeat read again changes no route
   * (the memory of last packets is wiped whenever the routes change).
   */
  push(b: Buffer): void {
    const end = b.length - (b.length % TS_PACKET_SIZE);
    this.packetsIn += end / TS_PACKET_SIZE;
    const t = this.t;
    let o = 0;
    while (o < end) {
      o = this.router(b, o, end, t);
      if (o >= end) break;
      const code = t.codes[pidOf(b, o)]!;
      if (code > 0 && code <= ROUTE_MAX_SLOT && t.lens[code - 1]! > 0) {
        this.flushOne(this.slots[code - 1]); // its region is full
        continue;
      }
      if (code === ROUTE_DEFER && t.state[0]! > 0) {
        this.runDeferred(b); // the list of deferred packets is full
        continue;
      }
      // A packet handled in order: what was noted before it goes first, so each PID's packets
      // are read in their order and under the routes in force where they lie.
      this.runDeferred(b);
      this.packet(b, o);
      o += TS_PACKET_SIZE;
    }
    this.runDeferred(b);
    for (const c of this.consumers) this.flushOne(c);
  }

  /** One packet the router left to the splitter. */
  private packet(b: Buffer, o: number): void {
    const p = pidOf(b, o);
    const r = this.readers.get(p);
    if (r) {
      r.packet(b, o);
      return;
    }
    if (p === TDT_PID) {
      this.toAll(b, o);
      return;
    }
    const to = this.routes[p];
    if (!to) return;
    for (const c of to) {
      c.write(b, o, o + TS_PACKET_SIZE);
      if (c.opts.filterCaClear && hasPayload(b, o) && c.isEs(p)) {
        if (c.esPacket(b[o + 3]! & SCRAMBLING_MASK)) this.rebuild();
      }
    }
  }

  private runDeferred(b: Buffer): void {
    const t = this.t;
    const n = t.state[0]!;
    t.state[0] = 0;
    for (let i = 0; i < n; i++) this.packet(b, t.deferred[i]!);
  }

  private flushOne(c: ProgrammeConsumer | undefined): void {
    if (!c) return;
    // One consumer's failure must not stop the others, nor take the splitter off the bus (the
    // bus drops a sink that throws).
    try {
      c.flush();
    } catch {
      this.sinkErrors++;
    }
  }

  /** The source spliced: sections in progress are dropped, consumers told. */
  discontinuity(reason: string): void {
    for (const r of this.readers.values()) r.reset();
    this.t.last.fill(0);
    for (const c of this.consumers) c.events.discontinuity?.(reason);
  }

  end(): void {
    for (const c of this.consumers) c.events.end?.();
  }

  private toAll(b: Buffer, o: number): void {
    for (const c of this.consumers) if (c.presence === 'present') c.write(b, o, o + TS_PACKET_SIZE);
  }

  private reader(pid: number, fn: (s: Buffer) => void): void {
    this.readers.set(pid, new SectionReader(fn));
  }

  // ---- tables -----------------------------------------------------------------------------

  private patComplete(): boolean {
    if (this.patVersion < 0) return false;
    for (let i = 0; i <= this.patLast; i++) if (!this.patSections.has(i)) return false;
    return true;
  }

  private pmtPidOf(pnr: number): number {
    for (const m of this.patSections.values()) {
      const p = m.get(pnr);
      if (p !== undefined) return p;
    }
    return -1;
  }

  private onPat(s: Buffer): void {
    const h = parseSectionHeader(s);
    if (h.tableId !== PAT_TABLE_ID || !h.currentNext) return;
    if (h.version !== this.patVersion || h.tableIdExtension !== this.tsId) {
      this.patVersion = h.version;
      this.tsId = h.tableIdExtension;
      this.patSections.clear();
    }
    this.patLast = h.lastSectionNumber;
    const m = new Map<number, number>();
    for (const p of parsePat(s).programs) {
      // A PMT on a table PID cannot be told from the table: the entry is not usable.
      const usable = p.pid > LAST_TABLE_PID && p.pid !== NULL_PID;
      if (!usable) this.badPatEntries++;
      m.set(p.programNumber, usable ? p.pid : -1);
    }
    this.patSections.set(h.sectionNumber, m);
    if (!this.patComplete() || h.sectionNumber !== this.patLast) return;
    let count = 0;
    for (const sec of this.patSections.values()) count += sec.size;
    this.programmes = count;
    let changed = false;
    for (const c of this.consumers) {
      if (c.patSeen(this.pmtPidOf(c.pnr), this.tsId)) changed = true;
    }
    if (changed) this.rebuild();
  }

  private onPmt(pid: number, s: Buffer): void {
    const h = parseSectionHeader(s);
    if (h.tableId !== PMT_TABLE_ID || !h.currentNext) return;
    let changed = false;
    for (const c of this.consumers) {
      if (c.pmtPid === pid && c.pnr === h.tableIdExtension && c.pmtSeen(s)) changed = true;
    }
    if (changed) this.rebuild();
  }

  private onCat(s: Buffer): void {
    const h = parseSectionHeader(s);
    if (h.tableId !== CAT_TABLE_ID || !h.currentNext) return;
    const emm = new Set<number>();
    caPids(s.subarray(LONG_HEADER_SIZE, s.length - 4), emm);
    for (const p of emm) if (p <= LAST_TABLE_PID || p === NULL_PID) emm.delete(p);
    if ([...emm].join() !== [...this.emmPids].join()) {
      this.emmPids = emm;
      this.rebuild();
    }
    for (const c of this.consumers) c.catSeen(s);
  }

  private onSdt(s: Buffer): void {
    if (s[0] !== SDT_ACTUAL_TABLE_ID || !parseSectionHeader(s).currentNext) return;
    for (const c of this.consumers) c.sdtSeen(s);
  }

  private onEit(s: Buffer): void {
    const tid = s[0]!;
    const actual =
      tid === EIT_PF_ACTUAL_TABLE_ID ||
      (tid >= EIT_SCHEDULE_ACTUAL_FIRST_TABLE_ID && tid <= EIT_SCHEDULE_ACTUAL_LAST_TABLE_ID);
    if (!actual) return;
    const service = (s[3]! << 8) | s[4]!;
    for (const c of this.consumers) if (c.pnr === service) c.eitSeen(s);
  }

  /** Recompute the packet routes and the PMT PIDs to read from the consumers' state. */
  private rebuild(): void {
    const routes: (ProgrammeConsumer[] | undefined)[] = new Array(PID_COUNT);
    const pmtPids = new Set<number>();
    for (const c of this.consumers) {
      if (c.pmtPid >= 0) pmtPids.add(c.pmtPid);
      const pids = c.passPids();
      if (c.wantsCat() && c.presence === 'present') for (const e of this.emmPids) pids.add(e);
      for (const p of pids) {
        if (this.isTablePid(p, pmtPids)) continue;
        const list = routes[p];
        if (list) list.push(c);
        else routes[p] = [c];
      }
    }
    for (const [p, r] of this.readers) {
      if (p > LAST_TABLE_PID && !pmtPids.has(p)) {
        this.retired.crcErrors += r.stats.crcErrors;
        this.retired.dropped += r.stats.dropped;
        this.readers.delete(p);
      }
    }
    for (const p of pmtPids) {
      if (!this.readers.has(p)) this.reader(p, (s) => this.onPmt(p, s));
    }
    // A PID some programme uses as its PMT is read as a table, never passed as packets.
    for (const p of pmtPids) routes[p] = undefined;
    this.routes = routes;
    this.recode();
  }

  /** The router's code per PID from the routes and the tables read (see push()). */
  private recode(): void {
    const codes = this.t.codes;
    codes.fill(0);
    this.routes.forEach((to, p) => {
      if (!to) return;
      const only = to.length === 1 ? to[0]! : undefined;
      const slot = only ? this.slots.indexOf(only) : -1;
      const plain = only !== undefined && !(only.opts.filterCaClear && only.isEs(p));
      codes[p] = plain && slot >= 0 && slot < ROUTE_MAX_SLOT ? slot + 1 : ROUTE_STOP;
    });
    // Tables that change the routes are read in order, but for a packet that repeats the last
    // one of its PID (it changes nothing); the others after the batch.
    let k = 0;
    for (const p of this.readers.keys()) {
      if (p === SDT_PID || p === EIT_PID) codes[p] = ROUTE_DEFER;
      else codes[p] = k < ROUTE_TABLE_SLOTS ? ROUTE_TABLE_FIRST + k++ : ROUTE_STOP;
    }
    codes[TDT_PID] = ROUTE_DEFER;
    // The routes changed: a packet that repeats one read before may mean something new now.
    this.t.last.fill(0);
  }

  private isTablePid(p: number, pmtPids: Set<number>): boolean {
    return p <= LAST_TABLE_PID || pmtPids.has(p);
  }
}
