// The segment block pool and the store's holds on pooled segments and CMAF parts: a block is
// reused only after the writer, the store and every reader let go, and never twice.
import t from 'tap';
import { readSettings } from '../../src/ott/options.ts';
import { Packager } from '../../src/ott/packager.ts';
import { BlockPool, classSize, segmentPool } from '../../src/ott/pool.ts';
import { type SegmentDescriptor, SegmentStore } from '../../src/ott/store.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { makeTestStream, TS_CHUNK, tempDir } from '../helpers/ott.ts';

function desc(seq: number): SegmentDescriptor {
  return {
    seq,
    discSeq: 0,
    discontinuity: false,
    start: seq * 180000,
    timescale: 90000,
    duration: 2,
    wallclock: 0,
    uri: `seg-${seq}.ts`,
    size: 188,
    parts: [],
  };
}

t.test('size classes: eight steps per power of two, whole 64 KiB granules', async (t) => {
  t.equal(classSize(1), 64 * 1024);
  t.equal(classSize(1 << 20), 1 << 20);
  t.equal(classSize((1 << 20) + 1), 1.125 * (1 << 20));
  t.equal(classSize(2.1e6), 2.25 * (1 << 20));
  for (const n of [100_000, 777_777, 3e6, 9.9e6]) {
    const c = classSize(n);
    t.ok(c >= n && c <= n * 1.125 + 64 * 1024, `${n} → ${c}`);
  }
});

t.test('a block comes back only when its last holder lets go', async (t) => {
  const pool = new BlockPool();
  const a = pool.acquire(1000);
  const readerRelease = a.retain();
  a.release();
  t.equal(pool.stats().freeBlocks, 0, 'a reader still holds it');
  readerRelease();
  readerRelease(); // a release function acts once
  t.equal(pool.stats().freeBlocks, 1);
  const b = pool.acquire(1000);
  t.equal(b.buf, a.buf, 'the same block is handed out again');
  t.equal(pool.stats().reused, 1);
  t.throws(() => a.release(), /released more often/, 'a stale lease cannot release twice');
  t.throws(() => a.retain(), /retain of a released block/);
});

t.test(
  'the smallest free block up to twice the asked size is reused before allocating',
  async (t) => {
    const pool = new BlockPool();
    const big = pool.acquire(2.1e6); // class 2.25 MiB
    big.release();
    t.equal(pool.acquire(1.9e6).buf, big.buf, 'a 1.875 MiB request takes the free 2.25 MiB block');
    // A block that grew by doubling (4 MiB) serves the next 2.5 MiB request: it used to sit in the
    // free list, more than three classes up, while every such request allocated.
    const grown = pool.acquire(4 << 20);
    grown.release();
    t.equal(pool.acquire(2.5 * (1 << 20)).buf, grown.buf, 'a 2.5 MiB request takes a 4 MiB block');
    const a = pool.acquire(3 << 20);
    const b = pool.acquire(5 << 20);
    b.release();
    a.release();
    t.equal(pool.acquire(2.6 * (1 << 20)).buf, a.buf, 'the smallest fitting block goes first');
    const huge = pool.acquire(6e6);
    huge.release();
    t.not(pool.acquire(1e6).buf, huge.buf, 'but not a block over twice the size');
    t.equal(pool.stats().allocated, 6);
  },
);

t.test('free blocks beyond the cap are left to the GC, oldest first', async (t) => {
  const pool = new BlockPool(3 * 64 * 1024);
  const leases = Array.from({ length: 5 }, () => pool.acquire(1));
  for (const l of leases) l.release();
  t.equal(pool.stats().freeBlocks, 3);
  t.equal(pool.stats().freeBytes, 3 * 64 * 1024);
  t.equal(pool.acquire(1).buf, leases[4]!.buf, 'the newest free block is reused first');
});

t.test('the store holds a pooled segment until it leaves the window', async (t) => {
  const pool = new BlockPool();
  const store = new SegmentStore({ window: 2, grace: 0 });
  const leases = [0, 1, 2].map(() => pool.acquire(188));
  const fill = [0x11, 0x22, 0x33];
  const leasesFilled = leases.map((l, i) => {
    l.buf.fill(fill[i]!);
    return l;
  });
  store.commit(desc(0), leasesFilled[0]!.buf.subarray(0, 188), leasesFilled[0]);
  leasesFilled[0]!.release(); // the writer moves on
  t.equal(pool.stats().freeBlocks, 0, 'the store holds segment 0');
  // An HTTP response in flight holds segment 0 while it leaves the window.
  const response = store.retain('seg-0.ts');
  store.commit(desc(1), leasesFilled[1]!.buf.subarray(0, 188), leasesFilled[1]);
  store.commit(desc(2), leasesFilled[2]!.buf.subarray(0, 188), leasesFilled[2]);
  t.equal(store.get('seg-0.ts'), undefined, 'segment 0 left the store');
  t.equal(pool.stats().freeBlocks, 0, 'but its block is not free while the response holds it');
  const other = pool.acquire(188);
  other.buf.fill(0xff);
  t.not(other.buf, leasesFilled[0]!.buf);
  t.equal(leasesFilled[0]!.buf[0], 0x11, 'the held bytes are intact');
  response();
  t.equal(pool.stats().freeBlocks, 1, 'free once the response is done');
  t.equal(store.retain('seg-9.ts')(), undefined, 'retaining an unknown or unpooled URI is a no-op');
  store.clear();
  leasesFilled[1]!.release();
  leasesFilled[2]!.release();
  t.equal(pool.stats().freeBlocks, 3, 'clear() lets go of every pooled segment');
});

t.test('a CMAF part a reader holds stays intact after its segment leaves the store', async (t) => {
  const tmp = tempDir();
  const input = await makeTestStream(`${tmp.dir}/s.ts`, { seconds: 6, gop: 25 });
  tmp.remove();
  const p = new Packager(
    readSettings({ 'ott-hls': 2, 'ott-segment-duration': 1, 'ott-window': 1 }),
    new ManualClock(),
  );
  let held: { copy: Buffer; data: Buffer; release: () => void } | undefined;
  let at = 0;
  // Up to the first video part, which a reader (an HTTP response) then holds.
  for (; at < input.length && !held; at += TS_CHUNK) {
    p.packets(input.subarray(at, at + TS_CHUNK));
    const store = p.renditions.find((r) => r.track.type === 'video')?.store;
    const data = store?.get('0.0.m4s');
    if (store && data) held = { copy: Buffer.from(data), data, release: store.retain('0.0.m4s') };
  }
  t.ok(held, 'the first part was made');
  p.packets(input.subarray(at));
  p.end();
  for (const r of p.renditions) r.store.clear();
  t.equal(p.renditions[0]!.store.get('0.0.m4s'), undefined, 'its segment left the store');
  // Every free block is handed out and overwritten (each class is served by the power of two
  // at or below it): the held part's block must not be among them.
  const taken = [];
  for (let size = 64 * 1024; size <= 64 << 20; size *= 2) {
    for (;;) {
      const reused = segmentPool.stats().reused;
      const lease = segmentPool.acquire(size);
      taken.push(lease);
      if (segmentPool.stats().reused === reused) break;
      lease.buf.fill(0xee);
    }
  }
  t.ok(held!.data.equals(held!.copy), 'the held part was not overwritten');
  held!.release();
  for (const lease of taken) lease.release();
});
