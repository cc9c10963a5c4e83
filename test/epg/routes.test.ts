// Admin routes: read-only SQL, forced refresh with its status, languages, XMLTV cache reset.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import t from 'tap';
import { epgRoutes } from '../../src/api/routes/epg.ts';
import { XmltvSource } from '../../src/epg/xmltv-source.ts';
import { HttpError } from '../../src/errors.ts';
import { silentLogger } from '../../src/log.ts';
import { epgTestBed, fixture, sourceRecord } from '../helpers/epg-host.ts';

t.test('admin routes', async (t) => {
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
  const app = Fastify();
  app.setErrorHandler((err, _req, reply) => {
    const status = err instanceof HttpError ? err.status : 500;
    return reply.code(status).send({ status, message: (err as Error).message });
  });
  await app.register(epgRoutes, { epg: () => bed.rt });
  t.teardown(() => app.close());
  const sql = (s: string, q: string) =>
    app.inject({ method: 'POST', url: `/data/epg/sql?s=${s}`, payload: { sql: q } });

  const ok = await sql('1', 'SELECT channel_id FROM channel ORDER BY channel_id');
  t.equal(ok.statusCode, 200);
  t.same(ok.json(), {
    columns: ['channel_id'],
    rows: [['one.example'], ['three.example'], ['two.example']],
    truncated: false,
  });
  const many = await sql(
    '1',
    'WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n',
  );
  t.equal(many.json().rows.length, 1000);
  t.equal(many.json().truncated, true, 'row cap');
  for (const bad of [
    'DELETE FROM event',
    'DROP TABLE event',
    'SELECT 1; SELECT 2',
    'PRAGMA journal_mode = DELETE',
    'nonsense',
  ]) {
    const r = await sql('1', bad);
    t.equal(r.statusCode, 400, bad);
  }
  t.ok(bed.rt.source(1)!.db.counts().events > 0, 'nothing deleted');
  t.equal((await sql('7', 'SELECT 1')).statusCode, 404, 'unknown source');
  t.equal((await sql('x', 'SELECT 1')).statusCode, 400);

  const upd = await app.inject({ method: 'POST', url: '/data/epg/update?s=1' });
  t.equal(upd.statusCode, 202);
  t.match(upd.json(), {
    status: 202,
    source: 1,
    state: 'importing',
    statusUrl: '/data/epg/source?s=1',
  });
  const during = await app.inject('/data/epg/source?s=1');
  t.equal(during.json().state, 'importing');
  await src.idle();
  const after = await app.inject('/data/epg/source?s=1');
  t.match(after.json(), { id: 1, state: 'ready', updates: 2 });
  t.equal((await app.inject({ method: 'POST', url: '/data/epg/update?s=5' })).statusCode, 404);

  const lang = (await app.inject('/schema/lang')).json();
  t.match(lang.lang[0], { id: 1, 'iso639-1': 'en', 'iso639-2': 'eng', name: 'English' });
  t.ok(
    lang.lang.some(
      (l: { 'iso639-2': string; 'iso639-2t': string }) =>
        l['iso639-2'] === 'ger' && l['iso639-2t'] === 'deu',
    ),
  );

  let resets = 0;
  bed.rt.resetListeners.add(() => resets++);
  const reset = await app.inject({ method: 'POST', url: '/xmltv/reset-cache' });
  t.equal(reset.statusCode, 200);
  t.equal(resets, 1);
});
