// The multiplexer on crafted sources and a hand-driven clock: tables (PAT with the NIT, PMTs,
// SDT names and provider, NIT network name, EIT readdressed, TDT/TOT), auto-pid blocks, own
// PIDs kept or refused on a collision, constant rate with null stuffing, PCR accuracy against
// the constant-rate position under bursty arrival, continuity per output PID, a stopped source.
import t from 'tap';
import { parseTimeSection } from '../../src/epg/tot.ts';
import { eitAddress } from '../../src/mpegts/eit.ts';
import {
  AUTO_PID_BASE,
  AUTO_PID_BLOCK,
  Multiplexer,
  type MuxSettings,
  RUNNING_STATUS_NOT_RUNNING,
} from '../../src/mpegts/multiplexer.ts';
import { parseNit } from '../../src/mpegts/nit.ts';
import { cc, hasPayload, NULL_PID, pid as pidOf, TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import { readPcr } from '../../src/mpegts/pcr.ts';
import { parseDescriptors, parsePat, parsePmt } from '../../src/mpegts/psi.ts';
import { parseSdt, parseServiceDescriptor } from '../../src/mpegts/sdt.ts';
import { packet, pat, pmt, psiPackets, sdt, section } from '../helpers/ts-craft.ts';
import { pcrAccuracy, sectionsOf } from '../helpers/ts-measure.ts';

const WALL = Date.UTC(2026, 10, 25, 12, 0, 0);

/** A single-programme source like the test generator: PMT 32, video 33 (PCR) and audio 34,
 *  programme 1, a batch per 20 ms with `kbps` of payload. */
/** A source whose PCR comes once per 40 ms frame (as the test generator's at 25 fps). */
function source(
  o: {
    pmtPid?: number;
    video?: number;
    audio?: number;
    name?: string;
    ppm?: number;
    /** Source time = local time + this (a restarted source jumps). */
    shiftMs?: { ms: number };
  } = {},
) {
  const pmtPid = o.pmtPid ?? 32;
  const video = o.video ?? 33;
  const audio = o.audio ?? 34;
  const ccs = new Map<number, { n: number }>();
  const c = (p: number) => ccs.get(p) ?? ccs.set(p, { n: 0 }).get(p)!;
  let eitCount = 0;
  return {
    pids: { pmtPid, video, audio },
    /** The batch of the 20 ms that start at source time `ms` (its PCR says so). */
    batch(ms: number, videoPackets = 5): Buffer {
      const parts = psiPackets(0, [pat([{ pnr: 1, pid: pmtPid }])], c(0));
      parts.push(
        ...psiPackets(
          pmtPid,
          [
            pmt(1, video, [
              { type: 0x1b, pid: video },
              { type: 0x03, pid: audio },
            ]),
          ],
          c(pmtPid),
        ),
      );
      if (o.name)
        parts.push(...psiPackets(0x11, [sdt([{ id: 1, name: o.name, provider: 'src' }])], c(0x11)));
      if (ms % 500 === 0) {
        const body = Buffer.from([0, 1, 0xff, 0x01, 0, 0x4e, 0xaa, eitCount++ & 0xff]);
        parts.push(...psiPackets(0x12, [section(0x4e, 1, body)], c(0x12)));
        // EIT of another service (not this programme's): not carried.
        parts.push(...psiPackets(0x12, [section(0x4e, 9, body)], c(0x12)));
      }
      for (let i = 0; i < videoPackets; i++) {
        parts.push(
          packet({
            pid: video,
            cc: c(video).n++ & 15,
            pcr:
              i === 0 && ms % 40 === 0
                ? Math.round((ms + (o.shiftMs?.ms ?? 0)) * 27_000 * (1 + (o.ppm ?? 0) / 1e6))
                : undefined,
            payload: Buffer.alloc(184, 0x11),
          }),
        );
      }
      parts.push(packet({ pid: audio, cc: c(audio).n++ & 15, payload: Buffer.alloc(184, 0x22) }));
      return Buffer.concat(parts);
    },
  };
}

function settings(over: Partial<MuxSettings> = {}): MuxSettings {
  return {
    transportStreamId: 7,
    networkId: 0x2001,
    networkName: 'Sluice Net',
    provider: 'Sluice',
    country: 'FRA',
    autoPid: true,
    bitrate: 2_000_000,
    programmes: [
      { label: 'stream 11', pnr: 101, serviceName: 'One', serviceType: 1 },
      { label: 'stream 12', pnr: 102, serviceName: 'Två', serviceType: 1 },
      { label: 'stream 13', pnr: 103, serviceName: '', serviceType: 2 },
    ],
    ...over,
  };
}

/**
 * Drive `mux` for `ms` of local time: each source makes a batch per 20 ms of its own time;
 * the batches arrive in clumps (every `clumpMs`, plus a pseudo-random delay up to `jitterMs`);
 * the paced output is taken every 5 ms. Returns the output bytes.
 */
function run(
  mux: Multiplexer,
  sources: ReturnType<typeof source>[],
  ms: number,
  o: { clumpMs?: number; jitterMs?: number; from?: number; stopAt?: Map<number, number> } = {},
): Buffer {
  const out: Buffer[] = [];
  const clump = o.clumpMs ?? 20;
  let seed = 1;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const pending: { at: number; i: number; buf: Buffer }[] = [];
  const lastAt: number[] = [];
  const from = o.from ?? 0;
  for (let now = from; now < from + ms; now++) {
    if (now % 20 === 0) {
      sources.forEach((s, i) => {
        if ((o.stopAt?.get(i) ?? Infinity) <= now) return;
        // In order per source (a pipe or a socket does not reorder), late by up to jitterMs.
        const at = Math.max(
          lastAt[i] ?? 0,
          Math.ceil((now + 1) / clump) * clump + rand() * (o.jitterMs ?? 0),
        );
        lastAt[i] = at;
        pending.push({ at, i, buf: s.batch(now) });
      });
    }
    for (let k = 0; k < pending.length; ) {
      const p = pending[k]!;
      if (p.at <= now) {
        mux.push(p.i, p.buf, now);
        pending.splice(k, 1);
      } else k++;
    }
    if (now % 5 === 0) {
      out.push(mux.settings.bitrate > 0 ? mux.paced(now) : mux.take(now));
    }
  }
  return Buffer.concat(out);
}

function pidsIn(ts: Buffer): Map<number, number> {
  const m = new Map<number, number>();
  for (let o = 0; o < ts.length; o += TS_PACKET_SIZE)
    m.set(pidOf(ts, o), (m.get(pidOf(ts, o)) ?? 0) + 1);
  return m;
}

function ccErrors(ts: Buffer): number {
  const last = new Map<number, number>();
  let errors = 0;
  for (let o = 0; o < ts.length; o += TS_PACKET_SIZE) {
    const p = pidOf(ts, o);
    if (p === NULL_PID || !hasPayload(ts, o)) continue;
    const prev = last.get(p);
    if (prev !== undefined && cc(ts, o) !== ((prev + 1) & 15)) errors++;
    last.set(p, cc(ts, o));
  }
  return errors;
}

t.test(
  'auto-pid: three colliding sources, every table, constant rate, PCR on position',
  async (t) => {
    const mux = new Multiplexer(settings(), () => WALL);
    const srcs = [source(), source(), source({ name: 'From SDT' })];
    const ts = run(mux, srcs, 3000, { clumpMs: 60, jitterMs: 30 });

    t.equal(
      ts.length / TS_PACKET_SIZE,
      Math.floor((2_995 * 2_000_000) / 1504 / 1000),
      'slot count at 2 Mbit/s',
    );
    const pats = sectionsOf(ts, 0).map(parsePat);
    const last = pats.at(-1)!;
    t.equal(last.transportStreamId, 7);
    t.equal(last.networkPid, 0x10);
    t.same(
      last.programs,
      [0, 1, 2].map((i) => ({ programNumber: 101 + i, pid: AUTO_PID_BASE + i * AUTO_PID_BLOCK })),
    );
    for (let i = 0; i < 3; i++) {
      const base = AUTO_PID_BASE + i * AUTO_PID_BLOCK;
      const p = parsePmt(sectionsOf(ts, base).at(-1)!);
      t.equal(p.programNumber, 101 + i);
      t.equal(p.pcrPid, base + 1, 'the PCR on the remapped video PID');
      t.same(
        p.streams.map((s) => [s.streamType, s.pid]),
        [
          [0x1b, base + 1],
          [0x03, base + 2],
        ],
      );
    }
    const counts = pidsIn(ts);
    for (const p of [33, 34, 32]) t.notOk(counts.has(p), `source PID ${p} not in the output`);
    t.ok((counts.get(NULL_PID) ?? 0) > 0, 'null stuffing');
    t.equal(ccErrors(ts), 0, 'continuity per output PID');

    const sdtSec = parseSdt(sectionsOf(ts, 0x11).at(-1)!);
    t.equal(sdtSec.transportStreamId, 7);
    t.equal(sdtSec.originalNetworkId, 0x2001);
    const names = sdtSec.services.map((s) => {
      const [d, country] = parseDescriptors(s.descriptors);
      const sd = parseServiceDescriptor(d!.data)!;
      t.same(country!.data.toString('hex'), 'ff465241', 'country availability FRA');
      return [s.serviceId, sd.serviceType, sd.provider.toString(), sd.name.toString()];
    });
    t.same(names, [
      [101, 1, 'Sluice', 'One'],
      [102, 1, 'Sluice', '\x15Två'],
      [103, 2, 'Sluice', 'From SDT'],
    ]);
    t.ok(
      sdtSec.services.every((s) => s.eitPresentFollowing),
      'EIT p/f flagged',
    );

    const nit = parseNit(sectionsOf(ts, 0x10).at(-1)!);
    t.equal(nit.networkId, 0x2001);
    t.equal(parseDescriptors(nit.descriptors)[0]!.data.toString(), 'Sluice Net');

    const eits = sectionsOf(ts, 0x12).map(eitAddress);
    t.ok(eits.length >= 3 * 5, 'EIT of each source carried');
    t.same(
      [
        ...new Set(eits.map((e) => `${e.serviceId}/${e.transportStreamId}/${e.originalNetworkId}`)),
      ].sort(),
      ['101/7/8193', '102/7/8193', '103/7/8193'],
      'readdressed; the other service’s EIT dropped',
    );

    const times = sectionsOf(ts, 0x14);
    t.ok(times.some((s) => s[0] === 0x70) && times.some((s) => s[0] === 0x73), 'TDT and TOT');
    t.equal(parseTimeSection(times[0]!).utc, WALL / 1000);

    const acc = pcrAccuracy(ts, 2_000_000);
    t.ok(acc.count > 3 * 50, `${acc.count} PCRs measured`);
    t.ok(acc.maxAbsNs <= 500, `PCR accuracy ${acc.maxAbsNs.toFixed(1)} ns within ±500 ns`);
    t.same([...acc.byPid.keys()].sort(), [0x101, 0x141, 0x181]);
    t.ok(acc.maxGapMs <= 40, `PCRs at most ${acc.maxGapMs.toFixed(1)} ms apart (40 ms limit)`);
    t.same(
      mux.programmeStats().map((p) => p.pcrResyncs),
      [0, 0, 0],
      'no re-anchoring',
    );
  },
);

t.test('restamped PCRs keep the programme’s timing (PCR out − PCR in stays put)', async (t) => {
  const mux = new Multiplexer(
    settings({ programmes: settings().programmes.slice(0, 1) }),
    () => WALL,
  );
  const ts = run(mux, [source()], 2000, { clumpMs: 100, jitterMs: 40 });
  // The source's PCR at its video packet k×40 ms is k × 40 ms; the output's relation to the
  // slot timeline must hold it to within the scheduling lag (slots of 0.75 ms here). PCRs the
  // multiplex adds (adaptation-only packets) are left out of the comparison.
  const pcrs: number[] = [];
  for (let o = 0; o < ts.length; o += TS_PACKET_SIZE) {
    const v = readPcr(ts, o);
    if (v >= 0 && hasPayload(ts, o)) pcrs.push(v);
  }
  const shifts = pcrs.map((v, k) => (v - pcrs[0]! - k * 40 * 27_000) / 27_000);
  t.ok(pcrs.length > 40);
  t.ok(
    shifts.every((s) => Math.abs(s) < 2),
    `PCR out − PCR in within 2 ms of its start (max ${Math.max(...shifts.map(Math.abs)).toFixed(3)} ms)`,
  );
});

t.test(
  'a source clock 200 ppm fast: the anchor follows a slew at a time, PCR accuracy holds',
  async (t) => {
    const mux = new Multiplexer(
      settings({ programmes: settings().programmes.slice(0, 1) }),
      () => WALL,
    );
    const ts = run(mux, [source({ ppm: 200 })], 30_000, { jitterMs: 5 });
    const [p] = mux.programmeStats();
    t.ok(p!.pcrSlewTicks < 0, `the anchor moved ${p!.pcrSlewTicks} ticks`);
    t.equal(p!.pcrResyncs, 0);
    const acc = pcrAccuracy(ts, 2_000_000);
    t.ok(acc.count > 1400);
    t.ok(acc.maxAbsNs <= 500, `PCR accuracy ${acc.maxAbsNs.toFixed(1)} ns within ±500 ns`);
  },
);

t.test('a source that restarts: its PCR re-anchors with discontinuity_indicator', async (t) => {
  const mux = new Multiplexer(
    settings({ programmes: settings().programmes.slice(0, 2) }),
    () => WALL,
  );
  const shift = { ms: 0 };
  const srcs = [source({ shiftMs: shift }), source()];
  const before = run(mux, srcs, 1000);
  shift.ms = 60_000;
  mux.sourceDiscontinuity(0);
  const after = run(mux, srcs, 1000, { from: 1000 });
  const ts = Buffer.concat([before, after]);
  const flagged: number[] = [];
  for (let o = 0; o < ts.length; o += TS_PACKET_SIZE) {
    if (readPcr(ts, o) >= 0 && (ts[o + 5]! & 0x80) !== 0) flagged.push(pidOf(ts, o));
  }
  t.same(flagged, [0x101], 'one PCR marked, on the restarted programme');
  t.same(
    mux.programmeStats().map((p) => p.pcrResyncs),
    [1, 0],
  );
  t.ok(pcrAccuracy(ts, 2_000_000).maxAbsNs <= 500, 'accuracy holds on both sides');
  t.equal(ccErrors(ts), 0);
});

t.test('own PIDs: kept when distinct, a collision refused naming both streams', async (t) => {
  const distinct = new Multiplexer(settings({ autoPid: false }), () => WALL);
  const a = source();
  const b = source({ pmtPid: 0x200, video: 0x201, audio: 0x202 });
  const c = source({ pmtPid: 0x300, video: 0x301, audio: 0x302 });
  let ts = run(distinct, [a, b, c], 600);
  t.same(parsePat(sectionsOf(ts, 0).at(-1)!).programs, [
    { programNumber: 101, pid: 32 },
    { programNumber: 102, pid: 0x200 },
    { programNumber: 103, pid: 0x300 },
  ]);
  t.same(
    parsePmt(sectionsOf(ts, 0x200).at(-1)!).streams.map((s) => s.pid),
    [0x201, 0x202],
  );
  t.same(distinct.refusals(), []);

  const colliding = new Multiplexer(settings({ autoPid: false }), () => WALL);
  ts = run(colliding, [a, c, source({ pmtPid: 0x400, audio: 0x302 })], 600);
  t.same(colliding.refusals(), [
    {
      pnr: 103,
      reason:
        'PID 33 of stream 13 (pnr 103) collides with stream 11 (pnr 101): programme 103 left out',
    },
  ]);
  t.same(
    parsePat(sectionsOf(ts, 0).at(-1)!).programs.map((p) => p.programNumber),
    [101, 102],
    'the refused programme is not in the PAT',
  );
  t.equal(parseSdt(sectionsOf(ts, 0x11).at(-1)!).services.length, 2, 'nor in the SDT');
  t.notOk(pidsIn(ts).has(0x400), 'nor its PMT');
});

t.test(
  'own PIDs: the list order decides a collision, and a programme left out comes back',
  async (t) => {
    const mux = new Multiplexer(settings({ autoPid: false }), () => WALL);
    const a = source();
    const c = source({ pmtPid: 0x300, video: 0x301, audio: 0x302 });
    const x = source({ pmtPid: 0x400, audio: 0x402 }); // video 33, as a's
    // The later programme's PMT comes first: it still yields to the earlier one in the list.
    mux.push(2, x.batch(0), 0);
    mux.push(1, c.batch(0), 0);
    let ts = run(mux, [a, c, x], 600, { from: 20 });
    t.same(
      mux.refusals().map((r) => r.pnr),
      [103],
      'programme 103 (third in the list) is left out, not 101',
    );
    t.same(
      parsePat(sectionsOf(ts, 0).at(-1)!).programs.map((p) => p.programNumber),
      [101, 102],
    );
    // Programme 101 moves to other PIDs: 103's are free now and it comes back.
    const moved = source({ video: 0x501, audio: 0x502 });
    ts = run(mux, [moved, c, x], 600, { from: 620 });
    t.same(mux.refusals(), [], 'nothing left out once the collision is gone');
    t.same(
      parsePat(sectionsOf(ts, 0).at(-1)!).programs.map((p) => p.programNumber),
      [101, 102, 103],
    );
    t.ok(pidsIn(ts).has(0x400), 'its PMT goes out');
  },
);

t.test(
  'a stopped source: its programme stays in the tables, empty; the others go on',
  async (t) => {
    const mux = new Multiplexer(settings(), () => WALL);
    const srcs = [source(), source(), source()];
    const first = run(mux, srcs, 1000);
    t.ok(pidsIn(first).has(0x141), 'programme 102 carried');
    mux.setRunning(1, false);
    const drain = run(mux, srcs, 500, { from: 1000, stopAt: new Map([[1, 1000]]) }); // its queue drains
    const after = run(mux, srcs, 1000, { from: 1500, stopAt: new Map([[1, 0]]) });
    const counts = pidsIn(after);
    t.notOk(counts.has(0x141) || counts.has(0x142), 'no packets of programme 102');
    t.ok((counts.get(0x101) ?? 0) > 0 && (counts.get(0x181) ?? 0) > 0, 'the others go on');
    t.same(
      parsePat(sectionsOf(after, 0).at(-1)!).programs.map((p) => p.programNumber),
      [101, 102, 103],
    );
    t.equal(parsePmt(sectionsOf(after, 0x140).at(-1)!).streams.length, 2, 'its last PMT stays');
    const services = parseSdt(sectionsOf(after, 0x11).at(-1)!).services;
    t.same(
      services.map((s) => s.runningStatus),
      [4, RUNNING_STATUS_NOT_RUNNING, 4],
      'SDT: not running',
    );
    t.equal(ccErrors(Buffer.concat([first, drain, after])), 0);
  },
);

t.test('not paced: packets as they come, PCRs untouched, tables on the clock', async (t) => {
  const mux = new Multiplexer(settings({ bitrate: 0 }), () => WALL);
  const ts = run(mux, [source(), source(), source()], 1000);
  const counts = pidsIn(ts);
  t.notOk(counts.has(NULL_PID), 'no stuffing');
  t.equal(counts.get(0x101), 49 * 5, 'every video packet once (the last batch arrives at 1 s)');
  const pcrs: number[] = [];
  for (let o = 0; o < ts.length; o += TS_PACKET_SIZE) {
    if (pidOf(ts, o) === 0x141 && readPcr(ts, o) >= 0) pcrs.push(readPcr(ts, o));
  }
  t.same(pcrs.slice(0, 3), [0, 40 * 27_000, 80 * 27_000], 'source PCRs as they were, none added');
  t.equal(sectionsOf(ts, 0).length, 10, 'PAT every 100 ms');
  t.equal(ccErrors(ts), 0);
});

t.test('content above the rate: the queue is bounded, overflow counted', async (t) => {
  const mux = new Multiplexer(
    settings({ bitrate: 300_000, programmes: settings().programmes.slice(0, 1) }),
    () => WALL,
  );
  const ts = run(mux, [source()], 3000);
  t.equal(
    ts.length / TS_PACKET_SIZE,
    Math.floor((2_995 * 300_000) / 1504 / 1000),
    'still exactly the rate',
  );
  t.ok(mux.stats.overflow > 0, `overflow ${mux.stats.overflow}`);
});
