// Recording resumes by itself after the storage directory was removed and put back: the
// recorder must not keep believing in the directories it made before (every chunk failed).
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { statfsProbe } from '../../src/dvr/disk.ts';
import { TS_TRACK } from '../../src/dvr/index-db.ts';
import { StreamRecorder } from '../../src/dvr/recorder.ts';
import { readStorage } from '../../src/dvr/settings.ts';
import { ArchiveStorage } from '../../src/dvr/storage.ts';
import { silentLogger } from '../../src/log.ts';
import { readSettings } from '../../src/ott/options.ts';
import { Packager } from '../../src/ott/packager.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { applied } from '../helpers/desired.ts';
import { makeTestStream, TinyBus } from '../helpers/ott.ts';
import { tempDir } from './helpers.ts';

const PIECES_PER_SECOND = 4;

t.test('directory removed, Error, recreated: Ready and recording again', async (t) => {
  const dir = tempDir(t);
  const clock = new ManualClock(Date.UTC(2026, 2, 1, 10, 0, 0));
  const storage = new ArchiveStorage(
    readStorage(
      applied('storage', '1', {
        id: 1,
        name: 'd',
        'dir-path': join(dir, 'store'),
        'disk-emergency-bytes': 0,
      }).spec,
    ),
    { clock, log: silentLogger, probe: statfsProbe },
  );
  t.teardown(() => storage.close());
  await storage.start();
  const packager = new Packager(
    readSettings({ 'stream-name': 's', 'ott-hls': 1, 'ott-segment-duration': 1 }),
    clock,
  );
  const bus = new TinyBus();
  bus.subscribe(packager);
  const recorder = new StreamRecorder('s', packager, storage, silentLogger);
  t.teardown(() => recorder.close());
  const ts = await makeTestStream(join(dir, 'a.ts'), { seconds: 12, gop: 25 });
  const third = Math.ceil(ts.length / 3 / 188) * 188;
  const feed = async (data: Buffer) => {
    const size = Math.ceil(data.length / (4 * PIECES_PER_SECOND) / 188) * 188;
    for (let o = 0; o < data.length; o += size) {
      bus.push(data.subarray(o, o + size));
      clock.advance(1000 / PIECES_PER_SECOND);
      await new Promise((r) => setImmediate(r));
    }
    await recorder.settle();
  };
  const count = () => storage.index?.range('s', TS_TRACK, 0, Number.MAX_SAFE_INTEGER).length ?? 0;
  await feed(ts.subarray(0, third));
  t.ok(count() > 0, 'recording');
  rmSync(storage.dir, { recursive: true, force: true });
  await feed(ts.subarray(third, 2 * third)); // chunks fail or are dropped meanwhile
  await storage.pass();
  t.equal(storage.state, 'error');
  mkdirSync(storage.dir);
  await storage.pass();
  t.equal(storage.state, 'ready');
  await feed(ts.subarray(2 * third));
  t.ok(count() > 0, `recording resumed by itself (${count()} chunks in the new index)`);
});
