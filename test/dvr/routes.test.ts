// GET /data/dvr-storage-list and /data/dvrstat through Fastify inject over a real storage.
import Fastify from 'fastify';
import t from 'tap';
import type { AppContext } from '../../src/api/context.ts';
import { dvrRoutes } from '../../src/api/routes/dvr.ts';
import { dvrStorages } from '../../src/dvr/registry.ts';
import { Services } from '../../src/util/services.ts';
import { addRun, attach, testStorage } from './helpers.ts';

t.test('storage list and dvrstat', async (t) => {
  const { storage, clock } = await testStorage(t);
  attach(storage, 'news');
  const now = clock.now();
  addRun(storage, 'news', now - 3_600_000, 900, { duration: 2, bytes: 1000 });
  storage.index!.mark('news', now - 1_800_000, 'source-start', 'test');
  const services = new Services();
  dvrStorages(services).set(1, storage);
  const app = Fastify();
  await app.register(dvrRoutes, { ctx: { services, clock } as unknown as AppContext });
  t.teardown(() => app.close());
  const list = (await app.inject('/data/dvr-storage-list')).json() as Record<string, unknown>[];
  t.equal(list.length, 1);
  t.equal(list[0]!['state'], 'ready');
  t.equal(list[0]!['archived-bytes'], 900_000);
  const streams = list[0]!['streams'] as Record<string, unknown>[];
  t.same(streams[0], {
    name: 'news',
    active: true,
    'retention-hours': 24,
    'archived-sec': 1800,
    'archived-bytes': 900_000,
    'storage-gap-percent': 0,
  });
  const from = Math.floor((now - 3_600_000) / 1000);
  const stat = (
    await app.inject(`/data/dvrstat?from=${from}&to=${from + 3600}&step=600`)
  ).json() as {
    storages: { streams: { buckets: { 'recorded-sec': number }[]; markers: unknown[] }[] }[];
  };
  const s = stat.storages[0]!.streams[0]!;
  t.equal(s.buckets.length, 6);
  t.equal(s.buckets[0]!['recorded-sec'], 600);
  t.equal(s.buckets[3]!['recorded-sec'], 0, 'only the first half hour was recorded');
  t.equal(s.markers.length, 1);
  t.equal((await app.inject('/data/dvrstat?step=abc')).statusCode, 400);
  const inverted = await app.inject(`/data/dvrstat?from=${from + 3600}&to=${from}`);
  t.equal(inverted.statusCode, 400, 'from after to is refused');
  t.match(inverted.json(), { status: 400, message: /from must be before to/ });
});
