// EIT: text tables of EN 300 468 Annex A, section parsing (short, multi-part extended, rating),
// and the importer into the src-0 database through the EIT sink (sections handed in directly,
// as a stream with epg-export does), TOT time zones, versioning, cache flush and XMLTV.
import Fastify from 'fastify';
import t from 'tap';
import { epgRoutes } from '../../src/api/routes/epg.ts';
import { epgDriver } from '../../src/drivers/epg.ts';
import { EIT_SINK_SERVICE } from '../../src/engine/bus.ts';
import { parseEitSection } from '../../src/epg/eit.ts';
import { serviceChannelId } from '../../src/epg/eit-import.ts';
import { decodeDvbText, encode6937 } from '../../src/epg/text.ts';
import { buildXmltvBodies } from '../../src/epg/xmltv-export.ts';
import { applied } from '../helpers/desired.ts';
import {
  eitSection,
  extendedEvent,
  parentalRating,
  shortEvent,
  totSection,
} from '../helpers/epg-eit.ts';
import { epgTestBed, FIXTURE_DAY } from '../helpers/epg-host.ts';

const b = (...parts: (number[] | Buffer | string)[]) =>
  Buffer.concat(
    parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))),
  );

t.test('Annex A text tables and control codes', async (t) => {
  t.equal(decodeDvbText(b('Caf', [0xc2], 'e')), 'Café', 'ISO 6937 acute + e');
  t.equal(decodeDvbText(b([0xc8], 'Uber ', [0xcf], 'cesky')), 'Über česky', 'diaeresis, caron');
  t.equal(decodeDvbText(b('5 ', [0xa4], ' ', [0xd3], ' 2026')), '5 € © 2026', 'table 00 specials');
  t.equal(decodeDvbText(b('line1', [0x8a], 'line2')), 'line1\nline2', 'CR/LF');
  t.equal(decodeDvbText(b([0x86], 'bold', [0x87], ' text')), 'bold text', 'emphasis dropped');
  t.equal(
    decodeDvbText(b([0x01], [0xbf, 0xe0, 0xd8, 0xd2, 0xd5, 0xe2])),
    'Привет',
    '0x01 = ISO 8859-5',
  );
  t.equal(
    decodeDvbText(b([0x10, 0x00, 0x02], 'Pod', [0xb9], 'ivn')),
    'Podšivn',
    '0x10 0x00 0x02 = 8859-2',
  );
  t.equal(decodeDvbText(b([0x10, 0x00, 0x01], 'Gar', [0xe7], 'on')), 'Garçon', '8859-1');
  t.equal(decodeDvbText(b([0x05], [0xdd, 0xfe])), 'İş', '0x05 = 8859-9');
  t.equal(
    decodeDvbText(b([0x11], Buffer.from('\u00fcber \u65e5\u672c', 'utf16le').swap16())),
    'über 日本',
    'UTF-16BE',
  );
  t.equal(decodeDvbText(b([0x15], Buffer.from('Ελληνικά ✓', 'utf8'))), 'Ελληνικά ✓', 'UTF-8');
  t.equal(decodeDvbText(b([0x15], Buffer.from('a\ue08ab', 'utf8'))), 'a\nb', 'UTF-8 CR/LF');
  t.equal(
    decodeDvbText(encode6937('Señor Çà Łódź\nÅngström')),
    'Señor Çà Łódź\nÅngström',
    'round trip',
  );
  t.equal(decodeDvbText(Buffer.alloc(0)), '');
});

const EV_START = FIXTURE_DAY + 8 * 3600;

function sampleSection(version = 0) {
  return eitSection({
    tableId: 0x50,
    sid: 101,
    tsid: 2,
    onid: 8468,
    version,
    events: [
      {
        id: 1001,
        start: EV_START,
        duration: 3600,
        descriptors: [
          shortEvent('ger', encode6937('Tagesschau für Größere'), encode6937('Nachrichten')),
          shortEvent('eng', b([0x15], Buffer.from('News — “today”', 'utf8')), b('')),
          extendedEvent(
            0,
            2,
            'eng',
            b([0x15], Buffer.from('Part one ends with ', 'utf8'), Buffer.from([0xe2, 0x82])),
          ),
          extendedEvent(
            1,
            2,
            'eng',
            b([0x15], Buffer.from([0xac]), Buffer.from(' and part two', 'utf8')),
            [[b('Director'), b('Jane Doe')]],
          ),
          extendedEvent(2, 2, 'eng', b([0x15], Buffer.from(', three.', 'utf8'))),
          parentalRating('DEU', 0x09),
        ],
      },
      {
        id: 1002,
        start: EV_START + 3600,
        duration: 1800,
        descriptors: [shortEvent('eng', b('Weather ', [0xc1], 'a la carte'), b(''))],
      },
    ],
  });
}

t.test('EIT section parsing: short, multi-part extended (split UTF-8), rating', async (t) => {
  const sec = parseEitSection(sampleSection());
  t.equal(sec.tableId, 0x50);
  t.ok(sec.actual);
  t.same([sec.onid, sec.tsid, sec.serviceId], [8468, 2, 101]);
  const [a, bb] = sec.events;
  t.equal(a!.start, EV_START);
  t.equal(a!.duration, 3600);
  const de = a!.texts.find((x) => x.lang === 'ger')!;
  t.equal(de.title, 'Tagesschau für Größere');
  t.equal(de.desc, 'Nachrichten');
  const en = a!.texts.find((x) => x.lang === 'eng')!;
  t.equal(en.title, 'News — “today”');
  t.equal(
    en.desc,
    'Part one ends with € and part two, three.\nDirector: Jane Doe',
    'parts joined, euro split across parts',
  );
  t.same(a!.ratings, [{ country: 'DEU', age: 12 }]);
  t.equal(bb!.texts[0]!.title, 'Weather à la carte');
});

t.test(
  'EIT importer (epg driver, EIT sink): DB, versioning, TOT zone, cache flush, XMLTV',
  async (t) => {
    const bed = epgTestBed(t, FIXTURE_DAY + 6 * 3600);
    const inst = await epgDriver.create(applied('epg', 'epg', {}), bed.host);
    t.teardown(() => inst.close());
    const sink = bed.host.services.get(EIT_SINK_SERVICE)!;
    t.ok(sink, 'EIT sink registered');
    const app = Fastify();
    await app.register(epgRoutes, { epg: () => bed.rt });
    t.teardown(() => app.close());
    const day = async (ch: string, lang = 'eng') =>
      JSON.parse(
        (await app.inject(`/data/epg/channel?src=0&ch=${ch}&t=${EV_START}&lang=${lang}`)).body,
      );

    const ch = serviceChannelId(8468, 2, 101);
    t.equal(ch, '8468.2.101');
    t.same(await day(ch), { event: [] }, 'nothing yet (and now cached)');
    sink.section({ stream: 'mux', pid: 0x12 }, totSection(EV_START, 'DEU', 60));
    sink.section({ stream: 'mux', pid: 0x12 }, sampleSection(0));
    t.same(await day(ch), { event: [] }, 'not yet published (cache holds until the flush)');
    bed.clock.advance(1000);
    const got = await day(ch);
    t.same(
      got.event.map((e: { title: string }) => e.title),
      ['News — “today”', 'Weather à la carte'],
    );
    t.equal(got.event[0].end - got.event[0].start, 3600);
    const de = await day(ch, 'de');
    t.equal(de.event[0].title, 'Tagesschau für Größere');
    const db = bed.rt.source(0)!.db;
    t.equal(db.channel(ch)!.time_zone, 3600, 'zone from the TOT');
    t.same([...db.ratings(ch, 0).values()].flat(), [{ system: 'DVB:DEU', value: '12' }]);

    // the same version again is skipped; a new version replaces the events
    const counter = bed.rt.counter;
    sink.section({ stream: 'mux', pid: 0x12 }, sampleSection(0));
    bed.clock.advance(1000);
    t.equal(bed.rt.counter, counter, 'unchanged version: nothing published');
    const v1 = eitSection({
      tableId: 0x50,
      sid: 101,
      tsid: 2,
      onid: 8468,
      version: 1,
      events: [
        {
          id: 1001,
          start: EV_START,
          duration: 5400,
          descriptors: [shortEvent('eng', b('Long News'), b(''))],
        },
      ],
    });
    sink.section({ stream: 'mux', pid: 0x12 }, v1);
    bed.clock.advance(1000);
    t.ok(bed.rt.counter > counter, 'new events bump the XMLTV counter');
    const after = await day(ch);
    t.same(
      after.event.map((e: { title: string }) => e.title),
      ['Long News'],
      'replaced; overlapped event gone',
    );

    // a single-programme stream bound to an EPG channel: its EIT actual lands on that channel_id
    bed.rt.setBinding('news', {
      stream: 'news',
      source: 0,
      channel: 'news.hd',
      channelSets: [1],
      mpts: false,
    });
    sink.section({ stream: 'news', pid: 0x12 }, sampleSection(3));
    bed.clock.advance(1000);
    t.equal((await day('news.hd')).event.length, 2, 'bound stream → epg-channel');

    // XMLTV of set 1 carries it, with the TOT zone
    bed.rt.channelSets.set(1, { id: 1, name: 'x' });
    const bodies = await buildXmltvBodies(bed.rt, bed.rt.channelsOfSet(1), {
      sourceInfoName: 'n',
      sourceInfoUrl: '',
    });
    const xml = bodies.plain.toString();
    t.match(xml, '<channel id="news.hd">');
    t.match(xml, '<title lang="de">Tagesschau für Größere</title>');

    // corrupt sections are counted, not thrown
    sink.section({ stream: 'mux', pid: 0x12 }, Buffer.from([0x4e, 0xf0, 0xff, 1, 2, 3]));
    t.equal((inst.status() as unknown as { eit: { errors: number } }).eit.errors, 1);
  },
);
