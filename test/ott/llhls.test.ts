// LL-HLS timing against a live ffmpeg generator over a real HTTP server: a blocking reload for
// the next part answers within one part duration of the part being complete, and a client that
// follows the playlist with blocking reloads fetches each frame within 3 × part target +
// segment target of the frame entering the packager (glass-to-glass from PTS).
import pino from 'pino';
import t from 'tap';
import { createOttService } from '../../src/ott/index.ts';
import type { StreamOttService } from '../../src/ott/service.ts';
import { systemClock } from '../../src/util/clock.ts';
import { liveGenerator, startOttServer, TinyBus } from '../helpers/ott.ts';

const SEGMENT_S = 1;
const PART_S = 0.25;
const VIDEO_PID = 256;
/** Parts the client follows (about 4 s of stream). */
const PARTS_FOLLOWED = 16;
const START_TIMEOUT_MS = 20_000;

/** PTS of a TS packet that starts a PES on `pid`, if it carries one. */
function pesPts(p: Buffer, pid: number): number | undefined {
  if (p[0] !== 0x47 || !(p[1]! & 0x40) || (((p[1]! & 0x1f) << 8) | p[2]!) !== pid) return;
  let o = 4;
  if (p[3]! & 0x20) o += 1 + p[4]!;
  if (o + 14 > p.length || p[o] !== 0 || p[o + 1] !== 0 || p[o + 2] !== 1) return;
  if (!(p[o + 7]! & 0x80)) return;
  const b = p.subarray(o + 9, o + 14);
  return (
    (b[0]! & 0x0e) * 2 ** 29 +
    b[1]! * 2 ** 22 +
    (b[2]! >> 1) * 2 ** 15 +
    b[3]! * 2 ** 7 +
    (b[4]! >> 1)
  );
}

/** Base media decode time of the first `tfdt` box of a fragment. */
function tfdt(frag: Buffer): number {
  const at = frag.indexOf('tfdt');
  if (at < 0) throw new Error('no tfdt in part');
  const version = frag[at + 4];
  return version === 1 ? Number(frag.readBigUInt64BE(at + 8)) : frag.readUInt32BE(at + 8);
}

const hint = (text: string) => {
  const m = /#EXT-X-PRELOAD-HINT:TYPE=PART,URI="(\d+)\.(\d+)\.m4s"/.exec(text);
  if (!m) throw new Error(`no preload hint in\n${text}`);
  return { msn: Number(m[1]), part: Number(m[2]) };
};

t.test('LL-HLS blocking reload and glass-to-glass latency', async (t) => {
  const bus = new TinyBus();
  // When each video frame (by PTS) entered the packager: a sink ahead of the packager's.
  const entered = new Map<number, number>();
  bus.subscribe({
    packets: (buf: Buffer) => {
      const now = performance.now();
      for (let o = 0; o + 188 <= buf.length; o += 188) {
        const pts = pesPts(buf.subarray(o, o + 188), VIDEO_PID);
        if (pts !== undefined) entered.set(pts, now);
      }
    },
  });
  const svc = createOttService({
    name: 'll',
    spec: { 'ott-hls': 2, 'ott-segment-duration': SEGMENT_S, 'ott-part-duration': PART_S },
    bus,
    clock: systemClock,
    log: pino({ level: 'silent' }),
  }) as StreamOttService;
  t.teardown(() => svc.close());
  const gen = liveGenerator(bus, { seconds: 30, gop: 25, bframes: false });
  t.teardown(() => gen.kill('SIGKILL'));
  const { app, base } = await startOttServer(new Map([['ll', svc]]));
  t.teardown(() => app.close());

  const started = Date.now();
  while (!svc.packager.rendition(`c${VIDEO_PID}`)?.store.last()) {
    if (Date.now() - started > START_TIMEOUT_MS) throw new Error('no segment from the generator');
    await new Promise((r) => setTimeout(r, 100));
  }
  const store = svc.packager.rendition(`c${VIDEO_PID}`)!.store;
  // When each part became complete in the store, by its URI.
  const completed = new Map<string, number>();
  const off = store.onChange(() => {
    const open = store.open;
    const now = performance.now();
    for (const s of [...(open ? [open] : []), store.last()!])
      for (const p of s?.parts ?? []) if (!completed.has(p.uri)) completed.set(p.uri, now);
  });
  t.teardown(off);

  const url = (p: string) => `${base}/ll/c${VIDEO_PID}/${p}`;
  let next = hint(await (await fetch(url('index.m3u8'))).text());
  const answerLag: number[] = [];
  const glassToGlass: number[] = [];
  for (let fetched = 0; fetched < PARTS_FOLLOWED; ) {
    const uri = `${next.msn}.${next.part}.m4s`;
    const res = await fetch(url(`index.m3u8?_HLS_msn=${next.msn}&_HLS_part=${next.part}`));
    const text = await res.text();
    const answered = performance.now();
    t.equal(res.status, 200, `blocking reload for ${uri}`);
    if (text.includes(`URI="${uri}"`)) {
      const done = completed.get(uri);
      if (done !== undefined) answerLag.push(answered - done);
      const frag = Buffer.from(await (await fetch(url(uri))).arrayBuffer());
      const got = performance.now();
      const entry = entered.get(tfdt(frag));
      t.ok(entry !== undefined, `the first frame of ${uri} was seen entering the packager`);
      if (entry !== undefined) glassToGlass.push(got - entry);
      fetched++;
    }
    next = hint(text);
  }

  const partMs = PART_S * 1000;
  t.ok(answerLag.length >= PARTS_FOLLOWED / 2, `${answerLag.length} reloads timed`);
  const worstAnswer = Math.max(...answerLag);
  t.ok(
    worstAnswer <= partMs,
    `a blocking reload answers within one part (${partMs} ms) of the part: worst ${worstAnswer.toFixed(1)} ms`,
  );
  const bound = 3 * partMs + SEGMENT_S * 1000;
  const worst = Math.max(...glassToGlass);
  t.ok(
    worst <= bound,
    `glass-to-glass ≤ 3 × part + segment target (${bound} ms): worst ${worst.toFixed(0)} ms, ` +
      `median ${glassToGlass.sort((a, b) => a - b)[glassToGlass.length >> 1]!.toFixed(0)} ms`,
  );
});
