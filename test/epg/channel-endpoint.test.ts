// GET /data/epg/channel, one test per rule of spec 2 (through Fastify inject on the plugin).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import t, { type Test } from 'tap';
import { epgRoutes } from '../../src/api/routes/epg.ts';
import type { EpgRuntime } from '../../src/epg/runtime.ts';
import { XmltvSource } from '../../src/epg/xmltv-source.ts';
import { ERRORS, HttpError } from '../../src/errors.ts';
import { silentLogger } from '../../src/log.ts';
import { epgTestBed, FIXTURE_DAY, fixture, sourceRecord } from '../helpers/epg-host.ts';

async function setup(t: Test) {
  const bed = epgTestBed(t);
  const path = join(bed.dir, 'guide.xml');
  writeFileSync(path, readFileSync(fixture('guide.xml')));
  const src = new XmltvSource(
    bed.rt,
    sourceRecord({ id: 1, name: 'f', source: path, enable: true }),
    silentLogger,
  );
  await src.idle();
  t.teardown(() => src.close());
  let rt: EpgRuntime | undefined = bed.rt;
  const app = Fastify();
  app.setErrorHandler((err, _req, reply) => {
    const status = err instanceof HttpError ? err.status : 500;
    return reply.code(status).send({ status, message: (err as Error).message });
  });
  await app.register(epgRoutes, { epg: () => rt });
  t.teardown(() => app.close());
  const get = async (qs: string) => {
    const res = await app.inject({ method: 'GET', url: `/data/epg/channel?${qs}` });
    return { res, body: res.body ? JSON.parse(res.body) : undefined };
  };
  return { bed, app, src, get, dropRuntime: () => (rt = undefined) };
}

const D = FIXTURE_DAY;

t.test('rule 1: the UTC day containing t, [floor(t/86400)*86400, +86400)', async (t) => {
  const { get } = await setup(t);
  for (const tt of [D, D + 43_200, D + 86_399]) {
    const { body } = await get(`src=1&ch=one.example&t=${tt}`);
    const starts = body.event.map((e: { start: number }) => e.start);
    t.ok(starts.includes(D), `00:00 UTC event included (t=${tt})`);
    t.ok(starts.includes(D + 86_399), 'event at 23:59:59 included');
    t.notOk(starts.includes(D - 1800), 'event of the previous UTC day excluded');
    t.notOk(starts.includes(D + 86_400), 'event at next 00:00 excluded');
  }
  const next = await get(`src=1&ch=one.example&t=${D + 86_400}`);
  t.same(
    next.body.event.map((e: { start: number }) => e.start),
    [D + 86_400],
    'next day by +86400',
  );
  const prev = await get(`src=1&ch=one.example&t=${D - 1}`);
  t.same(
    prev.body.event.map((e: { title: string }) => e.title),
    ['Late Night'],
  );
});

t.test('t defaults to the current server time', async (t) => {
  const { get, bed } = await setup(t);
  const a = await get('src=1&ch=one.example');
  const b = await get(`src=1&ch=one.example&t=${bed.rt.nowSec()}`);
  t.same(a.body, b.body);
  t.ok(a.body.event.length > 0);
});

t.test('rule 2: title language: requested, then system default, then any', async (t) => {
  const { get } = await setup(t);
  const pick = async (lang: string, start: number) => {
    const { body } = await get(`src=1&ch=one.example&t=${D}&lang=${lang}`);
    return body.event.find((e: { start: number }) => e.start === start);
  };
  t.equal((await pick('de', D)).title, 'Mitternachtsnachrichten', 'requested (ISO 639-1)');
  t.equal((await pick('ger', D)).title, 'Mitternachtsnachrichten', 'requested (ISO 639-2/B)');
  t.equal((await pick('deu', D)).desc, 'Nachrichten um 00:00 UTC.', 'desc in the same language');
  t.equal((await pick('2', D)).title, 'Mitternachtsnachrichten', 'internal id 2 = German');
  t.equal((await pick('fr', D)).title, 'Midnight News', 'fallback: system default (eng)');
  t.equal((await pick('0', D)).title, 'Midnight News', '0 = system default');
  t.equal((await pick('en', D + 3600)).title, 'Nur Deutsch', 'fallback: any other');
  t.equal((await pick('en', D + 7200)).desc, 'Une <description> brute.');
});

t.test('rule 3: events with empty title and no description are omitted', async (t) => {
  const { get } = await setup(t);
  const { body } = await get(`src=1&ch=one.example&t=${D}`);
  t.notOk(body.event.some((e: { start: number }) => e.start === D + 4 * 3600));
  t.ok(body.event.every((e: { title: string; desc: string }) => e.title !== '' || e.desc !== ''));
});

t.test('rule 3: events with invalid timestamps are omitted', async (t) => {
  const { get, bed } = await setup(t);
  const db = bed.rt.source(1)!.db;
  db.addEvent('one.example', D + 20 * 3600, D + 20 * 3600, [
    { lang: 1, title: 'Zero length', desc: '' },
  ]);
  db.addEvent('one.example', D + 21 * 3600, D + 20 * 3600, [
    { lang: 1, title: 'Backwards', desc: '' },
  ]);
  bed.rt.sourceChanged(1);
  const { body } = await get(`src=1&ch=one.example&t=${D}`);
  t.notOk(
    body.event.some((e: { title: string }) => e.title === 'Zero length' || e.title === 'Backwards'),
  );
});

t.test('rule 4: one record per start time, chosen by language priority', async (t) => {
  const { get } = await setup(t);
  const at = D + 3 * 3600;
  const en = await get(`src=1&ch=one.example&t=${D}&lang=en`);
  const same = en.body.event.filter((e: { start: number }) => e.start === at);
  t.same(
    same.map((e: { title: string }) => e.title),
    ['Twice (English)'],
  );
  const de = await get(`src=1&ch=one.example&t=${D}&lang=de`);
  t.same(
    de.body.event
      .filter((e: { start: number }) => e.start === at)
      .map((e: { title: string }) => e.title),
    ['Doppelt (deutsch)'],
  );
});

t.test('rule 6: unknown channel, day without events, unknown source → {event: []}', async (t) => {
  const { get, dropRuntime } = await setup(t);
  for (const qs of [
    `src=1&ch=nope.example&t=${D}`,
    `src=1&ch=one.example&t=${D + 30 * 86400}`,
    `src=9&ch=one.example&t=${D}`,
    `src=0&ch=one.example&t=${D}`,
  ]) {
    const { res, body } = await get(qs);
    t.equal(res.statusCode, 200, qs);
    t.same(body, { event: [] }, qs);
  }
  dropRuntime();
  const { res, body } = await get(`src=1&ch=one.example&t=${D}`);
  t.equal(res.statusCode, 200, 'no EPG runtime at all');
  t.same(body, { event: [] });
});

t.test('rule 7: response headers', async (t) => {
  const { get } = await setup(t);
  const { res } = await get(`src=1&ch=one.example&t=${D}`);
  t.match(res.headers['content-type'], /^application\/json/);
  t.equal(res.headers['cache-control'], 'no-cache, no-store, must-revalidate');
  t.equal(res.headers['pragma'], 'no-cache');
  t.equal(res.headers['expires'], '0');
});

t.test('400: ch missing or empty, src/t not unsigned, unknown numeric lang', async (t) => {
  const { get } = await setup(t);
  for (const qs of [
    'src=1',
    'src=1&ch=',
    'src=-1&ch=a',
    'src=x&ch=a',
    'ch=a&t=1.5',
    'ch=a&t=-5',
    'ch=a&lang=999',
    'ch=a&lang=-1',
    'ch=a&lang=1.5',
    'ch=a&ch=b',
    'ch=a&t=1&t=2',
    'ch=a&src=1&src=2',
  ]) {
    const { res, body } = await get(qs);
    t.equal(res.statusCode, 400, qs);
    t.equal(res.headers['cache-control'], 'no-cache, no-store, must-revalidate', `${qs}: rule 7`);
    t.equal(res.headers['expires'], '0', `${qs}: rule 7`);
    t.equal(body.status, 400, `${qs}: JSON error body`);
    t.type(body.message, 'string');
  }
  t.equal(ERRORS.BAD_REQUEST.status, 400);
  const ok = await get('ch=a&lang=zz');
  t.equal(ok.res.statusCode, 200, 'unknown ISO code is no error: falls back');
});

t.test('rule 8: LRU cache per source, flushed by a source refresh and by retention', async (t) => {
  const { get, bed, src } = await setup(t);
  const store = bed.rt.source(1)!;
  const first = await get(`src=1&ch=one.example&t=${D}`);
  t.equal(store.cache.size, 1);
  // A change written behind the cache's back stays invisible until a flush trigger…
  store.db.addEvent('one.example', D + 22 * 3600, D + 23 * 3600, [
    { lang: 1, title: 'Sneaky', desc: '' },
  ]);
  const cached = await get(`src=1&ch=one.example&t=${D}`);
  t.same(cached.body, first.body, 'served from cache');
  // …trigger 1: a successful refresh of the source (it re-imports the file: Sneaky goes away,
  // but the cache must be rebuilt).
  src.refresh('test');
  await src.idle();
  t.equal(store.cache.size, 0, 'refresh flushed the cache');
  store.db.addEvent('one.example', D + 22 * 3600, D + 23 * 3600, [
    { lang: 1, title: 'Sneaky', desc: '' },
  ]);
  const fresh = await get(`src=1&ch=one.example&t=${D}`);
  t.ok(fresh.body.event.some((e: { title: string }) => e.title === 'Sneaky'));
  // trigger 3: a day leaves the retention window (the day timer at UTC midnight)
  t.equal(store.cache.size, 1);
  bed.clock.advance(18 * 3600 * 1000 + 1000);
  t.equal(store.cache.size, 0, 'day change flushed the cache');
  // capacity: 1024 entries, least recently used evicted
  for (let i = 0; i < 1030; i++) await get(`src=1&ch=c${i}&t=${D}`);
  t.equal(store.cache.size, 1024);
});
