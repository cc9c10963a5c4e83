// EIT versions as a multiplex sends them: two services in one stream (p/f and schedule), p/f
// roll-over keeping the past event, a schedule version that drops a cancelled event, an event
// spanning UTC midnight (listed on the day it starts), an event with a description only.
import Fastify from 'fastify';
import t from 'tap';
import { epgRoutes } from '../../src/api/routes/epg.ts';
import { epgDriver } from '../../src/drivers/epg.ts';
import { EIT_SINK_SERVICE } from '../../src/engine/bus.ts';
import { serviceChannelId } from '../../src/epg/eit-import.ts';
import { buildXmltvBodies } from '../../src/epg/xmltv-export.ts';
import { applied } from '../helpers/desired.ts';
import { type EventSpec, eitSection, shortEvent } from '../helpers/epg-eit.ts';
import { epgTestBed, FIXTURE_DAY } from '../helpers/epg-host.ts';

const H = 3600;
const D = FIXTURE_DAY;
const ONID = 8468;
const TSID = 2;
const ev = (id: number, start: number, duration: number, title: string, text = ''): EventSpec => ({
  id,
  start,
  duration,
  descriptors: [shortEvent('eng', Buffer.from(title, 'latin1'), Buffer.from(text, 'latin1'))],
});

t.test('EIT versions from a two-service multiplex', async (t) => {
  const bed = epgTestBed(t, D + 10 * H);
  const inst = await epgDriver.create(applied('epg', 'epg', {}), bed.host);
  t.teardown(() => inst.close());
  const sink = bed.host.services.get(EIT_SINK_SERVICE)!;
  const app = Fastify();
  await app.register(epgRoutes, { epg: () => bed.rt });
  t.teardown(() => app.close());
  type SectionSpec = Omit<Parameters<typeof eitSection>[0], 'tsid' | 'onid'>;
  const send = (o: SectionSpec) => {
    sink.section({ stream: 'mux', pid: 0x12 }, eitSection({ ...o, tsid: TSID, onid: ONID }));
  };
  const titles = async (sid: number, at = D) => {
    bed.clock.advance(1000); // the publish delay
    const res = await app.inject(
      `/data/epg/channel?src=0&ch=${serviceChannelId(ONID, TSID, sid)}&t=${at}`,
    );
    return (JSON.parse(res.body).event as { title: string; start: number }[]).map((e) => e.title);
  };

  // p/f of both services: present (section 0) and following (section 1)
  for (const sid of [101, 102]) {
    send({ tableId: 0x4e, sid, section: 0, events: [ev(1, D + 10 * H, H, `A${sid}`)] });
    send({ tableId: 0x4e, sid, section: 1, events: [ev(2, D + 11 * H, H, `B${sid}`)] });
  }
  t.same(await titles(101), ['A101', 'B101']);
  t.same(await titles(102), ['A102', 'B102'], 'services kept apart');

  // roll-over at 11:00: present = B, following = C; A (now past) stays in the day
  bed.clock.advance(H * 1000);
  send({ tableId: 0x4e, sid: 101, version: 1, section: 0, events: [ev(2, D + 11 * H, H, 'B101')] });
  send({
    tableId: 0x4e,
    sid: 101,
    version: 1,
    section: 1,
    events: [ev(3, D + 12 * H, H, 'C101')],
  });
  t.same(await titles(101), ['A101', 'B101', 'C101'], 'p/f roll-over keeps the past event');

  // schedule: version 0 has 13:00 and 14:00, version 1 drops 14:00 (cancelled)
  send({
    tableId: 0x50,
    sid: 102,
    section: 0,
    events: [ev(10, D + 13 * H, H, 'Film'), ev(11, D + 14 * H, H, 'Cancelled')],
  });
  t.same(await titles(102), ['A102', 'B102', 'Film', 'Cancelled']);
  send({
    tableId: 0x50,
    sid: 102,
    version: 1,
    section: 0,
    events: [ev(10, D + 13 * H, H, 'Film')],
  });
  t.same(
    await titles(102),
    ['A102', 'B102', 'Film'],
    'an event missing from the new version of its schedule section is removed',
  );
  // a schedule version that no longer carries events already over keeps them (history)
  send({
    tableId: 0x50,
    sid: 102,
    section: 8,
    events: [ev(20, D + 9 * H, H, 'Early'), ev(21, D + 15 * H, H, 'Later')],
  });
  send({
    tableId: 0x50,
    sid: 102,
    version: 1,
    section: 8,
    events: [ev(21, D + 15 * H, H, 'Later')],
  });
  t.ok((await titles(102)).includes('Early'), 'an ended event is not removed with its section');

  // spanning midnight: listed on the UTC day of its start only
  send({ tableId: 0x50, sid: 101, section: 16, events: [ev(30, D + 23 * H, 2 * H, 'Late Movie')] });
  t.ok((await titles(101, D)).includes('Late Movie'), 'on the day it starts');
  t.notOk((await titles(101, D + 86400)).includes('Late Movie'), 'not on the next day');

  // no title, a description: in the JSON day (rule 3 omits only events with neither), not in
  // XMLTV (the DTD needs a title)
  send({ tableId: 0x50, sid: 101, section: 24, events: [ev(40, D + 20 * H, H, '', 'Only text')] });
  bed.clock.advance(1000);
  const res = await app.inject(`/data/epg/channel?src=0&ch=${ONID}.${TSID}.101&t=${D}`);
  t.ok(
    JSON.parse(res.body).event.some(
      (e: { title: string; desc: string }) => e.title === '' && e.desc === 'Only text',
    ),
  );
  const xml = (
    await buildXmltvBodies(bed.rt, bed.rt.allChannels(), { sourceInfoName: 'n', sourceInfoUrl: '' })
  ).plain.toString();
  t.notMatch(xml, 'Only text');
  t.match(xml, '<title lang="en">Late Movie</title>');
});
