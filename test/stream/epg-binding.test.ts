// The stream's public EPG binding: StreamInstance.epgBinding() follows the record (also after an
// update), and the EPG drivers read it through the stream registry (streamRegistryBindings).
import t from 'tap';
import { streamRegistryBindings } from '../../src/drivers/epg-common.ts';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { makeHost, streamResource, tempDir } from '../helpers/stream-host.ts';

t.test('epgBinding() reflects the record and reaches the EPG drivers', async (t) => {
  const host = makeHost(tempDir(t));
  const spec = {
    'stream-name': 'news',
    pause: true,
    'epg-source': 2,
    'epg-channel': 'news.example',
    'epg-channel-set': [1, 3],
  };
  const s = (await new StreamDriver().create(streamResource(spec), host)) as StreamInstance;
  t.teardown(() => s.close());
  t.same(s.epgBinding(), {
    stream: 'news',
    source: 2,
    channel: 'news.example',
    channelSets: [1, 3],
    mpts: false,
  });
  t.same(
    streamRegistryBindings(host.services).map((b) => b.channel),
    ['news.example'],
    'the EPG side sees it through the registry',
  );
  await s.update(streamResource({ ...spec, 'epg-channel': 'news2' }), [
    { path: 'epg-channel', before: 'news.example', after: 'news2', apply: 'hot' },
  ]);
  t.equal(s.epgBinding().channel, 'news2', 'an update changes the binding');
  t.equal(streamRegistryBindings(host.services)[0]?.channel, 'news2');
  await s.close();
  t.same(streamRegistryBindings(host.services), [], 'a closed stream has no binding');
});
