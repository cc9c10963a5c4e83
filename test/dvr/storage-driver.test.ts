// The storage driver's log lines: the child logger names the storage once (a second
// `storage` member in the same JSON line is a duplicate key that log tools read differently).
import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { StorageInstance } from '../../src/drivers/storage.ts';
import type { Host } from '../../src/reconciler/driver.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { applied } from '../helpers/desired.ts';
import { tempDir } from './helpers.ts';

t.test('state change log lines carry the storage id once', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const host = {
    log: pino({ level: 'info' }, sink),
    clock: new ManualClock(Date.now()),
    dataDir: tempDir(t),
    lookup: () => undefined,
    services: new Map(),
  } as unknown as Host;
  const inst = new StorageInstance(
    applied('storage', '3', {
      id: 3,
      name: 'x',
      'dir-path': `${host.dataDir}/s`,
      'disk-emergency-bytes': 0,
    }),
    host,
  );
  t.teardown(() => inst.close());
  await inst.start();
  const ready = lines.find((l) => l.includes('archive storage ready'));
  t.ok(ready, 'ready logged');
  t.equal(ready!.match(/"storage":/g)?.length, 1, String(ready));
});
