// Source start/stop markers follow the stream's state, not only the recorder's attachment:
// a pause (and the resume) of a stream bound to a storage shows in /data/dvrstat.
import { join } from 'node:path';
import t from 'tap';
import type { Host, Instance } from '../../src/drivers/types.ts';
import { ArchivedOttService } from '../../src/dvr/attach.ts';
import { statfsProbe } from '../../src/dvr/disk.ts';
import { readStorage } from '../../src/dvr/settings.ts';
import { ArchiveStorage } from '../../src/dvr/storage.ts';
import { silentLogger } from '../../src/log.ts';
import { createOttService } from '../../src/ott/index.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { TinyBus } from '../helpers/ott.ts';
import { tempDir } from './helpers.ts';

t.test('pause and resume of a recorded stream are marked', async (t) => {
  const dir = tempDir(t);
  const clock = new ManualClock(Date.UTC(2026, 2, 1, 10, 0, 0));
  const storage = new ArchiveStorage(
    readStorage({ id: 1, name: 'disk', 'dir-path': join(dir, 'store') }),
    { clock, log: silentLogger, probe: statfsProbe },
  );
  t.teardown(() => storage.close());
  await storage.start();
  const host: Host = {
    log: silentLogger,
    clock,
    dataDir: dir,
    lookup: <T extends Instance>(kind: string, key: string) =>
      (kind === 'storage' && key === '1' ? ({ storage } as unknown as Instance) : undefined) as
        | T
        | undefined,
    services: new Map(),
  };
  const spec = { 'stream-name': 's', 'ott-hls': 1, 'dvr-storage': 1 };
  let state = 'running';
  const svc = new ArchivedOttService(
    createOttService({ name: 's', spec, bus: new TinyBus(), clock, log: silentLogger }),
    { host, name: 's', spec: () => spec, state: () => state },
  );
  t.teardown(() => svc.close());
  clock.advance(2000);
  state = 'paused';
  clock.advance(2000);
  state = 'running';
  clock.advance(2000);
  const kinds = storage
    .index!.markers(0, Number.MAX_SAFE_INTEGER, 's')
    .map((m) => `${m.kind}: ${m.detail}`);
  t.same(kinds, [
    'source-start: recorder attached',
    'source-stop: stream paused',
    'source-start: stream running',
  ]);
});
