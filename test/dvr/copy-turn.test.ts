// Archive writes copy one chunk into the page cache at a time, process-wide (writeDurable):
// with many streams closing segments together, concurrent copies on every libuv thread took
// both cores from the event loop. fsyncs stay concurrent.
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { copyInTurn, writeDurable } from '../../src/dvr/recorder.ts';
import { tempDir } from '../helpers/stream-host.ts';

t.test('copyInTurn runs one job at a time, in order, past failures', async (t) => {
  const events: string[] = [];
  let releaseA!: () => void;
  const a = copyInTurn(
    () =>
      new Promise<void>((resolve) => {
        events.push('a start');
        releaseA = () => {
          events.push('a end');
          resolve();
        };
      }),
  );
  const b = copyInTurn(async () => {
    events.push('b start');
    throw new Error('b failed');
  });
  const c = copyInTurn(async () => {
    events.push('c start');
    return 7;
  });
  await new Promise((r) => setImmediate(r));
  t.same(events, ['a start'], 'b waits for a');
  releaseA();
  await a;
  await t.rejects(b, /b failed/, 'a failure reaches its own caller');
  t.equal(await c, 7, 'and does not stop the next job');
  t.same(events, ['a start', 'a end', 'b start', 'c start']);
});

t.test(
  'concurrent writeDurable calls never copy at the same time, and all land whole',
  async (t) => {
    const dir = tempDir(t, 'sluice-test-copy-');
    // Count writeFile calls in flight on the FileHandle prototype writeDurable uses.
    const probe = await open(join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { writeFile: (...a: unknown[]) => Promise<void> };
    await probe.close();
    const original = proto.writeFile;
    let inFlight = 0;
    let most = 0;
    proto.writeFile = async function (this: unknown, ...args: unknown[]) {
      most = Math.max(most, ++inFlight);
      try {
        return await original.apply(this, args);
      } finally {
        inFlight--;
      }
    };
    t.teardown(() => {
      proto.writeFile = original;
    });
    const chunks = Array.from({ length: 8 }, (_, i) => Buffer.alloc(4 << 20, i + 1));
    await Promise.all(chunks.map((c, i) => writeDurable(join(dir, `chunk-${i}.ts`), c)));
    t.equal(most, 1, 'one copy at a time');
    for (let i = 0; i < chunks.length; i++) {
      t.ok((await readFile(join(dir, `chunk-${i}.ts`))).equals(chunks[i]!), `chunk ${i} whole`);
    }
  },
);
