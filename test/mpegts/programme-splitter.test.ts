// The programme splitter (the demuxer's pure part) on crafted multiplexes: what one programme's
// output carries and what it does not, PMT changes followed, a programme leaving and coming
// back, CA handling, and bad tables (broken CRC, 1,000 programmes, PMTs on table PIDs). The
// output is read back with the native analyzer, an independent section reader.
import t from 'tap';
import { BusHub } from '../../src/engine/hub.ts';
import { decodePnr, encodePnr } from '../../src/inputs/demuxer/input.ts';
import { leaseProgramme, splitterConsumers } from '../../src/inputs/demuxer/shared.ts';
import { crc32 } from '../../src/mpegts/crc.ts';
import { type PacketRouter, routePackets } from '../../src/mpegts/pid-router.ts';
import {
  CONFIRM_CLEAR_PACKETS,
  type ConsumerOptions,
  ProgrammeSplitter,
} from '../../src/mpegts/programme-splitter.ts';
import { parsePat, parsePmt } from '../../src/mpegts/psi.ts';
import { parseSdt } from '../../src/mpegts/sdt.ts';
import { SectionReader } from '../../src/mpegts/section-reader.ts';
import { nativeRoutePackets } from '../../src/native/pid-router.ts';
import { type Section, TsAnalyzer } from '../../src/native/ts.ts';
import { packet, pat, pmt, psiPackets, sdt, section } from '../helpers/ts-craft.ts';

const PKT = 188;
const pidOf = (b: Buffer, o: number) => ((b[o + 1]! & 0x1f) << 8) | b[o + 2]!;

/** An EIT section of `service` (table 0x4e p/f actual, 0x4f other, 0x50 schedule). */
function eit(tableId: number, service: number, eventId: number): Buffer {
  const body = Buffer.alloc(6 + 12);
  body.writeUInt16BE(1, 0); // transport_stream_id
  body.writeUInt16BE(1, 2); // original_network_id
  body[4] = 0; // segment_last_section_number
  body[5] = tableId; // last_table_id
  body.writeUInt16BE(eventId, 6);
  body.set([0xea, 0x5e, 0x12, 0x00, 0x00, 0x01, 0x00, 0x00, 0x80, 0x00], 8); // start, duration, status, loop 0
  const s = section(tableId, service, body);
  s[1] = (s[1]! & 0x0f) | 0xf0; // DVB SI flags
  return recrc(s);
}

/** `s` with its CRC_32 recomputed (after header bytes were changed). */
function recrc(s: Buffer): Buffer {
  const out = Buffer.from(s);
  out.writeUInt32BE(crc32(out.subarray(0, out.length - 4)), out.length - 4);
  return out;
}

/** A CA_descriptor (tag 9) for CA system 0x0B00 on `pid`. */
const caDescriptor = (pid: number) =>
  Buffer.from([0x09, 4, 0x0b, 0x00, 0xe0 | (pid >> 8), pid & 0xff]);

interface Prog {
  pnr: number;
  pmtPid: number;
  es: number[];
  version?: number;
  ca?: number;
}

class Mux {
  private ccs = new Map<string, { n: number }>();
  private c(pid: number) {
    const k = String(pid);
    const v = this.ccs.get(k) ?? { n: 0 };
    this.ccs.set(k, v);
    return v;
  }
  psi(pid: number, sections: Buffer[]): Buffer {
    return Buffer.concat(psiPackets(pid, sections, this.c(pid)));
  }
  es(pid: number, n = 1, scrambling = 0): Buffer {
    const out: Buffer[] = [];
    for (let i = 0; i < n; i++) {
      out.push(
        packet({
          pid,
          cc: this.c(pid).n++ & 15,
          payload: Buffer.alloc(184, pid & 0xff),
          scrambling,
        }),
      );
    }
    return Buffer.concat(out);
  }
  /** One cycle: PAT, PMTs, SDT, EIT for every programme, then `n` packets of each ES. */
  cycle(progs: Prog[], o: { cat?: Buffer; n?: number; scrambling?: number } = {}): Buffer {
    const parts = [this.psi(0, [pat(progs.map((p) => ({ pnr: p.pnr, pid: p.pmtPid })))])];
    for (const p of progs) {
      const desc = p.ca !== undefined ? caDescriptor(p.ca) : undefined;
      parts.push(
        this.psi(p.pmtPid, [
          pmt(
            p.pnr,
            p.es[0]!,
            p.es.map((pid, i) => ({
              type: i === 0 ? 0x1b : 0x0f,
              pid,
              descriptors: i === 0 ? desc : undefined,
            })),
            p.version ?? 0,
          ),
        ]),
      );
    }
    if (o.cat) parts.push(this.psi(1, [o.cat]));
    parts.push(
      this.psi(0x11, [
        sdt(progs.map((p) => ({ id: p.pnr, name: `Channel ${p.pnr}`, provider: 'Test' }))),
      ]),
    );
    parts.push(
      this.psi(
        0x12,
        progs.flatMap((p) => [
          eit(0x4e, p.pnr, p.pnr),
          eit(0x4f, p.pnr, 1),
          eit(0x50, p.pnr, p.pnr + 1),
        ]),
      ),
    );
    for (const p of progs)
      for (const pid of p.es) parts.push(this.es(pid, o.n ?? 3, o.scrambling ?? 0));
    return Buffer.concat(parts);
  }
}

const PROGS: Prog[] = [
  { pnr: 101, pmtPid: 0x100, es: [0x101, 0x102] },
  { pnr: 102, pmtPid: 0x200, es: [0x201, 0x202] },
  // 103 shares its PMT PID with 102: the PMT sections are told apart by program_number.
  { pnr: 103, pmtPid: 0x200, es: [0x301, 0x302] },
];

function collect(splitter: ProgrammeSplitter, pnr: number, opts: ConsumerOptions = {}) {
  const out: Buffer[] = [];
  const ev = { returned: 0, discontinuities: [] as string[] };
  const consumer = splitter.add(
    pnr,
    {
      packets: (b) => out.push(Buffer.from(b)),
      returned: () => ev.returned++,
      discontinuity: (r) => ev.discontinuities.push(r),
    },
    opts,
  );
  return { out, ev, consumer, all: () => Buffer.concat(out) };
}

function read(ts: Buffer) {
  const a = new TsAnalyzer({ tr101290: true, psiPids: 'all' });
  a.push(ts);
  const sections: Section[] = a.takeSections();
  const pids = new Set<number>();
  for (let o = 0; o < ts.length; o += PKT) pids.add(pidOf(ts, o));
  return { stats: a.stats(), sections, pids };
}

t.test('one programme of three: its tables, its PIDs, nothing else', async (t) => {
  const mux = new Mux();
  const sp = new ProgrammeSplitter();
  const c = collect(sp, 102);
  for (let i = 0; i < 5; i++) sp.push(mux.cycle(PROGS));
  const r = read(c.all());
  t.same(
    [...r.pids].sort((a, b) => a - b),
    [0x00, 0x11, 0x12, 0x200, 0x201, 0x202],
    'PIDs of 102 and its tables',
  );
  t.equal(r.stats.tr101290.continuityCountError, 0, 'CC valid on every PID');
  t.equal(r.stats.crcErrors, 0);
  const pats = r.sections.filter((s) => s.tableId === 0);
  t.ok(pats.length >= 4);
  const p = parsePat(pats[0]!.data);
  t.same(p.programs, [{ programNumber: 102, pid: 0x200 }], 'a PAT of one programme');
  const pmts = r.sections.filter((s) => s.tableId === 2);
  t.ok(
    pmts.every((s) => parsePmt(s.data).programNumber === 102),
    'only 102’s PMT, not 103’s',
  );
  t.same(
    parsePmt(pmts[0]!.data).streams.map((s) => s.pid),
    [0x201, 0x202],
  );
  const sdts = r.sections.filter((s) => s.tableId === 0x42);
  t.ok(sdts.length > 0);
  t.same(
    parseSdt(sdts[0]!.data).services.map((s) => s.serviceId),
    [102],
    'SDT of its service only',
  );
  const eits = r.sections.filter((s) => s.tableId >= 0x4e && s.tableId <= 0x6f);
  t.ok(eits.length >= 8);
  t.ok(
    eits.every((s) => ((s.data[3]! << 8) | s.data[4]!) === 102),
    'EIT of its service only',
  );
  t.same(
    [...new Set(eits.map((s) => s.tableId))].sort(),
    [0x4e, 0x50],
    'p/f and schedule actual, no EIT other',
  );
  const st = c.consumer.stats();
  t.equal(st.presence, 'present');
  t.equal(st.pmtVersionsFollowed, 0);
  t.ok(st.tablesRewritten > 10);
  t.equal(sp.stats().programmes, 3);
  // The versions stay put while the tables do not change.
  t.equal(new Set(pats.map((s) => (s.data[5]! >> 1) & 31)).size, 1, 'PAT version steady');
  t.equal(new Set(sdts.map((s) => (s.data[5]! >> 1) & 31)).size, 1, 'SDT version steady');
});

t.test('a PMT change is followed: new PID passed, version moved', async (t) => {
  const mux = new Mux();
  const sp = new ProgrammeSplitter();
  const c = collect(sp, 101);
  sp.push(mux.cycle(PROGS));
  const changed = PROGS.map((p) =>
    p.pnr === 101 ? { ...p, es: [0x101, 0x102, 0x103], version: 1 } : p,
  );
  sp.push(mux.cycle(changed));
  sp.push(mux.cycle(changed));
  const r = read(c.all());
  t.ok(r.pids.has(0x103), 'the new elementary PID is passed');
  const versions = r.sections.filter((s) => s.tableId === 2).map((s) => (s.data[5]! >> 1) & 31);
  t.same([...new Set(versions)], [0, 1], 'output PMT version moved with the change');
  t.equal(c.consumer.stats().pmtVersionsFollowed, 1);
  t.equal(r.stats.tr101290.continuityCountError, 0);
});

t.test(
  'a programme leaves the PAT: absent, nothing out; comes back: returned, output again',
  async (t) => {
    const mux = new Mux();
    const sp = new ProgrammeSplitter();
    const c = collect(sp, 102);
    sp.push(mux.cycle(PROGS));
    const without = PROGS.filter((p) => p.pnr !== 102);
    c.out.length = 0;
    sp.push(mux.cycle(without));
    t.equal(c.consumer.presence, 'absent');
    const leftover = read(c.all());
    t.notOk(leftover.pids.has(0x201), 'no elementary packets once it left');
    c.out.length = 0;
    sp.push(mux.cycle(without));
    t.equal(c.out.length, 0, 'an absent programme sends nothing (the input goes silent)');
    sp.push(mux.cycle(PROGS));
    sp.push(mux.cycle(PROGS));
    t.equal(c.consumer.presence, 'present');
    t.equal(c.ev.returned, 1, 'its return is signalled once');
    const back = read(c.all());
    t.ok(back.pids.has(0x201) && back.pids.has(0x200), 'PMT and ES again');
    t.equal(back.sections.filter((s) => s.tableId === 0).length, 2);
  },
);

t.test('bad input: broken CRC, 1,000 programmes, PMTs on table PIDs', async (t) => {
  const mux = new Mux();
  const sp = new ProgrammeSplitter();
  const good = collect(sp, 101);
  const onPat = collect(sp, 500);
  sp.push(mux.cycle(PROGS));
  // A PAT with a broken CRC is ignored (and counted).
  const broken = section(0, 1, Buffer.from([0, 101, 0xe0, 0x00]), 3, true);
  sp.push(mux.psi(0, [broken]));
  t.equal(sp.stats().crcErrors, 1);
  // 1,000 programmes over four sections; programme 500 says its PMT is on the PAT's PID, and
  // 101's PMT lists an ES on PID 0 and a PCR on the PAT's PID.
  const entries = Array.from({ length: 1000 }, (_, i) => ({ pnr: i + 1, pid: 0x1000 + i }));
  entries[100] = { pnr: 101, pid: 0x100 };
  entries[499] = { pnr: 500, pid: 0 };
  const pats = [0, 1, 2, 3].map((n) => {
    const s = pat(entries.slice(n * 250, n * 250 + 250), 4);
    s[6] = n;
    s[7] = 3;
    return recrc(s);
  });
  const badPmt = pmt(
    101,
    0,
    [
      { type: 0x1b, pid: 0x101 },
      { type: 0x0f, pid: 0 },
    ],
    1,
  );
  for (let i = 0; i < 3; i++) {
    sp.push(
      Buffer.concat([mux.psi(0, pats), mux.psi(0x100, [badPmt]), mux.es(0x101, 5), mux.es(0, 1)]),
    );
  }
  t.equal(sp.stats().programmes, 1000);
  t.ok(sp.stats().badPatEntries >= 3, 'the PAT entry on PID 0 is counted');
  t.equal(onPat.consumer.presence, 'absent', 'a PMT on the PAT PID is not followed');
  const gs = good.consumer.stats();
  t.equal(gs.presence, 'present', 'the other programme is unaffected');
  t.ok(gs.badPids >= 2, 'the ES on PID 0 and the PCR on PID 0 are refused');
  t.same(gs.pids, [0x101]);
  const r = read(good.all());
  t.equal(r.stats.tr101290.continuityCountError, 0);
  t.ok(r.pids.has(0x101));
  t.equal(r.stats.crcErrors, 0, 'nothing broken goes out');
  const outPats = r.sections.filter((s) => s.tableId === 0);
  t.ok(
    outPats.every((s) => parsePat(s.data).programs.length === 1),
    'PAT of one programme still',
  );
});

t.test(
  'scrambled programme: CAT, ECM, EMM go out; filterCaClear strips them once clear',
  async (t) => {
    const cat = section(1, 0xffff, caDescriptor(0x700));
    const progs: Prog[] = [
      { pnr: 101, pmtPid: 0x100, es: [0x101, 0x102], ca: 0x600 },
      { pnr: 102, pmtPid: 0x200, es: [0x201, 0x202] },
    ];
    const mux = new Mux();
    const sp = new ProgrammeSplitter();
    const plain = collect(sp, 101);
    const filtered = collect(sp, 101, { filterCaClear: true });
    const clearOne = collect(sp, 102);
    const cycle = (scrambling: number) =>
      Buffer.concat([mux.cycle(progs, { cat, scrambling }), mux.es(0x600, 1), mux.es(0x700, 1)]);
    sp.push(cycle(2));
    let r = read(plain.all());
    t.ok(
      r.pids.has(1) && r.pids.has(0x600) && r.pids.has(0x700),
      'CAT, ECM and EMM of a scrambled programme',
    );
    t.notOk(read(clearOne.all()).pids.has(1), 'no CAT for a clear programme');
    t.ok(filtered.consumer.scrambled());
    // Clear packets long enough: confirmed clear.
    const rounds = Math.ceil(CONFIRM_CLEAR_PACKETS / 6) + 2;
    for (let i = 0; i < rounds; i++) sp.push(cycle(0));
    t.ok(filtered.consumer.stats().caStripped, 'confirmed clear');
    filtered.out.length = 0;
    plain.out.length = 0;
    sp.push(cycle(0));
    r = read(filtered.all());
    t.notOk(r.pids.has(1) || r.pids.has(0x600) || r.pids.has(0x700), 'no CAT, ECM, EMM once clear');
    const pm = parsePmt(r.sections.find((s) => s.tableId === 2)!.data);
    t.notOk(
      pm.streams.some((s) => s.descriptors.includes(0x09)),
      'CA descriptors stripped from the PMT',
    );
    t.ok(read(plain.all()).pids.has(0x600), 'without the option the CA PIDs stay');
    // Scrambled again: CA comes back.
    sp.push(cycle(2));
    sp.push(cycle(2));
    t.notOk(filtered.consumer.stats().caStripped);
    t.ok(read(Buffer.concat(filtered.out)).pids.has(0x600));
  },
);

t.test('the shared splitter: one subscription per bus, gone with the last lease', async (t) => {
  const hub = new BusHub();
  const got: number[] = [];
  const a = leaseProgramme(hub, 101, { packets: (b) => got.push(b.length) }, {});
  const b = leaseProgramme(hub, 102, { packets: () => undefined }, {});
  t.equal(hub.size, 1, 'subscribed once');
  t.equal(splitterConsumers(hub), 2);
  hub.packets(new Mux().cycle(PROGS));
  t.ok(got.length > 0);
  t.equal(a.splitterStats().packetsIn, b.splitterStats().packetsIn, 'one analysis for both');
  a.release();
  a.release();
  t.equal(hub.size, 1);
  b.release();
  t.equal(hub.size, 0, 'unsubscribed when the last demuxer leaves');
  t.equal(splitterConsumers(hub), 0);
});

t.test('a consumer whose sink throws does not stop the others', async (t) => {
  const sp = new ProgrammeSplitter();
  sp.add(101, {
    packets: () => {
      throw new Error('sink failed');
    },
  });
  const ok = collect(sp, 102);
  sp.push(new Mux().cycle(PROGS));
  t.ok(ok.out.length > 0, 'the other consumer got its packets');
  t.ok(sp.stats().sinkErrors >= 1, 'counted');
});

t.test('section reader: spanning, packed, continuity break', async (t) => {
  const got: Buffer[] = [];
  const r = new SectionReader((s) => got.push(s));
  const big = section(0x50, 7, Buffer.alloc(400, 0x33));
  const small = pat([{ pnr: 1, pid: 0x100 }]);
  const cc = { n: 0 };
  for (const p of psiPackets(0x12, [small, big, small], cc)) r.packet(p, 0);
  t.same(got, [small, big, small]);
  got.length = 0;
  const pk = psiPackets(0x12, [big], cc);
  r.packet(pk[0]!, 0);
  r.packet(pk[2]!, 0); // the middle packet lost
  t.equal(got.length, 0);
  t.equal(r.stats.dropped, 1);
});

const ROUTERS: [string, PacketRouter][] = [
  ['TypeScript router', routePackets],
  ['native router', nativeRoutePackets],
];

t.test(
  'consumers added until the output regions move: batches come from the new ones',
  async (t) => {
    for (const [name, router] of ROUTERS) {
      const mux = new Mux();
      const sp = new ProgrammeSplitter(router);
      const early = collect(sp, 101);
      // Batches of the same sizes before and after: a view of the old regions kept for a size
      // would hand over stale bytes (continuity errors, packets repeated).
      for (let i = 0; i < 3; i++) sp.push(mux.cycle(PROGS));
      for (const pnr of [102, 103, 102, 103]) collect(sp, pnr); // a fifth slot: regions reallocated
      for (let i = 0; i < 3; i++) sp.push(mux.cycle(PROGS));
      const r = read(early.all());
      t.equal(r.stats.tr101290.continuityCountError, 0, `${name}: CC valid on every PID`);
      const es = early.all().filter((_, i) => i % PKT === 0).length; // packets out
      t.equal(es, early.consumer.stats().packetsOut, `${name}: every packet counted once`);
      const payloads = new Set<number>();
      const all = early.all();
      for (let o = 0; o < all.length; o += PKT)
        if (pidOf(all, o) === 0x101) payloads.add(all[o + 4]!);
      t.same([...payloads], [0x01], `${name}: PID 0x101 carries its own bytes only`);
      t.equal(
        read(all).sections.filter((x) => x.tableId === 0).length,
        6,
        `${name}: one PAT per cycle, none repeated`,
      );
    }
  },
);

t.test(
  'section reader: repeats are the checked copy again; changed bytes are checked',
  async (t) => {
    const got: Buffer[] = [];
    const r = new SectionReader((s) => got.push(s));
    const cc = { n: 0 };
    // Forty EIT sections in turn, twice: the second round is the first round's objects.
    const sections = Array.from({ length: 40 }, (_, i) => eit(0x4e, 100 + i, i));
    for (let round = 0; round < 2; round++)
      for (const p of psiPackets(0x12, sections, cc)) r.packet(p, 0);
    t.equal(got.length, 80);
    t.ok(
      got.slice(40).every((s, i) => s === got[i]),
      'every repeat handed on as the copy checked the first time',
    );
    t.ok(
      got.slice(0, 40).every((s, i) => s.equals(sections[i]!)),
      'the bytes as they came',
    );
    // Same CRC_32 field, other bytes: checked (and refused), not taken for the cached one.
    const forged = Buffer.from(sections[3]!);
    forged[10] = forged[10]! ^ 0xff;
    const first = got.slice(0, 40);
    got.length = 0;
    for (const p of psiPackets(0x12, [forged, sections[3]!], cc)) r.packet(p, 0);
    t.equal(r.stats.crcErrors, 1, 'the changed section fails its CRC');
    t.same(got, [sections[3]], 'only the good one handed on');
    t.equal(got[0], first[3], 'as the copy checked before');
  },
);

t.test('repeated PAT and PMT packets do not stop the router; a changed PMT does', async (t) => {
  for (const [name, router] of ROUTERS) {
    let calls = 0;
    const counting: PacketRouter = (src, from, end, tb) => {
      calls++;
      return router(src, from, end, tb);
    };
    const mux = new Mux();
    const sp = new ProgrammeSplitter(counting);
    const c = collect(sp, 101);
    sp.push(mux.cycle(PROGS));
    sp.push(mux.cycle(PROGS));
    calls = 0;
    for (let i = 0; i < 5; i++) sp.push(mux.cycle(PROGS));
    t.equal(calls, 5, `${name}: one routing call per batch while the tables repeat`);
    // In one batch: the tables again, then a new PMT version with a third PID, then its packets.
    const changed = PROGS.map((p) =>
      p.pnr === 101 ? { ...p, es: [0x101, 0x102, 0x103], version: 1 } : p,
    );
    c.out.length = 0;
    calls = 0;
    sp.push(Buffer.concat([mux.cycle(PROGS), mux.cycle(changed)]));
    t.ok(calls > 1, `${name}: the changed PMT stopped the router`);
    const r = read(c.all());
    const all = c.all();
    let n103 = 0;
    for (let o = 0; o < all.length; o += PKT) if (pidOf(all, o) === 0x103) n103++;
    t.equal(n103, 3, `${name}: the new PID's packets after the new PMT, in the same batch`);
    t.equal(r.stats.tr101290.continuityCountError, 0, `${name}: CC valid on every PID`);
    t.same(
      r.sections.filter((x) => x.tableId === 0).length,
      2,
      `${name}: both PATs out, repeats included`,
    );
  }
});

t.test('pnr encoding for T2-MI inner programmes', async (t) => {
  t.same(decodePnr(101), { plp: null, programme: 101 });
  t.equal(encodePnr(0, 101), 65536 + 101);
  t.same(decodePnr(encodePnr(3, 1001)), { plp: 3, programme: 1001 });
  t.same(decodePnr(16777215), { plp: 254, programme: 65535 });
});
