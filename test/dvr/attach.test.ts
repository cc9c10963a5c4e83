import t from 'tap';
import { ArchivedOttService } from '../../src/dvr/attach.ts';
import { silentLogger } from '../../src/log.ts';
import { createOttService } from '../../src/ott/index.ts';
import { TinyBus } from '../helpers/ott.ts';
import { hookHost, recordingHost, tempDir } from './helpers.ts';

t.test('pause and resume of a recorded stream are marked', async (t) => {
  const dir = tempDir(t);
  const { clock, storage, host } = await recordingHost(t, dir);
  const spec = { 'stream-name': 's', 'ott-hls': 1, 'dvr-storage': 1 };
  let state = 'running';
  const svc = new ArchivedOttService(
    createOttService({ name: 's', spec, bus: new TinyBus(), clock, log: silentLogger }),
    { ...hookHost(host), name: 's', spec: () => spec, state: () => state },
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
