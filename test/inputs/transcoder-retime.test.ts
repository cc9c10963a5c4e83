// The transcoder's retimer (src/inputs/transcoder/retime.ts) on crafted packets: a regular
// stream passes unchanged, a jump back (a loop) is taken out with the video one frame after its
// previous picture and audio and PCR moved by the same offset, a jump forward likewise, audio
// arriving first is corrected by the video, a PTS wrap and sparse subtitles are not jumps.
import t from 'tap';
import type { BusSink, StreamBus } from '../../src/engine/bus.ts';
import { JUMP_TICKS, Retimer, subscribeRetimed } from '../../src/inputs/transcoder/retime.ts';
import { readPcr } from '../../src/mpegts/pcr.ts';
import { readTimestamp } from '../../src/mpegts/pes.ts';
import { packet } from '../helpers/ts-craft.ts';

const VIDEO = 0x100;
const AUDIO = 0x101;
const SUBS = 0x102;
const FRAME = 3600; // 25 frames/s
const WRAP = 2 ** 33;

/** The 5-byte PES timestamp field with its 4-bit prefix (arithmetic safe up to 2^33). */
function ts(prefix: number, v: number): number[] {
  return [
    (prefix << 4) | (Math.floor(v / 2 ** 30) << 1) | 1,
    Math.floor(v / 2 ** 22) & 0xff,
    ((Math.floor(v / 2 ** 15) & 0x7f) << 1) | 1,
    Math.floor(v / 2 ** 7) & 0xff,
    ((v % 128) << 1) | 1,
  ];
}

/** A PES start: stream_id, PTS and (when given) DTS; `pcr` (90 kHz) in its adaptation field. */
function pes(pid: number, streamId: number, pts: number, dts?: number, pcr?: number): Buffer {
  const head =
    dts === undefined
      ? [0, 0, 1, streamId, 0, 0, 0x80, 0x80, 5, ...ts(2, pts)]
      : [0, 0, 1, streamId, 0, 0, 0x80, 0xc0, 10, ...ts(3, pts), ...ts(1, dts)];
  return packet({
    pid,
    pusi: true,
    payload: Buffer.from([...head, 0xaa, 0xbb]),
    ...(pcr === undefined ? {} : { pcr: pcr * 300 }),
  });
}

const video = (dts: number) => pes(VIDEO, 0xe0, (dts + 2 * FRAME) % WRAP, dts, dts);
const audio = (pts: number) => pes(AUDIO, 0xc0, pts);

interface Seen {
  pid: number;
  pts: number;
  dts: number;
  pcr: number;
}

function read(b: Buffer): Seen {
  const pid = ((b[1]! & 0x1f) << 8) | b[2]!;
  const pcr = readPcr(b, 0);
  const p = (b[3]! & 0x20) !== 0 ? 5 + b[4]! : 4;
  const pts = readTimestamp(b, p + 9);
  const dts = b[p + 7] === 0xc0 ? readTimestamp(b, p + 14) : pts;
  return { pid, pts, dts, pcr: pcr < 0 ? -1 : pcr / 300 };
}

function through(r: Retimer, packets: Buffer[]): Seen[] {
  const all = Buffer.concat(packets);
  r.packets(all);
  const out: Seen[] = [];
  for (let o = 0; o < all.length; o += 188) out.push(read(all.subarray(o, o + 188)));
  return out;
}

/** A pass of a 4.2 s file: 105 frames from `start`, an audio PES after each picture. */
function pass(start: number, frames = 105): Buffer[] {
  const list: Buffer[] = [];
  for (let i = 0; i < frames; i++) {
    list.push(video(start + i * FRAME));
    list.push(audio(start + i * FRAME + 1000));
  }
  return list;
}

t.test('a regular stream passes unchanged', async (t) => {
  const r = new Retimer();
  const input = Buffer.concat(pass(126_000));
  const copy = Buffer.from(input);
  r.packets(copy);
  t.ok(copy.equals(input), 'bytes unchanged');
  t.equal(r.jumps, 0);
});

t.test('a loop is taken out: the video runs on a frame apart, audio and PCR follow', async (t) => {
  const r = new Retimer();
  const start = 126_000;
  const out = through(r, [...pass(start), ...pass(start), ...pass(start)]);
  t.equal(r.jumps, 2, 'two jumps');
  const v = out.filter((s) => s.pid === VIDEO);
  t.same(
    v.map((s) => s.dts),
    v.map((_, i) => start + i * FRAME),
    'video DTS continuous',
  );
  t.ok(
    v.every((s) => s.pts === s.dts + 2 * FRAME && s.pcr === s.dts),
    'PTS and PCR moved with the DTS',
  );
  const a = out.filter((s) => s.pid === AUDIO);
  t.ok(
    a.every((s, i) => s.pts === v[i]!.dts + 1000),
    'audio keeps its place beside the video',
  );
});

t.test('a jump forward (a failover to a later timeline) is taken out too', async (t) => {
  const r = new Retimer();
  const out = through(r, [...pass(126_000, 50), ...pass(126_000 + 100 * 90_000, 50)]);
  t.equal(r.jumps, 1);
  const v = out.filter((s) => s.pid === VIDEO);
  t.same(
    v.map((s) => s.dts),
    v.map((_, i) => 126_000 + i * FRAME),
    'video DTS continuous',
  );
});

t.test('audio first after the jump: the video sets the offset exactly', async (t) => {
  const r = new Retimer();
  const start = 900_000;
  const first = pass(start, 50);
  // The next pass starts with an audio PES 0.3 frame before its first picture.
  const second = [audio(start - 1080), ...pass(start, 50)];
  const out = through(r, [...first, ...second]);
  const v = out.filter((s) => s.pid === VIDEO);
  t.same(
    v.map((s) => s.dts),
    v.map((_, i) => start + i * FRAME),
    'video DTS continuous',
  );
  const a = out.filter((s) => s.pid === AUDIO);
  t.equal(a.at(-1)!.pts, v.at(-1)!.dts + 1000, 'audio beside the video after the jump');
});

t.test('a PTS wrap is not a jump', async (t) => {
  const r = new Retimer();
  const start = WRAP - 20 * FRAME;
  const input = Buffer.concat(pass(start, 40).map((b) => b));
  const copy = Buffer.from(input);
  r.packets(copy);
  t.equal(r.jumps, 0);
  t.ok(copy.equals(input), 'bytes unchanged');
});

t.test('sparse subtitles are not jumps; a subtitle going back is', async (t) => {
  const r = new Retimer();
  const sub = (pts: number) => pes(SUBS, 0xbd, pts);
  const seen = through(r, [sub(90_000), sub(90_000 + 10 * 90_000), sub(90_000 + 12 * 90_000)]);
  t.equal(r.jumps, 0, 'gaps of 10 s and 2 s forward are no jump');
  t.same(
    seen.map((s) => s.pts),
    [90_000, 990_000, 1_170_000],
  );
  through(r, [sub(1_170_000 - JUMP_TICKS - 1)]);
  t.equal(r.jumps, 1, 'back more than JUMP_TICKS is a jump');
});

t.test(
  'the feed reuses its block while no reader kept it, and never overwrites a kept one',
  async (t) => {
    let bus: BusSink | null = null;
    const fake = {
      subscribe: (s: BusSink) => {
        bus = s;
        return () => {
          bus = null;
        };
      },
    } as unknown as StreamBus;
    const seen: Buffer[] = [];
    let keep = false;
    const off = subscribeRetimed(fake, {
      packets: (b) => {
        seen.push(b);
        return keep;
      },
    });
    const batch = (n: number) => Buffer.concat([audio(n * FRAME), audio((n + 1) * FRAME)]);
    bus!.packets(batch(0));
    bus!.packets(batch(2));
    t.equal(seen[1]!.buffer, seen[0]!.buffer, 'taken at once: the same block again');
    keep = true; // this one stays queued (a pipe that did not take it all)
    bus!.packets(batch(4));
    const kept = Buffer.from(seen[2]!);
    keep = false;
    bus!.packets(batch(6));
    t.not(seen[3]!.buffer, seen[2]!.buffer, 'the next batch goes into a new block');
    t.same(seen[2], kept, 'the kept batch is left as it was');
    t.same(read(seen[3]!), read(batch(6)), 'and the new one carries its own packets');
    off();
    t.equal(bus, null, 'the last reader gone: the feed leaves the bus');
  },
);
