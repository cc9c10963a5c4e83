// The mosaic's parts without a server: the key-frame tap of the HTTP-TS start buffer (PAT +
// PMT + the key frame's packets only, in any batching), the grid layout, the bounded pool of
// children, and the Mosaic's refresh (staggered, a key frame decoded once, the card for a dead
// stream) with a fake ffmpeg and the manual clock.
import pino from 'pino';
import t from 'tap';
import { HttpTsFanout } from '../../src/ott/http-ts.ts';
import { Mosaic, type MosaicSource } from '../../src/ott/mosaic.ts';
import {
  gridLayout,
  JobPool,
  runFfmpeg,
  thumbnailArgs,
  thumbnailSize,
} from '../../src/ott/thumbnail.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { PMT_PID, packet, pat, pmt, psiPackets, VIDEO_PID } from '../helpers/ts-craft.ts';

const psi = Buffer.concat([
  ...psiPackets(0, [pat([{ pnr: 1, pid: PMT_PID }])]),
  ...psiPackets(PMT_PID, [pmt(1, VIDEO_PID, [{ type: 0x1b, pid: VIDEO_PID }])]),
]);

/** A video packet: `start` begins a PES (PUSI), `key` also flags random access. */
function video(fill: number, start: boolean, key = false): Buffer {
  const p = packet({
    pid: VIDEO_PID,
    pusi: start,
    adaptation: key,
    payload: Buffer.alloc(170, fill),
  });
  if (key) p[5]! |= 0x40;
  return p;
}

/** A key frame of `n` packets, then `m` frames of 3 packets each. */
function gop(fill: number, n: number, m: number): { all: Buffer; key: Buffer } {
  const key = Buffer.concat([
    video(fill, true, true),
    ...Array.from({ length: n - 1 }, () => video(fill, false)),
  ]);
  const rest = Array.from({ length: m }, (_, i) =>
    Buffer.concat([
      video(fill + i + 1, true),
      video(fill + i + 1, false),
      video(fill + i + 1, false),
    ]),
  );
  return { all: Buffer.concat([key, ...rest]), key };
}

t.test('key-frame tap: PAT + PMT + the key frame up to the next video PES', async (t) => {
  for (const batch of [188, 188 * 7, 188 * 1000]) {
    const fan = new HttpTsFanout();
    fan.packets(psi);
    t.equal(fan.keyFrame(), null, 'nothing before a key frame');
    const g = gop(0x10, 9, 4);
    // The key frame alone (not yet followed by a frame) is not complete.
    fan.packets(g.key);
    t.equal(fan.keyFrame(), null, `batch ${batch}: the key frame is not complete yet`);
    const rest = g.all.subarray(g.key.length);
    for (let o = 0; o < rest.length; o += batch) fan.packets(rest.subarray(o, o + batch));
    const k = fan.keyFrame();
    t.ok(k, `batch ${batch}: a key frame`);
    t.same(k?.ts, Buffer.concat([psi, g.key]), `batch ${batch}: PSI then exactly the key frame`);
    t.equal(k?.count, 1);
    const g2 = gop(0x40, 3, 2);
    for (let o = 0; o < g2.all.length; o += batch) fan.packets(g2.all.subarray(o, o + batch));
    t.same(fan.keyFrame()?.ts, Buffer.concat([psi, g2.key]), `batch ${batch}: the latest one`);
    t.equal(fan.keyFrame()?.count, 2, 'counted');
    fan.end();
    t.equal(fan.keyFrame(), null, 'end() forgets it');
  }
});

t.test('a key frame and the next frame in one batch', async (t) => {
  const fan = new HttpTsFanout();
  const g = gop(0x20, 2, 1);
  fan.packets(Buffer.concat([psi, g.all]));
  t.same(fan.keyFrame()?.ts, Buffer.concat([psi, g.key]));
});

t.test('grid layout and thumbnail size', async (t) => {
  t.same(thumbnailSize(320), { width: 320, height: 180 });
  t.same(thumbnailSize(97), { width: 98, height: 56 }, 'even sizes');
  const g = gridLayout(6, 4, 100, 50);
  t.same([g.columns, g.rows, g.width, g.height], [4, 2, 400, 100]);
  t.same(g.cells[4], { x: 0, y: 50 });
  t.same(g.cells[5], { x: 100, y: 50 });
  const few = gridLayout(2, 4, 100, 50);
  t.same([few.columns, few.rows], [2, 1], 'no empty columns for fewer streams');
  t.same(gridLayout(0, 4, 10, 10).cells, []);
  const args = thumbnailArgs(2, 96, 54);
  t.same(
    args.filter((a) => a.startsWith('pipe:')),
    ['pipe:3', 'pipe:4', 'pipe:5', 'pipe:6'],
    'two inputs on descriptors 3 and 4, their pictures on 5 and 6',
  );
  t.same(
    args.flatMap((a, i) => (a === '-frames:v' ? [args[i + 1]] : [])),
    ['1', '1'],
    'one frame decoded per stream',
  );
  t.notOk(
    args.some((a) => /[;|&`$]/.test(a)),
    'nothing a shell would read',
  );
});

t.test('the pool bounds how many jobs run at once', async (t) => {
  const pool = new JobPool(2);
  let running = 0;
  let most = 0;
  const job = async () => {
    running++;
    most = Math.max(most, running);
    await new Promise((r) => setImmediate(r));
    running--;
  };
  await Promise.all(Array.from({ length: 7 }, () => pool.run(job)));
  t.equal(most, 2);
  t.equal(pool.pending, 0);
});

t.test(
  'refresh: batched, staggered, each key frame decoded once, the card for a dead stream',
  async (t) => {
    const clock = new ManualClock();
    const calls: string[] = [];
    let failBatch = false;
    const run = async (args: string[], inputs: Buffer[], outputs: number) => {
      const what = args.includes('lavfi') ? 'card' : args.includes('image2pipe') ? 'grid' : 'thumb';
      const ins = inputs.map((b) => b.toString());
      calls.push(what === 'thumb' ? `thumb:${ins.join(',')}` : what);
      if (what === 'thumb' && failBatch && inputs.length > 1) throw new Error('broken input');
      if (what === 'thumb' && ins.includes('bad')) throw new Error('broken input');
      const outs =
        what === 'grid'
          ? [Buffer.from(`grid[${ins[0]}]`)]
          : what === 'card'
            ? [Buffer.from('CARD')]
            : ins.map((i) => Buffer.from(`jpg:${i}`));
      t.equal(outs.length, outputs);
      return { outs, cpuSec: 0.01 };
    };
    let count = 1;
    let aliveB = true;
    let bTs = 'b1';
    const streams: MosaicSource[] = [
      { name: 'a', live: () => true, keyFrame: () => ({ ts: Buffer.from(`a${count}`), count }) },
      { name: 'b', live: () => aliveB, keyFrame: () => ({ ts: Buffer.from(bTs), count }) },
      { name: 'c', live: () => true, keyFrame: () => null },
    ];
    const m = new Mosaic(
      { columns: 2, thumbnailWidth: 96, refreshMs: 3000, workers: 2, batch: 2 },
      { clock, log: pino({ level: 'silent' }), streams: () => streams, run },
    );
    t.teardown(() => m.stop());
    const settle = async () => {
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    };
    m.start();
    await settle();
    t.same(calls, ['thumb:a1,b1'], 'the first batch (a, b) at once, in one child');
    clock.advance(1500);
    await settle();
    t.same(calls.length, 1, 'the second batch half a period later: c has no key frame yet');
    clock.advance(1500); // the next period: the same key frames
    await settle();
    t.same(calls.length, 1, 'a key frame already decoded is not decoded again');
    count = 2;
    bTs = 'b2';
    failBatch = true;
    clock.advance(3000);
    await settle();
    t.same(
      calls.slice(1),
      ['thumb:a2,b2', 'thumb:a2', 'thumb:b2'],
      'a batch that fails is retried one stream at a time',
    );
    count = 3;
    bTs = 'bad';
    failBatch = false;
    clock.advance(3000);
    await settle();
    t.same(calls.slice(4), ['thumb:a3,bad', 'thumb:a3', 'thumb:bad'], 'a broken stream alone');
    t.equal(m.stats.failures, 1, 'counted');
    t.same(await m.preview('a'), Buffer.from('jpg:a3'));
    t.same(await m.preview('b'), Buffer.from('jpg:b2'), 'a failed decode keeps the last picture');
    t.same(await m.preview('c'), Buffer.from('CARD'), 'no key frame: the card');
    aliveB = false;
    t.same(await m.preview('b'), Buffer.from('CARD'), 'a dead stream: the card');
    t.equal(await m.preview('x'), null, 'not in the mosaic');
    t.same(await m.image(), Buffer.from('grid[jpg:a3CARDCARD]'), 'the grid, in order');
    await m.image();
    t.equal(calls.filter((c) => c === 'grid').length, 1, 'the grid is remade only on a change');
    t.equal(calls.filter((c) => c === 'card').length, 1, 'the card is made once');
    t.equal(m.stats.thumbnails, 5);
    const st = m.status();
    t.equal(st[0]?.lastThumbnail, new Date(clock.now()).toISOString(), 'when it was made');
    t.equal(st[2]?.lastThumbnail, null);
    t.same(
      st.map((s) => s.noSignal),
      [false, true, true],
    );
  },
);

t.test('a child is killed when the mosaic closes (abort)', async (t) => {
  const ac = new AbortController();
  // An endless source: only the abort ends it.
  // biome-ignore format: argv
  const args = ['-v', 'error', '-re', '-f', 'lavfi', '-i', 'color=c=black:s=16x16:r=5', '-f', 'rawvideo', 'pipe:3'];
  const run = runFfmpeg(args, [], 1, { signal: ac.signal });
  ac.abort();
  await t.rejects(run, { name: 'AbortError' });
});
