// Segment memory at the size of the segment: a finished segment's block (TS and CMAF) keeps its
// contents and no more, and the free pool gives back what the writers' fill rate does not need.
import t from 'tap';
import { residentBytes } from '../../src/native/pages.ts';
import { readSettings } from '../../src/ott/options.ts';
import { Packager } from '../../src/ott/packager.ts';
import { BlockPool, segmentPool } from '../../src/ott/pool.ts';
import { Segmenter } from '../../src/ott/segmenter.ts';
import { SegmentStore } from '../../src/ott/store.ts';
import { TsSegmentWriter } from '../../src/ott/ts-writer.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { makeTestStream, TS_CHUNK, tempDir } from '../helpers/ott.ts';

const MiB = 1024 * 1024;
/** What a block may keep past its contents: its last page. */
const PAGE = 4096;

async function stream(seconds: number): Promise<Buffer> {
  const tmp = tempDir();
  try {
    return await makeTestStream(`${tmp.dir}/s.ts`, { seconds, gop: 25 });
  } finally {
    tmp.remove();
  }
}

/** The memory a segment's block keeps: the resident pages of its whole ArrayBuffer. */
function blockBytes(data: Buffer): number {
  return residentBytes(Buffer.from(data.buffer, 0, data.buffer.byteLength));
}

/** Free blocks of the shared pool whose every page was written (as a larger segment would), of
 *  the sizes the writers ask for: a segment that reuses one must not keep the old pages. */
function dirtyPool(): void {
  const leases = [];
  for (const size of [64 << 10, 256 << 10, 1 << 20, 4 << 20, 8 << 20])
    for (let i = 0; i < 4; i++) leases.push(segmentPool.acquire(size));
  for (const l of leases) l.buf.fill(0xaa);
  for (const l of leases) l.release();
}

t.test('a finished TS segment keeps a block of its own size', async (t) => {
  const seg = new Segmenter({ targetDuration: 1, now: () => 0 });
  const store = new SegmentStore({ window: 100, grace: 0 });
  seg.addSink(new TsSegmentWriter(seg, store));
  dirtyPool();
  seg.push(await stream(6));
  t.ok(store.all().length >= 4, 'segments were cut');
  for (const s of store.all()) {
    const data = store.get(s.uri)!;
    t.equal(data.length, s.size);
    t.ok(
      blockBytes(data) <= s.size + PAGE,
      `${s.uri}: ${s.size} bytes in a block of ${blockBytes(data)}`,
    );
  }
  store.clear();
});

t.test('a finished CMAF segment and its parts keep a block of its own size', async (t) => {
  const input = await stream(6);
  const p = new Packager(
    readSettings({ 'ott-hls': 2, 'ott-segment-duration': 1, 'ott-window': 10 }),
    new ManualClock(),
  );
  dirtyPool();
  for (let at = 0; at < input.length; at += TS_CHUNK) p.packets(input.subarray(at, at + TS_CHUNK));
  p.end();
  let checked = 0;
  for (const r of p.renditions) {
    for (const s of r.store.all()) {
      const data = r.store.get(s.uri)!;
      t.ok(blockBytes(data) <= s.size + PAGE, `${r.track.type} ${s.uri}: ${s.size} bytes`);
      for (const part of s.parts) {
        const bytes = r.store.get(part.uri);
        if (bytes) t.equal(bytes.buffer, data.buffer, `part ${part.uri} shares its segment block`);
      }
      checked++;
    }
    r.store.clear();
  }
  t.ok(checked >= 4, `${checked} segments checked`);
});

t.test('the free pool shrinks to what the next seconds need after a burst', async (t) => {
  let now = 0;
  const pool = new BlockPool({ horizonMs: 3_000, floorBytes: 1 * MiB, now: () => now });
  // A burst: 20 segments of 1 MiB filled at once, then all let go (streams stopped).
  const leases = Array.from({ length: 20 }, () => pool.acquire(0, 4 * MiB));
  for (const l of leases) {
    l.buf.fill(0x47, 0, MiB);
    l.trim(MiB);
  }
  const kept = leases.map((l) => l.buf);
  for (const l of leases) l.release();
  // 20 MiB filled in the last 10 s: 6 MiB in the next 3 s, plus the floor.
  t.equal(pool.freeBound(), 7 * MiB);
  t.ok(pool.freeBytes() <= 7 * MiB, `${pool.freeBytes()} free bytes within 7 MiB`);
  t.equal(pool.stats().freeBlocks, 7);
  t.equal(
    kept.filter((b) => residentBytes(b) === 0).length,
    13,
    'the blocks let go were emptied at once, not left to the GC',
  );
  now += 11_000; // nothing filled since: only the floor is kept
  pool.settle();
  t.equal(pool.freeBound(), 1 * MiB);
  t.equal(pool.freeBytes(), 1 * MiB);
  t.equal(pool.stats().freeBlocks, 1);
  // What is kept is reused as it is: its filled pages, no new allocation.
  const again = pool.acquire(0, 4 * MiB);
  t.equal(again.buf, kept[19], 'the newest free block serves the next segment');
  t.equal(residentBytes(again.buf), MiB, 'with its written pages, no new ones');
  t.equal(pool.stats().allocated, 20);
});

t.test('a trimmed block keeps the views inside its contents', async (t) => {
  const pool = new BlockPool();
  const l = pool.acquire(0, 2 * MiB);
  l.buf.fill(0x11, 0, 100_000);
  const view = l.buf.subarray(1000, 90_000);
  l.trim(100_000);
  t.ok(residentBytes(l.buf) <= 100_000 + PAGE, 'the pages past the contents went back');
  t.equal(view.length, 89_000);
  t.equal(view[88_999], 0x11);
  l.release();
  t.throws(() => l.trim(0), /released/);
});
