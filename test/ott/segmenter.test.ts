// Segmenter behaviour on real encoder output: cuts only at keyframes once the target is
// reached, marks a bus discontinuity and a timestamp jump, and CMAF fragments carry correct
// sizes, offsets and timing.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import t from 'tap';
import { fragment } from '../../src/ott/cmaf/fragment.ts';
import { readSettings } from '../../src/ott/options.ts';
import { Packager } from '../../src/ott/packager.ts';
import { Segmenter } from '../../src/ott/segmenter.ts';
import { SegmentStore } from '../../src/ott/store.ts';
import { TsSegmentWriter } from '../../src/ott/ts-writer.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { makeTestStream, tempDir } from '../helpers/ott.ts';

async function stream(seconds: number, offset?: number): Promise<Buffer> {
  const tmp = tempDir();
  try {
    return await makeTestStream(`${tmp.dir}/s.ts`, { seconds, gop: 25, bframes: true, offset });
  } finally {
    tmp.remove();
  }
}

function setup(target: number) {
  const seg = new Segmenter({ targetDuration: target, now: () => 0 });
  const store = new SegmentStore({ window: 100, grace: 0 });
  seg.addSink(new TsSegmentWriter(seg, store));
  return { seg, store };
}

t.test('cuts at keyframes after the target duration', async (t) => {
  const { seg, store } = setup(1.5);
  seg.push(await stream(8));
  const durations = store.all().map((s) => s.duration);
  t.same(durations.slice(0, 3), [2, 2, 2], '1.5 s target with a 1 s GOP gives 2 s segments');
  for (const s of store.all()) {
    const data = store.get(s.uri)!;
    t.equal(data.length % 188, 0);
    t.equal(data[0], 0x47);
    t.equal(((data[1]! & 0x1f) << 8) | data[2]!, 0, 'starts with the PAT');
  }
  t.same(
    store.all().map((s) => s.seq),
    [0, 1, 2],
  );
});

t.test('a bus discontinuity and a PTS jump both start a marked segment', async (t) => {
  const { seg, store } = setup(1);
  const a = await stream(3);
  const b = await stream(3, 500);
  seg.push(a);
  seg.discontinuity();
  seg.push(a); // same timestamps again after an announced splice
  seg.push(b); // unannounced jump of 500 s
  seg.flush();
  const marked = store.all().filter((s) => s.discontinuity);
  t.equal(marked.length, 2, 'two splices');
  t.same(
    marked.map((s) => s.discSeq),
    [1, 2],
  );
  for (const s of store.all())
    t.ok(s.duration > 0.5 && s.duration <= 1.01, `segment ${s.seq}: ${s.duration} s`);
});

t.test('fragment layout: trun data offset points into mdat', async (t) => {
  const samples = [
    { data: Buffer.from('abcd'), duration: 3600, cto: 7200, sync: true },
    { data: Buffer.from('efghij'), duration: 3600, cto: -3600, sync: false },
  ];
  const f = fragment(5, samples, 2 ** 33 + 10);
  const moofSize = f.readUInt32BE(0);
  t.equal(f.toString('latin1', 4, 8), 'moof');
  t.equal(f.toString('latin1', moofSize + 4, moofSize + 8), 'mdat');
  const trun = f.indexOf('trun');
  const dataOffset = f.readInt32BE(trun + 12);
  t.equal(dataOffset, moofSize + 8, 'data offset = moof size + mdat header');
  t.equal(f.toString('latin1', dataOffset, dataOffset + 10), 'abcdefghij');
  const tfdt = f.indexOf('tfdt');
  t.equal(f.readBigUInt64BE(tfdt + 8), BigInt(2 ** 33 + 10), '64-bit tfdt');
  t.equal(f.readInt32BE(trun + 16 + 16 + 12), -3600, 'signed composition offset');
});

/** One AAC frame at 48 kHz: the slack of an audio end. */
const AUDIO_FRAME_S = 1024 / 48000;

t.test('at a splice every CMAF track keeps the master segment numbers and end time', async (t) => {
  const { Packager } = await import('../../src/ott/packager.ts');
  const { readSettings } = await import('../../src/ott/options.ts');
  const { ManualClock } = await import('../../src/util/clock.ts');
  const a = await stream(4);
  const b = await stream(3, 500);
  // Cut the first input at many points around a segment boundary: wherever the encoder's
  // audio lags its video, the audio track must still close with the same numbers and end.
  const settings = readSettings({ 'ott-hls': 2, 'ott-segment-duration': 1, 'ott-window': 50 });
  let checked = 0;
  for (let cut = 188 * 700; cut < a.length - 188 * 400; cut += 188 * 41) {
    const p = new Packager(settings, new ManualClock());
    p.packets(a.subarray(0, cut));
    p.discontinuity();
    p.packets(b);
    p.end();
    const [video, audio] = p.renditions;
    const before = (r: typeof video) => r!.store.all().filter((s) => s.discSeq === 0);
    const vs = before(video);
    const as = before(audio);
    t.same(
      as.map((s) => s.seq),
      vs.map((s) => s.seq),
      `cut at ${cut}: audio has the video's segment numbers`,
    );
    const end = (segs: typeof vs) => {
      const l = segs[segs.length - 1]!;
      return l.start / l.timescale + l.duration;
    };
    // Audio ending early leaves a hole players stall on; ending late (frames already
    // published as parts) only overlaps the next run, which replaces it in the buffer.
    t.ok(
      end(as) >= end(vs) - AUDIO_FRAME_S && end(as) <= end(vs) + settings.partDuration,
      `cut at ${cut}: audio ends at ${end(as).toFixed(3)}, video at ${end(vs).toFixed(3)}`,
    );
    checked++;
  }
  t.ok(checked > 10, `${checked} cut points`);
});

t.test('segment wall clocks follow media time, not arrival jitter', async (t) => {
  // Arrival times wobble by up to 3 s (a stalled encoder); the wall clocks must still step by
  // exactly the segment durations, or PROGRAM-DATE-TIME and the archive would show false gaps.
  const jitter = [0, 2500, -800, 3000, 100, 1200, -300, 2900];
  let call = 0;
  const base = Date.UTC(2026, 0, 1);
  const seg = new Segmenter({
    targetDuration: 1,
    now: () => base + call * 1000 + jitter[call++ % jitter.length]!,
  });
  const store = new SegmentStore({ window: 100, grace: 0 });
  seg.addSink(new TsSegmentWriter(seg, store));
  seg.push(await stream(6));
  seg.flush();
  const all = store.all();
  t.ok(all.length >= 4, `${all.length} segments`);
  for (let i = 1; i < all.length; i++) {
    const prev = all[i - 1]!;
    t.equal(all[i]!.wallclock - prev.wallclock, Math.round(prev.duration * 1000), `segment ${i}`);
  }
});

t.test('the wall clock re-anchors at a splice and after a large drift', async (t) => {
  let now = Date.UTC(2026, 0, 1);
  const seg = new Segmenter({ targetDuration: 1, now: () => now });
  const store = new SegmentStore({ window: 100, grace: 0 });
  seg.addSink(new TsSegmentWriter(seg, store));
  const a = await stream(3);
  seg.push(a);
  now += 60_000; // the source was away for a minute, then comes back after a splice
  seg.discontinuity();
  seg.push(a);
  seg.flush();
  const first = store.all().find((s) => s.discontinuity)!;
  t.equal(first.wallclock, now, 'the first segment after the splice takes the arrival time');
});

/** Segments of `ts` (hash and duration) from the TS writer alone or beside CMAF samples. */
function cutter(ts: Buffer) {
  return (samples: boolean) => {
    const seg = new Segmenter({ targetDuration: 1.5, now: () => 0, samples });
    const store = new SegmentStore({ window: 100, grace: 0 });
    seg.addSink(new TsSegmentWriter(seg, store));
    // Odd batch sizes: boundaries fall inside a batch and PES straddle batches.
    for (let o = 0; o < ts.length; o += 188 * 37) seg.push(ts.subarray(o, o + 188 * 37));
    seg.flush();
    return store
      .all()
      .map(
        (s) =>
          `${createHash('sha1').update(store.get(s.uri)!).digest('hex')} ${s.duration.toFixed(3)}`,
      );
  };
}

t.test('HLS-TS alone (video PES heads only) cuts the same segments as with CMAF', async (t) => {
  const ts = await stream(8);
  const cut = cutter(ts);
  const light = cut(false);
  t.ok(light.length >= 3, `${light.length} segments`);
  t.same(light, cut(true), 'same bytes and durations');
  const video = new Segmenter({ targetDuration: 1.5, now: () => 0, samples: false });
  video.push(ts);
  const track = [...video.tracks.values()].find((x) => x.type === 'video');
  t.equal(track?.video?.width, 320, 'parameter sets still read from the PES heads');
  t.ok((track?.bitrate ?? 0) > 100_000, `bit rate counts whole PES: ${track?.bitrate}`);
});

t.test('segment names are unique across runs of the same input', async (t) => {
  const ts = await stream(4);
  const names = () => {
    const seg = new Segmenter({ targetDuration: 1, now: () => 0 });
    const store = new SegmentStore({ window: 100, grace: 0 });
    seg.addSink(new TsSegmentWriter(seg, store));
    seg.push(ts);
    seg.flush();
    return store.all().map((s) => s.uri);
  };
  const a = names();
  const b = names();
  t.ok(a.length >= 3);
  t.equal(new Set(a).size, a.length, 'unique within a run');
  t.notOk(
    a.some((n) => b.includes(n)),
    'a restarted writer never reuses a name (the archive keeps both runs)',
  );
});

// The head of a video PES ends just past its picture's start code: HEVC and MPEG-2 video (other
// start codes, other picture starts) must cut where the whole PES would.
for (const c of [
  {
    name: 'HEVC',
    args: ['-c:v', 'libx265', '-preset', 'ultrafast', '-x265-params', 'log-level=error'],
  },
  { name: 'MPEG-2 video', args: ['-c:v', 'mpeg2video', '-b:v', '2M'] },
]) {
  t.test(`${c.name}: HLS-TS alone cuts the same segments as with samples`, async (t) => {
    const tmp = tempDir();
    t.teardown(tmp.remove);
    const file = `${tmp.dir}/${c.name.replace(/\W/g, '')}.ts`;
    await promisify(execFile)('ffmpeg', [
      ...['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25:duration=8'],
      ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=8'],
      ...c.args,
      ...['-g', '25', '-bf', '2', '-c:a', 'mp2', '-f', 'mpegts', file],
    ]);
    const cut = cutter(await readFile(file));
    const light = cut(false);
    t.ok(light.length >= 3, `${light.length} segments`);
    t.same(light, cut(true), 'same bytes and durations');
  });
}

/** The samples of a run of CMAF fragments (moof + mdat …), in order, from each trun's sizes. */
function fragmentSamples(seg: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let sizes: number[] = [];
  for (let o = 0; o + 8 <= seg.length; o += seg.readUInt32BE(o)) {
    const type = seg.toString('latin1', o + 4, o + 8);
    if (type === 'moof') {
      const trun = seg.indexOf('trun', o) - 4;
      const count = seg.readUInt32BE(trun + 12);
      sizes = [];
      for (let k = 0; k < count; k++) sizes.push(seg.readUInt32BE(trun + 20 + k * 16 + 4));
    } else if (type === 'mdat') {
      let at = o + 8;
      for (const n of sizes) {
        out.push(seg.subarray(at, at + n));
        at += n;
      }
    }
  }
  return out;
}

// The demuxer gathers every media PES in one reused buffer per PID and access units lend their
// samples for the call only: the CMAF writer must copy what waits for its part. Every sample
// written must hold the bytes its access unit had during its call.
t.test('CMAF samples hold the bytes their access units lent them', async (t) => {
  const ts = await stream(6);
  const p = new Packager(
    readSettings({ 'ott-hls': 3, 'ott-segment-duration': 1, 'ott-window': 100 }),
    new ManualClock(),
  );
  const lent = new Map<number, Buffer[]>();
  p.segmenter.addSink({
    boundary: () => {},
    splice: () => {},
    accessUnit: (track, au) => {
      const l = lent.get(track.pid) ?? [];
      l.push(Buffer.from(au.sample));
      lent.set(track.pid, l);
    },
  });
  // Odd batches: PES end anywhere in a push.
  const batch = 188 * 13;
  for (let o = 0; o < ts.length; o += batch) p.packets(ts.subarray(o, o + batch));
  p.end();
  t.ok(p.renditions.length >= 2, 'video and audio renditions');
  for (const r of p.renditions) {
    const written = r.store.all().flatMap((s) => fragmentSamples(r.store.get(s.uri)!));
    const sent = lent.get(r.track.pid)!;
    const first = sent.findIndex((x) => x.equals(written[0]!));
    t.ok(written.length > 20, `${r.track.type}: ${written.length} samples written`);
    t.ok(first >= 0, `${r.track.type}: the first written sample was lent`);
    const bad = written.filter((w, k) => !w.equals(sent[first + k]!)).length;
    t.equal(bad, 0, `${r.track.type}: every written sample as lent`);
  }
});

t.test('input with no key frame cannot grow an open segment without bound', async (t) => {
  const seg = new Segmenter({ targetDuration: 1, now: () => 0 });
  const store = new SegmentStore({ window: 100, grace: 0 });
  const writer = new TsSegmentWriter(seg, store);
  seg.addSink(writer);
  seg.push(await stream(3)); // a valid start: segments open
  const before = store.all().length;
  // Then 64 MB of junk on a PID no programme lists, in receive-sized batches: no key frame,
  // so no boundary, ever.
  const junk = Buffer.alloc(188 * 7 * 64, 0xff);
  for (let o = 0; o < junk.length; o += 188) {
    junk[o] = 0x47;
    junk[o + 1] = 0x07;
    junk[o + 2] = 0x77;
    junk[o + 3] = 0x10;
  }
  for (let n = 0; n < (64 << 20) / junk.length; n++) seg.push(junk);
  // One early close; after it the writer is back to its pre-roll, itself bounded (16 MB).
  t.equal(writer.oversizeCuts, 1, 'the open segment was closed early');
  const sizes = store.all().map((s) => s.size);
  t.ok(store.all().length > before, 'the oversize segment was stored, not lost');
  t.ok(Math.max(...sizes) <= 16 * 1024 * 1024, 'no segment past the bound (16 MB at 1 s)');
  const cut = store.all().length;
  seg.push(await stream(3)); // key frames again
  const next = store.all()[cut];
  t.ok(next?.discontinuity, 'the first segment after an early close is marked discontinuous');
});
