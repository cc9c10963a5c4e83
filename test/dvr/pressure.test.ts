// Size cleanup while recording goes on, on a fake disk whose usage is the archive itself: the
// disk-full alarm clears at max-usage − hysteresis (spec 3 item 7), used-percent is the usage
// after the pass's cleanup, and streams of 1 s and 4 s chunks keep depths proportional in seconds.
import t from 'tap';
import type { ArchiveStorage } from '../../src/dvr/storage.ts';
import type { ManualClock } from '../../src/util/clock.ts';
import { addChunk, addRun, attach, type TapLike, testStorage } from './helpers.ts';

/** Disk of `total` bytes whose used bytes are every chunk the index holds. */
function archiveDisk(storage: ArchiveStorage, total: number): void {
  const deps = storage as unknown as { deps: { probe: () => Promise<unknown> } };
  deps.deps.probe = async () => {
    let used = 0;
    for (const b of storage.streamBytes().values()) used += b;
    return { total, used, free: total - used };
  };
}

const seconds = (s: ArchiveStorage, name: string) =>
  s.status().streams.find((x) => x.name === name)?.['archived-sec'] ?? 0;

/** `secs` seconds of recording (1 s chunks of 3000 bytes on `fast`, 4 s chunks of 8000 on
 *  `slow`: 5000 bytes a second), then a cleanup pass. */
async function record(s: ArchiveStorage, clock: ManualClock, secs: number): Promise<void> {
  for (let i = 0; i < secs; i++) {
    const now = clock.now();
    addChunk(s, 'fast', now, { duration: 1, bytes: 3000 });
    if (Math.floor(now / 1000) % 4 === 0) addChunk(s, 'slow', now, { duration: 4, bytes: 8000 });
    clock.advance(1000);
  }
  await s.pass();
}

/** A storage at max-usage 65, hysteresis 7, grace 3 s on a 600,000-byte disk holding 60 s of
 *  each stream (50 %). */
async function pressured(t: TapLike): Promise<{ storage: ArchiveStorage; clock: ManualClock }> {
  const { storage, clock } = await testStorage(t, {
    'max-usage': 65,
    'alarm-disk-full-hysteresis': 7,
    'disk-pressure-grace-sec': 3,
    'cleanup-interval-sec': 3600,
    'disk-emergency-bytes': 0,
  });
  clock.advance(4000 - (clock.now() % 4000));
  attach(storage, 'fast');
  attach(storage, 'slow');
  const start = clock.now();
  addRun(storage, 'fast', start - 60_000, 60, { duration: 1, bytes: 3000 });
  addRun(storage, 'slow', start - 60_000, 15, { duration: 4, bytes: 8000 });
  archiveDisk(storage, 600_000);
  return { storage, clock };
}

t.test('the alarm clears at the margin while recording goes on', async (t) => {
  const { storage, clock } = await pressured(t);
  let cleared = 0;
  let trims = 0;
  let worst = 0;
  let raised = false;
  for (let i = 0; i < 30; i++) {
    const before = storage.last.trimDeleted;
    await record(storage, clock, 10); // 50,000 bytes a pass: more than the hysteresis
    const st = storage.status();
    if (storage.last.trimDeleted > before) {
      trims++;
      worst = Math.max(worst, st['used-percent']);
    }
    if (st['disk-full-alarm']) raised = true;
    else if (raised) {
      cleared++;
      raised = false;
      t.equal(st['pressure-since-sec'], 0, `pass ${i}: the episode is over`);
    }
  }
  t.ok(trims >= 5, `size cleanup ran on ${trims} passes`);
  t.ok(cleared >= trims - 1, `the alarm cleared ${cleared} times`);
  t.ok(worst <= 58.25, `used-percent right after a trim is the margin (worst ${worst})`);
});

t.test('1 s and 4 s chunks: depths in seconds stay proportional over many passes', async (t) => {
  const { storage, clock } = await pressured(t);
  for (let i = 0; i < 200; i++) {
    await record(storage, clock, 2);
    if (i % 10 !== 9) continue;
    const fast = seconds(storage, 'fast');
    const slow = seconds(storage, 'slow');
    // Both gain two seconds a pass and give the same share of their depth: a 4 s chunk is
    // the grain, nothing else tells them apart.
    t.ok(Math.abs(slow - fast) <= 8, `after pass ${i + 1}: fast ${fast} s, slow ${slow} s`);
  }
  t.ok(storage.last.trimDeleted > 50, `size cleanup ran (${storage.last.trimDeleted} chunks)`);
});

t.test('used-percent follows the disk between passes', async (t) => {
  const { storage, clock } = await pressured(t);
  await storage.pass();
  t.equal(storage.status()['used-percent'], 50);
  addRun(storage, 'fast', clock.now(), 20, { duration: 1, bytes: 3000 }); // 60,000 bytes: 10 %
  clock.advance(1000); // the disk figures' refresh, not a pass
  await new Promise((r) => setImmediate(r));
  t.equal(storage.status()['used-percent'], 60, 'the usage of now, not of the last pass');
});
