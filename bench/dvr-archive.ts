// Bench: the archive's three hot paths, each beside a peer in the same run.
// 1. 24 h VOD playlist (43,200 chunks of 2 s) from the storage's hour blocks: cold (every
//    block rendered from the index), a fresh process over hours stored as they closed, a
//    sliding window with live appends, a repeat; beside the OTT part's own buildMediaPlaylist
//    over the same descriptors already in memory. Not equal: the peer reads no index, it only
//    renders the same text; the previous renderer (`SELECT *` + vodPlaylist) is timed too.
// 2. Rolling cleanup of 10 streams down to their last hour, over 1,000,000 indexed chunks
//    (rows only, no files): chosen by the cleanup's own query in passes and deleted by id,
//    beside one bare `DELETE … WHERE start_ms < ?` on a copy filled the same way (same schema
//    and triggers). Not equal: the peer chooses nothing, it is the floor of the delete.
// 3. Recording writes of 1 MiB chunks. Equal work: both open `<path>.tmp`, write, fsync, close
//    and rename, one chunk after the other; ours as one native thread-pool job per chunk
//    (writeDurable, what the recorder runs) with the event loop's p99 delay measured, the peer
//    as plain synchronous calls on the main thread, its fastest form for one writer.
// Usage: npx tsx bench/dvr-archive.ts [chunks-for-cleanup] [write-chunks]
// Figures: printed; copy them to bench/RESULTS.md.
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { chooseRolling } from '../src/dvr/cleanup.ts';
import { ArchiveIndex, type NewChunk, TS_TRACK } from '../src/dvr/index-db.ts';
import { BLOCK_CACHE_CHARS, BLOCK_MS, PlaylistBlocks } from '../src/dvr/playlist-blocks.ts';
import { chunkPath } from '../src/dvr/recorder.ts';
import { vodPlaylist } from '../src/dvr/views.ts';
import { writeDurable } from '../src/native/fs.ts';
import { buildMediaPlaylist } from '../src/ott/hls.ts';
import { benchHeader } from './lib/header.ts';

benchHeader('dvr-archive');

const [cleanupChunks = 1_000_000, writeChunks = 300] = process.argv.slice(2).map(Number);
const DAY_CHUNKS = 43_200;
const START = Date.UTC(2026, 0, 1);
const RUNS = 30;
const dir = mkdtempSync(join(tmpdir(), 'sluice-dvr-bench-'));

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

function rows(n: number, stream = 's'): NewChunk[] {
  return Array.from({ length: n }, (_, i) => ({
    stream,
    track: TS_TRACK,
    start_ms: START + i * 2000,
    duration: 2,
    bytes: 2_000_000,
    path: `${stream}/x/ts-${i}.ts`,
    uri: `seg-${i.toString(16).padStart(20, '0')}.ts`,
    disc: i === 0 ? 1 : 0,
    media_start: i * 180_000,
    timescale: 90_000,
    init_id: 1,
  }));
}

function fill(index: ArchiveIndex, list: NewChunk[]): void {
  const BATCH = 50_000;
  for (let i = 0; i < list.length; i += BATCH) index.insertMany(list.slice(i, i + BATCH));
}

// 1. playlist
const idx = new ArchiveIndex(join(dir, 'playlist.sqlite'));
fill(idx, rows(DAY_CHUNKS));
const peer: number[] = [];
const descs = idx.range('s', TS_TRACK, 0, Number.MAX_SAFE_INTEGER).map((r, i) => ({
  seq: i,
  discSeq: 0,
  discontinuity: false,
  start: r.media_start,
  timescale: r.timescale,
  duration: r.duration,
  wallclock: r.start_ms,
  uri: r.uri,
  size: r.bytes,
  parts: [],
}));
let len = 0;
const DAY = 86_400_000;
// Cold: a fresh storage-like block cache per run (every block rendered from the index).
const cold: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const blocks = new PlaylistBlocks(
    (s, tr, f, t) => idx.lean(s, tr, f, t),
    (s, tr) => idx.extent(s, tr),
  );
  const t0 = performance.now();
  len = blocks.playlist('s', TS_TRACK, START, START + DAY, 2).text.length;
  cold.push(performance.now() - t0);
}
// First request of a day in a fresh process (restart, or nobody asked yet) when the hours
// were rendered as the recorder closed them and kept in the index (ArchiveStorage does this):
// a fresh in-memory cache per run over the stored blocks.
{
  const seed = new PlaylistBlocks(
    (s, tr, f, t) => idx.lean(s, tr, f, t),
    (s, tr) => idx.extent(s, tr),
    BLOCK_CACHE_CHARS,
    () => idx.blocks,
  );
  for (let h = START; h < START + DAY; h += BLOCK_MS) seed.warm('s', TS_TRACK, h);
}
const stored: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const fresh = new PlaylistBlocks(
    (s, tr, f, t) => idx.lean(s, tr, f, t),
    (s, tr) => idx.extent(s, tr),
    BLOCK_CACHE_CHARS,
    () => idx.blocks,
  );
  const t0 = performance.now();
  const text = fresh.playlist('s', TS_TRACK, START, START + DAY, 2).text;
  stored.push(performance.now() - t0);
  if (text.length !== len) throw new Error('stored blocks give other text');
}
// Warm: one cache; each run asks for a different 24 h window (t moves by 10 s: both edges
// are partial hours rendered from the index), and a chunk is appended in the last hour
// before every run, as a recording stream does (its block is dropped).
const blocks = new PlaylistBlocks(
  (s, tr, f, t) => idx.lean(s, tr, f, t),
  (s, tr) => idx.extent(s, tr),
);
blocks.playlist('s', TS_TRACK, START, START + DAY, 2);
const warm: number[] = [];
const repeat: number[] = [];
let next = START + DAY_CHUNKS * 2000;
for (let i = 0; i < RUNS; i++) {
  idx.insertMany([{ ...rows(1)[0]!, start_ms: next, path: `live-${i}`, uri: `seg-live-${i}.ts` }]);
  blocks.invalidate('s', TS_TRACK, next);
  next += 2000;
  const from = START + (i + 1) * 10_000;
  let t0 = performance.now();
  const text = blocks.playlist('s', TS_TRACK, from, from + DAY, 2).text;
  warm.push(performance.now() - t0);
  t0 = performance.now();
  const again = blocks.playlist('s', TS_TRACK, from, from + DAY, 2).text;
  repeat.push(performance.now() - t0);
  if (again !== text) throw new Error('repeated playlist differs');
}
// The previous way (kept as the reference renderer): SELECT * rows + vodPlaylist.
const old: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  const list = idx.range('s', TS_TRACK, START, START + DAY);
  vodPlaylist(list, { uri: (r) => r.uri, fallbackTarget: 2 });
  old.push(performance.now() - t0);
}
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  buildMediaPlaylist({ segments: descs, targetDuration: 2, vod: true });
  peer.push(performance.now() - t0);
}
idx.close();
const f = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms p99 ${pct(xs, 99).toFixed(1)} ms`;
console.log(
  `playlist 24 h (${DAY_CHUNKS} chunks, ${(len / 1024).toFixed(0)} KiB), ${RUNS} runs each:`,
);
console.log(`  ours, cold blocks (index → text):          ${f(cold)}`);
console.log(`  ours, fresh process, hours stored:         ${f(stored)}`);
console.log(`  ours, sliding window + live appends:       ${f(warm)}`);
console.log(`  ours, repeated request:                    ${f(repeat)}`);
console.log(`  previous (SELECT * + vodPlaylist):         ${f(old)}`);
console.log(`  peer (in-memory buildMediaPlaylist):       ${f(peer)}`);

// 2. cleanup over N chunks: 10 streams, everything older than 1 h of the newest goes
const big = new ArchiveIndex(join(dir, 'cleanup.sqlite'));
const per = Math.floor(cleanupChunks / 10);
const t0 = performance.now();
for (let s = 0; s < 10; s++) fill(big, rows(per, `s${s}`));
const fillMs = performance.now() - t0;
const now = START + per * 2000;
const streams = Array.from({ length: 10 }, (_, s) => ({ name: `s${s}`, hours: 1, minHours: 0 }));
let chosen = 0;
let t1 = performance.now();
let passes = 0;
for (;;) {
  const list = chooseRolling(big, streams, now, []);
  if (list.length === 0) break;
  big.deleteMany(list.map((r) => r.id));
  chosen += list.length;
  passes++;
}
const oursMs = performance.now() - t1;
big.close();
const peerIdx = new ArchiveIndex(join(dir, 'cleanup-peer.sqlite'));
for (let s = 0; s < 10; s++) fill(peerIdx, rows(per, `s${s}`));
t1 = performance.now();
const res = peerIdx.db.prepare('DELETE FROM chunk WHERE start_ms < ?').run(now - 3_600_000);
const peerMs = performance.now() - t1;
peerIdx.close();
console.log(
  `cleanup ${cleanupChunks} indexed (fill ${fillMs.toFixed(0)} ms): ours chose+deleted ${chosen} rows in ${passes} passes, ${oursMs.toFixed(0)} ms (${((oursMs / chosen) * 1000).toFixed(2)} µs/row) | peer bare DELETE ${res.changes} rows ${peerMs.toFixed(0)} ms`,
);

// 3. writes: 1 MiB chunks (≈ 4 s of 2 Mbit/s), ours async with loop monitor, peer sync
const data = Buffer.alloc(1 << 20, 7);
const h = monitorEventLoopDelay({ resolution: 1 });
h.enable();
let t2 = performance.now();
for (let i = 0; i < writeChunks; i++) {
  const rel = chunkPath('w', TS_TRACK, START + i * 4000, `seg-${i}.ts`);
  await mkdir(dirname(join(dir, 'ours', rel)), { recursive: true });
  await writeDurable(join(dir, 'ours', rel), data);
}
const oursW = performance.now() - t2;
h.disable();
t2 = performance.now();
for (let i = 0; i < writeChunks; i++) {
  const rel = chunkPath('w', TS_TRACK, START + i * 4000, `seg-${i}.ts`);
  const full = join(dir, 'peer', rel);
  mkdirSync(dirname(full), { recursive: true });
  const fd = openSync(`${full}.tmp`, 'w');
  writeSync(fd, data);
  fsyncSync(fd);
  closeSync(fd);
  renameSync(`${full}.tmp`, full);
}
const peerW = performance.now() - t2;
const mb = (writeChunks * data.length) / 1e6;
console.log(
  `writes ${writeChunks} × 1 MiB: ours ${(mb / (oursW / 1000)).toFixed(0)} MB/s (loop delay p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms) | peer sync fsync-per-chunk ${(mb / (peerW / 1000)).toFixed(0)} MB/s | ratio ${(peerW / oursW).toFixed(2)}`,
);
rmSync(dir, { recursive: true, force: true });
