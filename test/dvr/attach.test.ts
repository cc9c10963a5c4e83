import t from 'tap';
import { ArchivedOttService } from '../../src/dvr/attach.ts';
import { archiveClientKey } from '../../src/dvr/playback.ts';
import { silentLogger } from '../../src/log.ts';
import { OTT_ACCESS_SERVICE } from '../../src/ott/access.ts';
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

t.test(
  'behind viewer authorisation, an archive session ends with its viewer session',
  async (t) => {
    const dir = tempDir(t);
    const { clock, storage, host } = await recordingHost(t, dir);
    // The viewer gate as the archive sees it (src/ott/access.ts): only its session-end signal.
    const ends = new Set<(stream: string, ip: string) => void>();
    host.services.set(OTT_ACCESS_SERVICE, {
      active: true,
      anonymous: () => false,
      onChange: () => () => {},
      onSessionEnd: (fn) => {
        ends.add(fn);
        return () => ends.delete(fn);
      },
    });
    const spec = { 'stream-name': 's', 'ott-hls': 1, 'dvr-storage': 1 };
    const svc = new ArchivedOttService(
      createOttService({ name: 's', spec, bus: new TinyBus(), clock, log: silentLogger }),
      { ...hookHost(host), name: 's', spec: () => spec, state: () => 'running' },
    );
    t.teardown(() => svc.close());
    svc.sessions.open(archiveClientKey('10.0.0.7', 's'), 1, storage, 's', { from: 0, to: 10_000 });
    svc.sessions.open(archiveClientKey('10.0.0.8', 's'), 1, storage, 's', { from: 0, to: 10_000 });
    t.equal(storage.protectedRanges.length, 2, 'two protection slots');
    for (const fn of ends) fn('other', '10.0.0.7');
    t.equal(svc.sessions.size, 2, "another stream's viewer leaves them alone");
    for (const fn of ends) fn('s', '10.0.0.7');
    t.equal(svc.sessions.size, 1, "the viewer's archive session closed");
    t.equal(storage.protectedRanges.length, 1, 'its slot released');
    svc.close();
    t.equal(ends.size, 0, 'closing the service stops listening');
  },
);
