// EIT through a real UDP input: a crafted TS (PAT/PMT, PCR, video, EIT p/f on PID 0x12 built
// with the EPG helper's section builder) played by multicat to a stream with a udp input and
// `epg-export: true`, with the EPG driver running (it registers the EIT sink). The events must
// appear in the src-0 database, on /data/epg/channel and in the XMLTV export (DTD-valid).
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import t from 'tap';
import { epgRoutes } from '../../src/api/routes/epg.ts';
import { epgDriver } from '../../src/drivers/epg.ts';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { EPG_SERVICE } from '../../src/epg/runtime.ts';
import { buildXmltvBodies } from '../../src/epg/xmltv-export.ts';
import { applied } from '../helpers/desired.ts';
import { eitSection, shortEvent } from '../helpers/epg-eit.ts';
import { freePort, makeHost, streamResource, tempDir, waitFor } from '../helpers/stream-host.ts';
import { cleanStream, psiPackets, VIDEO_PID } from '../helpers/ts-craft.ts';

const EIT_PID = 0x12;
const dayStart = (t: number) => t - (t % 86_400);
const NULL_PID = 0x1fff;
const PLAY_MS = 6000;
/** EIT p/f is repeated every 500 ms (EN 300 468 asks for at least every 2 s). */
const EIT_EVERY_MS = 500;

/** The TS file: cleanStream's null packets replaced by EIT packets every EIT_EVERY_MS. */
function craftTs(file: string, eit: Buffer): void {
  const cc = { n: 0 };
  const out: Buffer[] = [];
  for (const tick of cleanStream({ ms: PLAY_MS })) {
    const pk = [...tick.packets];
    if (tick.t % EIT_EVERY_MS === 0) {
      const eitPk = psiPackets(EIT_PID, [eit], cc);
      let k = 0;
      for (let i = 0; i < pk.length && k < eitPk.length; i++) {
        if ((((pk[i]![1]! & 0x1f) << 8) | pk[i]![2]!) === NULL_PID) pk[i] = eitPk[k++]!;
      }
      if (k < eitPk.length) throw new Error('not enough null packets for the EIT');
    }
    out.push(...pk);
  }
  writeFileSync(file, Buffer.concat(out));
}

t.test('EIT from a udp input reaches the EPG database, JSON day and XMLTV', async (t) => {
  const dir = tempDir(t);
  const host = makeHost(dir);
  const epg = await epgDriver.create(applied('epg', 'epg', {}), host);
  t.teardown(() => epg.close());
  const rt = host.services.get(EPG_SERVICE)!;

  const now = Math.floor(Date.now() / 1000);
  const start = now - (now % 60) - 600; // on air now, started ten minutes ago
  const eit = eitSection({
    tableId: 0x4e,
    sid: 1,
    tsid: 1,
    onid: 1,
    events: [
      {
        id: 11,
        start,
        duration: 3600,
        descriptors: [shortEvent('eng', Buffer.from('Harbour News'), Buffer.from('Boats & tides'))],
      },
      {
        id: 12,
        start: start + 3600,
        duration: 1800,
        descriptors: [shortEvent('eng', Buffer.from('Weather'), Buffer.from('Rain later'))],
      },
    ],
  });
  const file = join(dir, 'eit.ts');
  craftTs(file, eit);
  const ing = spawnSync('ingests', ['-p', String(VIDEO_PID), file]);
  t.equal(ing.status, 0, `ingests made the timing file ${ing.stderr}`);

  const port = await freePort();
  const s = (await new StreamDriver().create(
    streamResource({
      'stream-name': 'harbour',
      'epg-export': true,
      'epg-channel': 'harbour.tv',
      input: [{ type: 'udp', port }],
    }),
    host,
  )) as StreamInstance;
  t.teardown(() => s.close());

  const mc = spawn('multicat', ['-U', file, `127.0.0.1:${port}`], { stdio: 'ignore' });
  t.teardown(() => {
    if (mc.exitCode === null) mc.kill('SIGKILL');
  });

  await waitFor(() => s.state() === 'running', 5000, 'the stream running on multicat');
  const db = () => rt.source(0)?.db;
  await waitFor(() => db()?.channel('harbour.tv'), 5000, 'EIT imported on the bound channel');

  const app = Fastify();
  await app.register(epgRoutes, { ctx: { services: host.services } });
  t.teardown(() => app.close());
  type Day = { event: { title: string; desc: string; start: number }[] };
  const dayOf = async (at: number): Promise<Day> =>
    JSON.parse((await app.inject(`/data/epg/channel?src=0&ch=harbour.tv&t=${at}`)).body) as Day;
  const day = await waitFor(
    async () => {
      // The JSON is one UTC day: after 23:10 the second event falls on the next one.
      const days = [await dayOf(start)];
      if (dayStart(start + 3600) !== dayStart(start)) days.push(await dayOf(start + 3600));
      const j = { event: days.flatMap((d) => d.event) };
      return j.event.length >= 2 ? j : undefined;
    },
    5000,
    'events published on /data/epg/channel (after the importer flush)',
  );
  t.same(
    day!.event.map((e) => [e.start, e.title, e.desc]),
    [
      [start, 'Harbour News', 'Boats & tides'],
      [start + 3600, 'Weather', 'Rain later'],
    ],
    'both events, times and texts as sent',
  );

  const { plain } = await buildXmltvBodies(rt, [{ source: 0, channel: 'harbour.tv' }], {
    sourceInfoName: 'test',
    sourceInfoUrl: 'http://127.0.0.1/',
  });
  const xml = plain.toString('utf8');
  t.match(xml, /<channel id="harbour\.tv">/);
  t.match(xml, /<title lang="en">Harbour News<\/title>/);
  t.match(xml, /<desc lang="en">Boats &amp; tides<\/desc>/);
  const xf = join(dir, 'out.xml');
  writeFileSync(xf, plain);
  const v = spawnSync('tv_validate_file', ['--dtd-file', '/usr/share/xmltv/xmltv.dtd', xf]);
  t.equal(v.status, 0, `tv_validate_file accepts the export ${v.stdout}${v.stderr}`);
});
