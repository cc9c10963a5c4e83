// Audio frames straddling PES boundaries (muxers that cut PES by size): AAC (ADTS), AC-3 and
// MPEG-1 Layer II elementary streams made by ffmpeg are carried in PES of awkward sizes (some
// without a timestamp, holding only the middle of a frame) in a crafted TS; the segmenter must
// give back every frame whole, in order, with the timestamps of the original frames, and the
// CMAF output of the AAC case must decode in ffmpeg with the same frame count.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import t from 'tap';
import {
  type ParsedAudio,
  parseAc3,
  parseAdts,
  parseMpegAudio,
} from '../../src/ott/codec/audio.ts';
import { readSettings } from '../../src/ott/options.ts';
import { Packager } from '../../src/ott/packager.ts';
import { Segmenter } from '../../src/ott/segmenter.ts';
import type { AccessUnit } from '../../src/ott/tracks.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { tempDir } from '../helpers/ott.ts';
import { packet, pat, pmt, psiPackets, putPts } from '../helpers/ts-craft.ts';

const run = promisify(execFile);
const AUDIO_PID = 0x101;
const PMT_PID = 0x100;
/** PES payload sizes, cycled: none is a multiple of any frame size. */
const PES_SIZES = [500, 1711, 97, 2600, 333, 1200];
const BASE_PTS = 900_000;
const SECONDS = 3;

const CODECS = [
  { name: 'AAC (ADTS)', encoder: 'aac', format: 'adts', type: 0x0f, parse: parseAdts },
  { name: 'AC-3', encoder: 'ac3', format: 'ac3', type: 0x81, parse: parseAc3 },
  { name: 'MPEG-1 Layer II', encoder: 'mp2', format: 'mp2', type: 0x03, parse: parseMpegAudio },
] as const;

function pesHeader(pts: number | undefined, payload: number): Buffer {
  const optional = pts === undefined ? 0 : 5;
  const h = Buffer.alloc(9 + optional);
  h.set([0, 0, 1, 0xc0]);
  h.writeUInt16BE(3 + optional + payload, 4);
  h[6] = 0x80;
  h[7] = pts === undefined ? 0 : 0x80;
  h[8] = optional;
  if (pts !== undefined) {
    putPts(h, 9, pts);
  }
  return h;
}

/** The ES cut into PES of PES_SIZES; each PES has the PTS of the first frame starting in it,
 *  or none when no frame starts in it. */
function mux(es: Buffer, ref: ParsedAudio, rate: number, type: number): Buffer {
  const cc = { n: 0 };
  const out: Buffer[] = [
    ...psiPackets(0, [pat([{ pnr: 1, pid: PMT_PID }])]),
    ...psiPackets(PMT_PID, [pmt(1, AUDIO_PID, [{ type, pid: AUDIO_PID, lang: 'eng' }])]),
  ];
  let at = 0;
  let time = 0;
  let frame = 0;
  for (let i = 0; at < es.length; i++) {
    const size = Math.min(PES_SIZES[i % PES_SIZES.length]!, es.length - at);
    while (frame < ref.frames.length && ref.frames[frame]!.offset < at) {
      time += ref.frames[frame]!.samples;
      frame++;
    }
    const starts = frame < ref.frames.length && ref.frames[frame]!.offset < at + size;
    const pts = starts ? BASE_PTS + Math.round((time * 90000) / rate) : undefined;
    const pes = Buffer.concat([pesHeader(pts, size), es.subarray(at, at + size)]);
    for (let o = 0; o < pes.length; o += 184) {
      const payload = pes.subarray(o, o + 184);
      out.push(
        packet({
          pid: AUDIO_PID,
          cc: cc.n++ & 15,
          pusi: o === 0,
          payload,
          adaptation: payload.length < 184,
        }),
      );
    }
    at += size;
  }
  return Buffer.concat(out);
}

for (const c of CODECS) {
  t.test(`${c.name} frames split across PES are joined`, async (t) => {
    const tmp = tempDir();
    t.teardown(tmp.remove);
    const file = `${tmp.dir}/a.${c.format}`;
    await run('ffmpeg', [
      ...[
        '-v',
        'error',
        '-f',
        'lavfi',
        '-i',
        `sine=frequency=440:sample_rate=48000:duration=${SECONDS}`,
      ],
      ...['-c:a', c.encoder, '-b:a', '192k', '-f', c.format, file],
    ]);
    const es = await readFile(file);
    const ref = c.parse(es);
    const rate = ref.params!.sampleRate;
    t.ok(ref.frames.length > 50, `${ref.frames.length} reference frames`);
    const ts = mux(es, ref, rate, c.type);

    const seg = new Segmenter({ targetDuration: 1, now: () => 0 });
    const got: AccessUnit[] = [];
    seg.addSink({ accessUnit: (_t, au) => got.push(au), boundary: () => {}, splice: () => {} });
    seg.push(ts);
    seg.flush();
    t.equal(got.length, ref.frames.length, 'every frame, none lost at a PES boundary');
    let time = 0;
    let same = 0;
    let timed = 0;
    got.forEach((au, i) => {
      const want = ref.frames[i]!;
      if (au.sample.equals(want.data)) same++;
      if (Math.abs(au.pts - (BASE_PTS + (time * 90000) / rate)) < 2) timed++;
      time += want.samples;
    });
    t.equal(same, ref.frames.length, 'every frame byte-identical to the source frame');
    t.equal(timed, ref.frames.length, 'every frame at its source time');
  });
}

t.test('CMAF of AAC carried in split PES decodes whole in ffmpeg', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const file = `${tmp.dir}/a.adts`;
  await run('ffmpeg', [
    ...[
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      `sine=frequency=440:sample_rate=48000:duration=${SECONDS}`,
    ],
    ...['-c:a', 'aac', '-f', 'adts', file],
  ]);
  const es = await readFile(file);
  const ref = parseAdts(es);
  const p = new Packager(
    readSettings({ 'ott-hls': 2, 'ott-segment-duration': 1 }),
    new ManualClock(),
  );
  p.packets(mux(es, ref, 48000, 0x0f));
  p.end();
  const r = p.renditions[0]!;
  const segs = r.store.all();
  t.ok(segs.length >= 2, `${segs.length} segments`);
  const mp4 = `${tmp.dir}/a.mp4`;
  await writeFile(mp4, Buffer.concat([r.store.init!, ...segs.map((s) => r.store.get(s.uri)!)]));
  const { stdout, stderr } = await run('ffprobe', [
    ...['-v', 'error', '-count_frames', '-select_streams', 'a'],
    ...['-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', mp4],
  ]);
  t.equal(stderr.trim(), '', 'no decoder error');
  const frames = segs.reduce((n, s) => n + Math.round((s.duration * 48000) / 1024), 0);
  t.equal(Number(stdout.trim()), frames, `${frames} frames decoded from the segments made`);
});
