// Decoding times for RTP video (src/protocols/rtp/dts.ts) and the reorder depth an SPS declares
// (src/protocols/rtp/reorder-depth.ts). The SPS samples are real: x264 and x265 as GStreamer runs
// them for the RTSP tests, each depth checked against ffprobe's has_b_frames.
import t, { type Test } from 'tap';
import { DtsFromPts, type TimedFrame } from '../../src/protocols/rtp/dts.ts';
import { leadingNalsOf, reorderDepthOfSps, spsOf } from '../../src/protocols/rtp/reorder-depth.ts';

const hex = (x: string) => Buffer.from(x, 'hex');
/** x264 Main, bframes=2 without pyramid: max_num_reorder_frames 1. */
const X264_B2 = hex('674d4015e98283f602d418181a94000003000400000300ca3c58b4e0');
/** x264 Main, bframes=3 with pyramid: 2. */
const X264_B3_PYRAMID = hex('674d4015eca0a0fd80b5060606a5000003000100000300328f162d96');
/** x264 Constrained Baseline: 0. */
const X264_BASELINE = hex('6742c015da0507ec05a8303035280000030008000003019478b175');
/** x265 Main, bframes=2 without pyramid: sps_max_num_reorder_pics 1. */
const X265_B2 = hex(
  '42010101600000030090000003000003003ca00a080f16591112930bffc00040005a830303020000030002000003003210',
);
/** x265 Main, bframes=3 with pyramid: 2. */
const X265_B3_PYRAMID = hex(
  '42010101600000030090000003000003003ca00a080f16595964932bc05a020000030002000003003210',
);

/** A minimal H.264 SPS without VUI: profile, constraint flags, level 30, then ue fields. */
function craftedSps(profile: number, constraints: number): Buffer {
  const bits: number[] = [];
  const u = (v: number, n: number) => {
    for (let i = n - 1; i >= 0; i--) bits.push((v >> i) & 1);
  };
  const ue = (v: number) => {
    const x = v + 1;
    const n = Math.floor(Math.log2(x));
    u(0, n);
    u(x, n + 1);
  };
  u(profile, 8);
  u(constraints, 8);
  u(30, 8);
  ue(0); // sps id
  if (profile >= 100) {
    ue(1); // 4:2:0
    ue(0);
    ue(0);
    u(0, 1);
    u(0, 1); // no scaling matrix
  }
  ue(0); // log2_max_frame_num_minus4
  ue(0); // poc type 0
  ue(0); // log2_max_poc_lsb_minus4
  ue(1); // max_num_ref_frames
  u(0, 1);
  ue(19); // 320 wide
  ue(14); // 240 high
  u(1, 1); // frame_mbs_only
  u(1, 1); // direct 8x8
  u(0, 1); // no cropping
  u(0, 1); // no VUI
  u(1, 1); // rbsp stop bit
  while (bits.length % 8) bits.push(0);
  const out = Buffer.alloc(1 + bits.length / 8);
  out[0] = 0x67;
  for (let i = 0; i < bits.length; i++) if (bits[i]) out[1 + (i >> 3)]! |= 0x80 >> (i & 7);
  return out;
}

t.test('reorder depth from the SPS', async (t) => {
  t.equal(reorderDepthOfSps('h264', X264_B2), 1, 'x264 bframes=2: VUI max_num_reorder_frames 1');
  t.equal(reorderDepthOfSps('h264', X264_B3_PYRAMID), 2, 'x264 B-pyramid: 2');
  t.equal(reorderDepthOfSps('h264', X264_BASELINE), 0, 'Baseline: 0');
  t.equal(reorderDepthOfSps('hevc', X265_B2), 1, 'x265 bframes=2: sps_max_num_reorder_pics 1');
  t.equal(reorderDepthOfSps('hevc', X265_B3_PYRAMID), 2, 'x265 B-pyramid: 2');
  t.equal(reorderDepthOfSps('h264', craftedSps(77, 0)), undefined, 'Main without VUI: unknown');
  t.equal(reorderDepthOfSps('h264', craftedSps(66, 0x40)), 0, 'Baseline without VUI: 0');
  t.equal(reorderDepthOfSps('h264', craftedSps(100, 0x10)), 0, 'High 10 Intra-style (cs3): 0');
  t.equal(reorderDepthOfSps('h264', craftedSps(100, 0)), undefined, 'High without VUI: unknown');
  t.equal(reorderDepthOfSps('h264', hex('68ce3880')), undefined, 'a PPS is not an SPS');
  t.equal(reorderDepthOfSps('hevc', X264_B2), undefined, 'wrong codec');
  for (let n = 1; n < X264_B2.length; n++) {
    const d = reorderDepthOfSps('h264', X264_B2.subarray(0, n));
    t.ok(d === undefined || (d >= 0 && d <= 16), `truncated to ${n} bytes: ${d}`);
  }
  const au = Buffer.concat([
    hex('00000001'),
    hex('0910'),
    hex('00000001'),
    X264_B2,
    hex('000001'),
    hex('68ee3c80'),
    hex('000001'),
    hex('6588840000'),
  ]);
  const lead = leadingNalsOf('h264', au);
  t.equal(lead.length, 3, 'AUD, SPS, PPS before the slice');
  t.same(spsOf('h264', lead), [X264_B2], 'the SPS found in front of a key frame');
});

const FRAME = 3600;

/** Decode order of `gops` GOPs of `len` frames, `b` B-frames between references; with
 *  `pyramid` three B-frames are decoded middle first (it is a reference). PTS in frames. */
function decodeOrder(gops: number, len: number, b: number, pyramid = false): number[] {
  const out: number[] = [];
  for (let g = 0; g < gops; g++) {
    const s = g * len;
    out.push(s);
    for (let prev = s; prev < s + len - 1; ) {
      const ref = Math.min(prev + b + 1, s + len - 1);
      out.push(ref);
      const bs: number[] = [];
      for (let x = prev + 1; x < ref; x++) bs.push(x);
      if (pyramid && bs.length === 3) out.push(bs[1]!, bs[0]!, bs[2]!);
      else out.push(...bs);
      prev = ref;
    }
  }
  return out;
}

function run(depth: number | undefined, order: number[], base = 900_000): TimedFrame<number>[] {
  const d = new DtsFromPts<number>(90_000);
  if (depth !== undefined) d.setDepth(depth);
  const out: TimedFrame<number>[] = [];
  for (const [i, f] of order.entries()) out.push(...d.push(base + f * FRAME, i));
  out.push(...d.flush());
  return out;
}

function valid(t: Test, out: TimedFrame<number>[], n: number): void {
  t.equal(out.length, n, 'every frame out');
  t.same(
    out.map((o) => o.item),
    [...Array(n).keys()],
    'in decoding order',
  );
  let bad = 0;
  for (let i = 0; i < out.length; i++) {
    if (out[i]!.dts > out[i]!.pts) bad++;
    if (i > 0 && out[i]!.dts <= out[i - 1]!.dts) bad++;
  }
  t.equal(bad, 0, 'DTS ≤ PTS and strictly increasing');
}

t.test(
  'depth 1 (IPBB): the sorted PTS shifted by one frame, first frame extrapolated',
  async (t) => {
    const order = decodeOrder(3, 12, 2);
    t.same(order.slice(0, 7), [0, 3, 1, 2, 6, 4, 5]);
    const out = run(1, order);
    valid(t, out, order.length);
    // Frame k in decoding order is decoded when the k-th frame in presentation order is shown,
    // one frame earlier: DTS = sorted PTS − 1 frame.
    const sorted = [...order].sort((a, b) => a - b);
    t.same(
      out.map((o) => (o.dts - 900_000) / FRAME),
      sorted.map((p) => p - 1),
      'DTS = sorted PTS − 1 frame',
    );
    t.equal(out[0]!.pts - out[0]!.dts, FRAME, 'I: PTS − DTS = the reorder delay');
  },
);

t.test('depth 2 (B-pyramid) and depth 0', async (t) => {
  const order = decodeOrder(3, 16, 3, true);
  t.same(order.slice(0, 5), [0, 4, 2, 1, 3]);
  const out = run(2, order);
  valid(t, out, order.length);
  const sorted = [...order].sort((a, b) => a - b);
  t.same(
    out.map((o) => (o.dts - 900_000) / FRAME),
    sorted.map((p) => p - 2),
    'DTS = sorted PTS − 2 frames',
  );
  const flat = run(0, [0, 1, 2, 3, 4]);
  t.same(
    flat.map((o) => o.dts),
    flat.map((o) => o.pts),
    'no reordering: DTS = PTS',
  );
  const d = new DtsFromPts<number>(90_000);
  d.setDepth(0);
  t.equal(d.push(0, 0).length, 1, 'depth 0 holds nothing');
});

t.test('held frames at the start come out once 2N + 1 are in', async (t) => {
  const d = new DtsFromPts<number>(90_000);
  d.setDepth(2);
  const order = [0, 4, 2, 1, 3, 8];
  const got = order.map((p, i) => d.push(p * FRAME, i).length);
  t.same(got, [0, 0, 0, 0, 5, 1]);
  t.same(d.stats(), { depth: 2, source: 'sps', errors: 0, grown: 0, restarts: 0 });
});

t.test('depth unknown: learnt from the order, the revealing frame counted', async (t) => {
  const order = decodeOrder(4, 12, 2);
  const d = new DtsFromPts<number>(90_000);
  const out: TimedFrame<number>[] = [];
  for (const [i, f] of order.entries()) out.push(...d.push(f * FRAME, i));
  t.equal(out.length, order.length);
  const s = d.stats();
  t.equal(s.source, 'learnt');
  t.equal(s.depth, 1, 'depth 1 learnt');
  t.equal(s.grown, 1);
  t.equal(s.errors, 1, 'one error: the first B-frame');
  t.same(
    out.map((o, i) => (o.stepBack ? i : -1)).filter((i) => i >= 0),
    [2],
    'its DTS steps back, marked',
  );
  t.same(
    out.slice(0, 4).map((o) => o.dts / FRAME),
    [0, 3, 1, 2],
    'I and P out at DTS = PTS before the B-frame shows the depth',
  );
  // From the first B-frame on, every frame is right.
  const tail = out.slice(2);
  let bad = 0;
  for (let i = 0; i < tail.length; i++) {
    if (tail[i]!.dts > tail[i]!.pts || (i > 0 && tail[i]!.dts <= tail[i - 1]!.dts)) bad++;
  }
  t.equal(bad, 0, 'valid after the depth is learnt');
  const learntP = out[13]!; // frame 15, the P after the GOP's I at 12
  t.equal(learntP.item, 13);
  t.equal(learntP.pts - learntP.dts, 3 * FRAME, 'P after two B: PTS − DTS = 3 frames');
});

t.test('an SPS raising the depth mid-stream, and a jump of the times', async (t) => {
  const d = new DtsFromPts<number>(90_000);
  d.setDepth(1);
  d.setDepth(0);
  t.equal(d.stats().depth, 1, 'a smaller SPS depth does not lower it');
  const out: TimedFrame<number>[] = [];
  const order = decodeOrder(2, 12, 2);
  for (const [i, f] of order.entries()) out.push(...d.push(f * FRAME, i));
  // The source restarts its clock 1 h back.
  for (const [i, f] of order.entries()) out.push(...d.push(f * FRAME - 3600 * 90_000, 100 + i));
  out.push(...d.flush());
  t.equal(d.stats().restarts, 1, 'started over at the jump');
  t.equal(d.stats().errors, 0);
  t.equal(out.length, 2 * order.length);
  const second = out.slice(order.length);
  t.ok(
    second.every((o, i) => o.dts <= o.pts && (i === 0 || o.dts > second[i - 1]!.dts)),
    'valid on the new timeline',
  );
});

t.test('a new SPS declaring a larger depth mid-stream: one step back, then right', async (t) => {
  const d = new DtsFromPts<number>(90_000);
  d.setDepth(0);
  const out: TimedFrame<number>[] = [];
  const flat = [0, 1, 2, 3, 4, 5];
  for (const [i, f] of flat.entries()) out.push(...d.push(f * FRAME, i));
  d.setDepth(1);
  const order = [6, 9, 7, 8, 12, 10, 11];
  for (const [i, f] of order.entries()) out.push(...d.push(f * FRAME, 10 + i));
  t.same(d.stats(), { depth: 1, source: 'sps', errors: 1, grown: 1, restarts: 0 });
  t.equal(out.filter((o) => o.stepBack).length, 1, 'one step back, marked');
  const tail = out.slice(out.findIndex((o) => o.stepBack));
  t.ok(
    tail.every((o, i) => o.dts <= o.pts && (i === 0 || o.dts > tail[i - 1]!.dts)),
    'valid from there',
  );
});

t.test('flush before a DTS is known', async (t) => {
  const d = new DtsFromPts<string>(90_000);
  d.setDepth(2);
  d.push(1000, 'a');
  d.push(5000, 'b');
  const out = d.flush();
  t.same(
    out.map((o) => o.item),
    ['a', 'b'],
  );
  t.ok(out[0]!.dts < out[1]!.dts && out.every((o) => o.dts <= o.pts));
});
