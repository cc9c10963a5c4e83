// TsAnalyzer on crafted streams: each TR 101 290 indicator triggered by a case made for it, a
// clean stream giving none, CC rules, PCR, PSI reassembly and CRC, null dropping.
import t from 'tap';
import { TsAnalyzer, type TsAnalyzerOptions, type TsStats } from '../../src/native/ts.ts';
import {
  AUDIO_PID,
  type CleanStreamOptions,
  cleanStream,
  nullPacket,
  PKT,
  packet,
  pat,
  pmt,
  psiPackets,
  sdt,
  section,
  VIDEO_PID,
} from '../helpers/ts-craft.ts';

function run(o: CleanStreamOptions, opts: TsAnalyzerOptions = {}): { a: TsAnalyzer; s: TsStats } {
  const a = new TsAnalyzer(opts);
  for (const tick of cleanStream(o)) a.push(Buffer.concat(tick.packets), tick.t);
  return { a, s: a.stats() };
}

const zero = {
  tsSyncLoss: 0,
  syncByteError: 0,
  patError: 0,
  continuityCountError: 0,
  pmtError: 0,
  pidError: 0,
  transportError: 0,
  crcError: 0,
  pcrRepetitionError: 0,
  pcrDiscontinuityIndicatorError: 0,
  pcrAccuracyError: 0,
  ptsError: 0,
  catError: 0,
};

t.test('a clean constant-rate stream raises no indicator', async (t) => {
  const { a, s } = run({ ms: 8000 });
  t.same(s.tr101290, zero);
  t.equal(s.priority1, 0);
  t.equal(s.priority2, 0);
  t.equal(s.pcrBitrate, 20 * PKT * 8 * 100, 'PCR bitrate: 20 packets per 10 ms');
  const video = s.pids.find((p) => p.pid === VIDEO_PID)!;
  t.ok(video.hasPcr);
  t.equal(video.lastPcr, 7980 * 27000);
  t.equal(video.pcrJitterNs, 0);
  const progs = a.programs();
  t.equal(progs.length, 1);
  t.same(progs[0]!.streams, [
    { pid: VIDEO_PID, streamType: 0x1b, codec: 'h264', kind: 'video' },
    { pid: AUDIO_PID, streamType: 0x0f, codec: 'aac', kind: 'audio', language: 'eng' },
  ]);
  t.equal(progs[0]!.pcrPid, VIDEO_PID);
});

t.test('PAT_error: PAT absent longer than 0.5 s, wrong table id, scrambled', async (t) => {
  // PAT gone from 1000 to 2600 ms: absent 1.6 s → 3 periods of 0.5 s.
  const { s } = run({ ms: 4000, keep: (pid, at) => !(pid === 0 && at > 1000 && at < 2600) });
  t.equal(s.tr101290.patError, 3);
  const a = new TsAnalyzer();
  a.push(Buffer.concat(psiPackets(0, [section(0x02, 1, Buffer.alloc(8))])), 0);
  a.push(packet({ pid: 0, cc: 1, scrambling: 2, payload: Buffer.alloc(184) }), 1);
  a.push(Buffer.concat([nullPacket(), nullPacket()]), 2); // three syncs are needed to lock
  t.equal(a.stats().tr101290.patError, 2, 'one for table_id 0x02 on PID 0, one for scrambling');
});

t.test('PMT_error: PMT absent longer than 0.5 s', async (t) => {
  const { s } = run({ ms: 3000, keep: (pid, at) => !(pid === 0x100 && at > 1000 && at < 1700) });
  t.equal(s.tr101290.pmtError, 1);
  t.equal(s.tr101290.patError, 0);
});

t.test('PID_error: a referenced PID absent for pidTimeoutMs', async (t) => {
  const { s } = run(
    { ms: 4000, keep: (pid, at) => !(pid === AUDIO_PID && at >= 1000 && at < 2600) },
    { pidTimeoutMs: 1000 },
  );
  t.equal(s.tr101290.pidError, 1);
  const def = run({ ms: 4000, keep: (pid, at) => !(pid === AUDIO_PID && at >= 1000 && at < 2600) });
  t.equal(def.s.tr101290.pidError, 0, 'default 5 s is not reached by a 1.6 s gap');
});

t.test(
  'Continuity_count_error: lost, duplicated, repeated twice, discontinuity, adaptation only',
  async (t) => {
    const a = new TsAnalyzer();
    const pl = Buffer.alloc(184);
    const seq = [
      packet({ pid: 0x200, cc: 0, payload: pl }),
      packet({ pid: 0x200, cc: 1, payload: pl }),
      packet({ pid: 0x200, cc: 1, payload: pl }), // duplicate: allowed once
      packet({ pid: 0x200, cc: 2, payload: pl }),
      packet({ pid: 0x200 }), // adaptation only, CC not advanced: fine
      packet({ pid: 0x200, cc: 4, payload: pl }), // 3 lost → error 1
      packet({ pid: 0x200, cc: 4, payload: pl }), // duplicate
      packet({ pid: 0x200, cc: 4, payload: pl }), // third copy → error 2
      packet({ pid: 0x200, cc: 9, payload: pl, discontinuity: true }), // flagged jump: fine
      packet({ pid: 0x200, cc: 10, payload: pl }),
      packet({ pid: 0x200, cc: 15, payload: pl }), // error 3
      packet({ pid: 0x200, cc: 0, payload: pl }), // wraps: fine
    ];
    a.push(Buffer.concat(seq), 0);
    const s = a.stats();
    t.equal(s.tr101290.continuityCountError, 3);
    t.equal(s.pids.find((p) => p.pid === 0x200)!.ccErrors, 3);
    // Same count whatever the chunking.
    const b = new TsAnalyzer();
    const all = Buffer.concat(seq);
    for (let o = 0; o < all.length; o += 97) b.push(all.subarray(o, o + 97), 0);
    t.equal(b.stats().tr101290.continuityCountError, 3);
  },
);

t.test('Transport_error: transport_error_indicator set', async (t) => {
  const a = new TsAnalyzer();
  a.push(
    Buffer.concat([
      packet({ pid: 0x300, cc: 0, payload: Buffer.alloc(1) }),
      packet({ pid: 0x300, cc: 5, tei: true, payload: Buffer.alloc(1) }),
      nullPacket(),
    ]),
    0,
  );
  t.equal(a.stats().tr101290.transportError, 1);
  t.equal(a.stats().tr101290.continuityCountError, 0, 'a TEI packet is not checked further');
});

t.test('CRC_error and section reassembly across packets', async (t) => {
  const streams = Array.from({ length: 30 }, (_, i) => ({
    type: 0x0f,
    pid: 0x400 + i,
    lang: 'deu',
  }));
  const big = pmt(1, 0x400, streams); // > 184 bytes: spans packets
  t.ok(big.length > 184);
  const bad = pmt(1, 0x400, streams.slice(0, 2), 1);
  bad[bad.length - 1]! ^= 0xff;
  const a = new TsAnalyzer({ psiPids: 'all' });
  const cc = { n: 0 };
  a.push(Buffer.concat(psiPackets(0, [pat([{ pnr: 1, pid: 0x100 }])])), 0);
  a.push(Buffer.concat(psiPackets(0x100, [big], cc)), 1);
  a.push(Buffer.concat(psiPackets(0x100, [bad], cc)), 2);
  const secs = a.takeSections();
  t.same(
    secs.map((s) => [s.pid, s.tableId]),
    [
      [0, 0],
      [0x100, 2],
    ],
  );
  t.same(secs[1]!.data, big, 'the reassembled PMT is byte-identical');
  t.equal(a.stats().tr101290.crcError, 1);
  t.equal(a.programs()[0]!.streams.length, 30);
  t.same(a.takeSections(), [], 'taken sections are not returned twice');
});

t.test(
  'several sections in one packet, and a section starting after the pointer_field',
  async (t) => {
    const s1 = section(0x4e, 1, Buffer.alloc(20, 1));
    const s2 = section(0x4e, 2, Buffer.alloc(30, 2));
    const s3 = section(0x4e, 3, Buffer.alloc(200, 3)); // spans into the next packet
    const s4 = section(0x4e, 4, Buffer.alloc(10, 4)); // starts in that packet after pointer_field
    const first = Buffer.concat([Buffer.from([0]), s1, s2, s3]);
    const p1 = packet({ pid: 0x12, cc: 0, pusi: true, payload: first.subarray(0, 184) });
    const rest = first.subarray(184);
    const p2 = packet({
      pid: 0x12,
      cc: 1,
      pusi: true,
      payload: Buffer.concat([Buffer.from([rest.length]), rest, s4]),
    });
    const a = new TsAnalyzer({ psiPids: [0x12] });
    a.push(Buffer.concat([p1, p2, nullPacket()]), 0);
    const got = a.takeSections().map((s) => s.data);
    t.same(got, [s1, s2, s3, s4]);
    t.equal(a.stats().crcErrors, 0);
  },
);

t.test('PCR_repetition_error: PCR gap over 40 ms', async (t) => {
  const gap = (_pid: number, at: number, kind: string) =>
    !(kind === 'pcr' && (at === 1000 || at === 1020));
  const { s } = run({ ms: 2000, keep: gap }); // 60 ms between PCRs
  t.equal(s.tr101290.pcrRepetitionError, 1);
  t.equal(s.tr101290.pcrDiscontinuityIndicatorError, 0);
});

t.test('PCR_discontinuity_indicator_error: jump over 100 ms unless flagged', async (t) => {
  const jump = (at: number, pcr: number) => ({ pcr: at >= 1000 ? pcr + 27000 * 500 : pcr });
  t.equal(run({ ms: 2000, pcrAt: jump }).s.tr101290.pcrDiscontinuityIndicatorError, 1);
  const flagged = (at: number, pcr: number) => ({
    pcr: at >= 1000 ? pcr + 27000 * 500 : pcr,
    discontinuity: at === 1000,
  });
  const f = run({ ms: 2000, pcrAt: flagged }).s;
  t.equal(f.tr101290.pcrDiscontinuityIndicatorError, 0);
  t.equal(f.tr101290.pcrAccuracyError, 0, 'the rate reference restarts at a flagged jump');
  const back = (at: number, pcr: number) => ({ pcr: at >= 1000 ? pcr - 27000 * 300 : pcr });
  t.equal(run({ ms: 2000, pcrAt: back }).s.tr101290.pcrDiscontinuityIndicatorError, 1, 'backwards');
});

t.test('PCR_accuracy_error: one PCR 2 µs off the byte clock', async (t) => {
  const off = (at: number, pcr: number) => ({ pcr: at === 1500 ? pcr + 54 : pcr });
  const { s } = run({ ms: 2000, pcrAt: off });
  // The bad PCR is off by 2 µs against its predecessor, and its successor by 2 µs the other way.
  t.equal(s.tr101290.pcrAccuracyError, 2);
  t.ok(Math.abs(s.pids.find((p) => p.pid === VIDEO_PID)!.pcrJitterNs - 2000) < 1);
  const small = (at: number, pcr: number) => ({ pcr: at === 1500 ? pcr + 5 : pcr });
  t.equal(run({ ms: 2000, pcrAt: small }).s.tr101290.pcrAccuracyError, 0, '185 ns is within ±500');
});

t.test('the byte clock does not depend on how the packets are cut into pushes', async (t) => {
  // PCR accuracy and the PCR bit rate count packet slots between PCRs. Pushed as one buffer, in
  // datagrams of 7 packets (so each PCR sits at another place in its push) or tick by tick,
  // the same stream gives the same figures.
  const ticks = [...cleanStream({ ms: 2000 })];
  const byTick = run({ ms: 2000 }).s;
  const all = Buffer.concat(ticks.flatMap((k) => k.packets));
  const whole = new TsAnalyzer();
  whole.push(all, ticks.at(-1)!.t);
  const dgrams = new TsAnalyzer();
  let i = 0; // packets so far: a push starts at every seventh, stamped with its tick's time
  for (const k of ticks) {
    for (let j = 0; j < k.packets.length; j++, i++) {
      if (i % 7 === 0) dgrams.push(all.subarray(i * PKT, (i + 7) * PKT), k.t);
    }
  }
  for (const [name, s] of [
    ['one push', whole.stats()],
    ['7-packet pushes', dgrams.stats()],
  ] as const) {
    t.equal(s.pcrBitrate, byTick.pcrBitrate, `${name}: PCR bit rate`);
    t.equal(s.tr101290.pcrAccuracyError, 0, `${name}: no PCR_accuracy_error`);
    t.equal(s.packets, byTick.packets, `${name}: packets`);
    const v = s.pids.find((p) => p.pid === VIDEO_PID)!;
    t.equal(v.pcrJitterNs, 0, `${name}: no PCR jitter`);
  }
});

t.test('PTS_error: no PTS for more than 700 ms while the PID goes on', async (t) => {
  const { s } = run({
    ms: 3000,
    keep: (pid, at, kind) => !(pid === VIDEO_PID && kind === 'pes' && at > 1000 && at < 1800),
  });
  t.equal(s.tr101290.ptsError, 1);
});

t.test('CAT_error: scrambled packets without a CAT; none when a CAT is there', async (t) => {
  const scr = (_pid: number, at: number) => at >= 1000 && at < 1200;
  const { s } = run({ ms: 2000, scrambled: scr });
  t.equal(s.tr101290.catError, 1);
  t.equal(s.pids.find((p) => p.pid === VIDEO_PID)!.scrambledPackets, 160);
  const a = new TsAnalyzer();
  a.push(Buffer.concat(psiPackets(1, [section(0x01, 0xffff, Buffer.alloc(0))])), 0);
  for (const tick of cleanStream({ ms: 2000, scrambled: scr }))
    a.push(Buffer.concat(tick.packets), tick.t);
  t.equal(a.stats().tr101290.catError, 0);
  a.push(Buffer.concat(psiPackets(1, [section(0x02, 1, Buffer.alloc(4))], { n: 1 })), 2001);
  t.equal(a.stats().tr101290.catError, 1, 'a table other than 0x01 on PID 1');
});

t.test('sync: junk before, junk between, one broken sync byte, two in a row', async (t) => {
  const pkts = Array.from({ length: 10 }, (_, i) =>
    packet({ pid: 0x50, cc: i, payload: Buffer.alloc(184, i) }),
  );
  const junk = Buffer.from('0123456789G47xyz');
  const a = new TsAnalyzer();
  const out1 = a.push(Buffer.concat([junk, ...pkts.slice(0, 5)]), 0);
  const out2 = a.push(Buffer.concat([junk, ...pkts.slice(5)]), 1);
  const out3 = a.push(Buffer.concat([nullPacket(), nullPacket(), nullPacket()]), 2);
  t.same(Buffer.concat([out1, out2]), Buffer.concat(pkts), 'packets resynced, in order');
  t.equal(out3.length, 3 * PKT);
  let s = a.stats();
  t.equal(s.syncLosses, 1);
  t.equal(s.tr101290.tsSyncLoss, 1);
  t.equal(s.junkBytes, 2 * junk.length);
  t.equal(s.tr101290.continuityCountError, 0);
  // One corrupted sync byte in an aligned stream: Sync_byte_error, the packet is dropped.
  const b = new TsAnalyzer();
  const broken = pkts.map((p) => Buffer.from(p));
  broken[4]![0] = 0x48;
  const out = b.push(Buffer.concat(broken), 0);
  s = b.stats();
  t.equal(s.tr101290.syncByteError, 1);
  t.equal(s.tr101290.tsSyncLoss, 0);
  t.equal(out.length, 9 * PKT);
  t.equal(s.tr101290.continuityCountError, 1, 'the dropped packet shows as a CC gap');
  // Two in a row: sync lost, then regained.
  broken[5]![0] = 0x00;
  const c = new TsAnalyzer();
  c.push(Buffer.concat([...broken, ...pkts]), 0);
  s = c.stats();
  t.equal(s.tr101290.tsSyncLoss, 1);
  t.ok(s.packets >= 10 + 4, 'packets after the loss are analysed again');
});

t.test(
  'null packets are dropped with dropNull, kept otherwise; output aliases input when it can',
  async (t) => {
    const ticks = cleanStream({ ms: 200 });
    const input = Buffer.concat(ticks.flatMap((k) => k.packets));
    const keepAll = new TsAnalyzer();
    const same = keepAll.push(input, 0);
    t.equal(same.buffer, input.buffer, 'zero-copy: the same memory');
    t.equal(same.length, input.length);
    const drop = new TsAnalyzer({ dropNull: true });
    const out = drop.push(input, 0);
    let nulls = 0;
    for (let o = 0; o < out.length; o += PKT)
      if ((((out[o + 1]! & 0x1f) << 8) | out[o + 2]!) === 0x1fff) nulls++;
    t.equal(nulls, 0);
    t.equal(out.length + drop.stats().nullPackets * PKT, input.length);
  },
);

t.test('SDT names the programme; reset forgets everything', async (t) => {
  const a = new TsAnalyzer();
  a.push(
    Buffer.concat([
      ...psiPackets(0, [pat([{ pnr: 7, pid: 0x700 }])]),
      ...psiPackets(0x700, [pmt(7, 0x701, [{ type: 0x02, pid: 0x701 }])]),
      ...psiPackets(0x11, [sdt([{ id: 7, name: 'Känal Sieben', provider: 'ACME' }])]),
    ]),
    0,
  );
  const p = a.programs()[0]!;
  t.equal(p.name, 'Känal Sieben');
  t.equal(p.provider, 'ACME');
  t.equal(p.streams[0]!.codec, 'mpeg2video');
  a.reset();
  t.same(a.programs(), []);
  t.equal(a.stats().packets, 0);
});

t.test('MPTS: two programmes; PMT and PAT version changes are followed', async (t) => {
  const a = new TsAnalyzer();
  const pat1 = pat([
    { pnr: 1, pid: 0x100 },
    { pnr: 2, pid: 0x200 },
  ]);
  const feed = (pkts: Buffer[], now: number) =>
    a.push(Buffer.concat([...pkts, nullPacket(), nullPacket(), nullPacket()]), now);
  const cc0 = { n: 0 };
  const cc1 = { n: 0 };
  const cc2 = { n: 0 };
  feed(
    [
      ...psiPackets(0, [pat1], cc0),
      ...psiPackets(0x100, [pmt(1, 0x101, [{ type: 0x1b, pid: 0x101 }])], cc1),
      ...psiPackets(
        0x200,
        [
          pmt(2, 0x201, [
            { type: 0x24, pid: 0x201 },
            { type: 0x03, pid: 0x202, lang: 'spa' },
          ]),
        ],
        cc2,
      ),
    ],
    0,
  );
  t.same(
    a.programs().map((p) => [p.pnr, p.pmtPid, p.streams.map((s) => s.codec)]),
    [
      [1, 0x100, ['h264']],
      [2, 0x200, ['hevc', 'mp2']],
    ],
  );
  // PMT of programme 1 gains an audio stream (version 1).
  feed(
    [
      ...psiPackets(
        0x100,
        [
          pmt(
            1,
            0x101,
            [
              { type: 0x1b, pid: 0x101 },
              { type: 0x0f, pid: 0x102 },
            ],
            1,
          ),
        ],
        cc1,
      ),
    ],
    10,
  );
  const p1 = a.programs()[0]!;
  t.equal(p1.version, 1);
  t.same(
    p1.streams.map((s) => s.pid),
    [0x101, 0x102],
  );
  // PAT version 1 drops programme 2.
  feed([...psiPackets(0, [pat([{ pnr: 1, pid: 0x100 }], 1)], cc0)], 20);
  t.same(
    a.programs().map((p) => p.pnr),
    [1],
  );
  t.equal(a.stats().tr101290.crcError, 0);
});
