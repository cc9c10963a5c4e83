// DASH segment times against the fragments served: a long recording (hundreds of segments)
// through the real packager into a storage, then every segment of the static archive MPD and
// of the live MPD is fetched and its `tfdt` compared with the start the MPD gives it, for
// video and audio. Audio segments alternate by one AAC frame (1024 samples do not divide the
// segment length), so an MPD with one nominal duration drifts from them segment by segment.
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { ArchivedOttService } from '../../src/dvr/attach.ts';
import { silentLogger } from '../../src/log.ts';
import { timeline } from '../../src/ott/dash.ts';
import { createOttService } from '../../src/ott/index.ts';
import type { SegmentDescriptor } from '../../src/ott/store.ts';
import type { ManualClock } from '../../src/util/clock.ts';
import { makeTestStream, startOttServer, TinyBus } from '../helpers/ott.ts';
import { hookHost, recordingHost, tempDir } from './helpers.ts';

const PIECES_PER_SECOND = 4;
/** Short segments on short GOPs: hundreds of segments from two minutes of stream. */
const SEGMENT_S = 0.4;
const GOP_FRAMES = 10;
const STREAM_S = 120;
const MIN_SEGMENTS = 250;

/** Feed the stream in pieces; the recorder settles after each, so none of its chunks is
 *  dropped for a backlog (the archive must be one contiguous run). */
async function feed(bus: TinyBus, clock: ManualClock, data: Buffer, seconds: number, rec: Settle) {
  const size = Math.ceil(data.length / (seconds * PIECES_PER_SECOND) / 188) * 188;
  for (let o = 0; o < data.length; o += size) {
    bus.push(data.subarray(o, o + size));
    clock.advance(1000 / PIECES_PER_SECOND);
    await rec.settle();
  }
}

interface Settle {
  settle(): Promise<void>;
}

/** Base media decode time of the first `tfdt` box of a segment. */
function tfdt(seg: Buffer): number {
  const at = seg.indexOf('tfdt');
  if (at < 0) throw new Error('no tfdt in segment');
  return seg[at + 4] === 1 ? Number(seg.readBigUInt64BE(at + 8)) : seg.readUInt32BE(at + 8);
}

const attr = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1];

interface Described {
  rep: string;
  contentType: string;
  /** MPD start of each segment in the track timescale, and its URL (relative to the MPD). */
  segments: { t: number; url: string }[];
}

/**
 * Segment starts as the MPD gives them, per Representation: from a SegmentTimeline (`@t`,
 * `@d`, `@r`) when there is one, else `presentationTimeOffset + i × @duration`.
 */
function describe(mpd: string): Described[] {
  const out: Described[] = [];
  for (const set of mpd.matchAll(/<AdaptationSet [^>]*>[\s\S]*?<\/AdaptationSet>/g)) {
    const contentType = attr(set[0], 'contentType') ?? '';
    for (const rep of set[0].matchAll(/<Representation [^>]*>[\s\S]*?<\/Representation>/g)) {
      const text = rep[0];
      const id = attr(text, 'id')!;
      const seg = /<Segment(List|Template) [^>]*>/.exec(text)!;
      const pto = Number(attr(seg[0], 'presentationTimeOffset') ?? 0);
      const starts: number[] = [];
      const timelineXml = /<SegmentTimeline>([\s\S]*?)<\/SegmentTimeline>/.exec(text)?.[1];
      if (timelineXml !== undefined) {
        let at = 0;
        for (const s of timelineXml.matchAll(/<S [^>]*\/>/g)) {
          const st = attr(s[0], 't');
          if (st !== undefined) at = Number(st);
          const d = Number(attr(s[0], 'd'));
          for (let i = 0; i <= Number(attr(s[0], 'r') ?? 0); i++) {
            starts.push(at);
            at += d;
          }
        }
      }
      let urls: string[];
      if (seg[1] === 'List') {
        urls = [...text.matchAll(/<SegmentURL media="([^"]+)"/g)].map((m) => m[1]!);
        const d = Number(attr(seg[0], 'duration') ?? 0);
        if (timelineXml === undefined)
          for (let i = 0; i < urls.length; i++) starts.push(pto + i * d);
      } else {
        const media = attr(seg[0], 'media')!;
        const first = Number(attr(seg[0], 'startNumber') ?? 1);
        urls = starts.map((_, i) => media.replace('$Number$', String(first + i)));
      }
      out.push({
        rep: id,
        contentType,
        segments: urls.map((url, i) => ({ t: starts[i] ?? Number.NaN, url })),
      });
    }
  }
  return out;
}

/** Fetch every described segment and compare its tfdt with the MPD start. */
async function compare(t: Test, base: string, reps: Described[], label: string): Promise<void> {
  for (const type of ['video', 'audio']) {
    const rep = reps.find((r) => r.contentType === type);
    t.ok(rep, `${label}: a ${type} Representation`);
    if (!rep) continue;
    let worst = 0;
    let firstOff = -1;
    for (const [i, s] of rep.segments.entries()) {
      const res = await fetch(`${base}/s/${s.url}`);
      if (res.status !== 200) throw new Error(`${label} ${s.url}: ${res.status}`);
      const off = tfdt(Buffer.from(await res.arrayBuffer())) - s.t;
      if (off !== 0 && firstOff < 0) firstOff = i;
      if (!(Math.abs(off) <= Math.abs(worst))) worst = off;
    }
    t.equal(
      worst,
      0,
      `${label} ${type}: MPD start = tfdt for all ${rep.segments.length} segments` +
        (firstOff >= 0 ? ` (first off at segment ${firstOff}, worst ${worst} ticks)` : ''),
    );
  }
}

t.test('every DASH segment starts in the MPD at its tfdt (archive and live)', async (t) => {
  const dir = tempDir(t);
  const { clock, storage, host } = await recordingHost(t, dir);
  const spec = {
    'stream-name': 's',
    'ott-hls': 2,
    'ott-segment-duration': SEGMENT_S,
    'dvr-storage': 1,
  };
  const bus = new TinyBus();
  const svc = new ArchivedOttService(
    createOttService({ name: 's', spec, bus, clock, log: silentLogger }),
    { ...hookHost(host), name: 's', spec: () => spec, state: () => 'running' },
  );
  t.teardown(() => svc.close());
  const data = await makeTestStream(join(dir, 'a.ts'), { seconds: STREAM_S, gop: GOP_FRAMES });
  await feed(bus, clock, data, STREAM_S, svc.recorder!);
  const { app, base } = await startOttServer(new Map([['s', svc]]));
  t.teardown(() => app.close());

  const archiveText = await (await fetch(`${base}/s/index.mpd?t=0`)).text();
  t.equal((archiveText.match(/<Period /g) ?? []).length, 1, 'one contiguous run');
  const archive = describe(archiveText);
  const audio = archive.find((r) => r.contentType === 'audio');
  t.ok(
    (audio?.segments.length ?? 0) >= MIN_SEGMENTS,
    `archive MPD lists ${audio?.segments.length} audio segments`,
  );
  const rows = storage.index!.range('s', audio!.rep, 0, Number.MAX_SAFE_INTEGER);
  t.equal(svc.recorder!.stats.dropped, 0, 'no chunk dropped');
  const lengths = new Set(rows.map((r) => Math.round(r.duration * r.timescale)));
  t.ok(lengths.size > 1, `audio segment lengths differ: ${[...lengths].join(', ')}`);
  await compare(t, base, archive, 'archive');

  const live = await (await fetch(`${base}/s/index.mpd`)).text();
  t.match(live, /type="dynamic"/);
  await compare(t, base, describe(live), 'live');
});

t.test('timeline(): @t only after a gap, @r runs unless told not to', async (t) => {
  const seg = (start: number, ticks: number): SegmentDescriptor => ({
    seq: 0,
    discSeq: 0,
    discontinuity: false,
    start,
    timescale: 48000,
    duration: ticks / 48000,
    wallclock: 0,
    uri: '',
    size: 0,
    parts: [],
  });
  const segs = [seg(1000, 192512), seg(193512, 191488), seg(385000, 191488), seg(576488, 191488)];
  segs.push(seg(767976 + 5000, 192512)); // a hole before the last one
  t.equal(
    timeline(segs),
    '<S t="1000" d="192512"/><S d="191488" r="2"/><S t="772976" d="192512"/>',
  );
  t.equal(
    timeline(segs, false),
    '<S t="1000" d="192512"/><S d="191488"/><S d="191488"/><S d="191488"/><S t="772976" d="192512"/>',
  );
});
