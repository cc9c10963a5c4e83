// XMLTV import of real-world shapes: declared encodings (ISO-8859-1, windows-1251, UTF-16 with
// and without BOM), time forms without seconds or zone, gzip with trailing bytes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { EpgDatabase } from '../../src/epg/database.ts';
import { importXmltv } from '../../src/epg/xmltv-import.ts';
import { XmltvSource } from '../../src/epg/xmltv-source.ts';
import { silentLogger } from '../../src/log.ts';
import { epgTestBed, FIXTURE_DAY, sourceRecord } from '../helpers/epg-host.ts';

const PROG = (title: string, start = '20260310120000', stop = ' stop="20260310130000"') =>
  `<programme start="${start}"${stop} channel="c1"><title>${title}</title></programme>`;

async function importBytes(t: Test, bytes: Buffer, bed = epgTestBed(t)) {
  const path = join(bed.dir, `guide-${Math.random().toString(36).slice(2)}.xml`);
  writeFileSync(path, bytes);
  const src = new XmltvSource(
    bed.rt,
    sourceRecord({ id: 1, name: 'shapes', source: path, enable: true }),
    silentLogger,
  );
  t.teardown(() => src.close());
  await src.idle();
  const rows = bed.rt.source(1)!.db.dayRows('c1', FIXTURE_DAY, FIXTURE_DAY + 86400);
  return { bed, st: src.status(), rows, src };
}

t.test('the declared or BOM-marked encoding decodes the text', async (t) => {
  const decl = (enc: string, q = '"') => `<?xml version=${q}1.0${q} encoding=${q}${enc}${q}?>\n`;
  const cases: [string, Buffer, string][] = [
    [
      'ISO-8859-1',
      Buffer.from(`${decl('ISO-8859-1')}<tv>${PROG('Caf\xe9 M\xfcller')}</tv>`, 'latin1'),
      'Café Müller',
    ],
    [
      'iso-8859-1 in single quotes',
      Buffer.from(`${decl('iso-8859-1', "'")}<tv>${PROG('Caf\xe9')}</tv>`, 'latin1'),
      'Café',
    ],
    [
      'windows-1251',
      Buffer.concat([
        Buffer.from(`${decl('windows-1251')}<tv>${PROG('\u0000').split('\u0000')[0]}`),
        Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]),
        Buffer.from('</title></programme></tv>'),
      ]),
      'Привет',
    ],
    [
      'UTF-16LE with BOM',
      Buffer.concat([
        Buffer.from([0xff, 0xfe]),
        Buffer.from(`${decl('UTF-16')}<tv>${PROG('Café ✓')}</tv>`, 'utf16le'),
      ]),
      'Café ✓',
    ],
    [
      'UTF-16BE without BOM',
      Buffer.from(`${decl('UTF-16')}<tv>${PROG('Ωmega')}</tv>`, 'utf16le').swap16(),
      'Ωmega',
    ],
    [
      'UTF-8 with BOM',
      Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from(`${decl('UTF-8')}<tv>${PROG('Äpfel')}</tv>`),
      ]),
      'Äpfel',
    ],
    ['no declaration (UTF-8)', Buffer.from(`<tv>${PROG('Öl')}</tv>`), 'Öl'],
  ];
  for (const [name, bytes, title] of cases) {
    const { st, rows } = await importBytes(t, bytes);
    t.equal(st.state, 'ready', `${name}: ${st.message ?? ''}`);
    t.same(
      rows.map((r) => r.title),
      [title],
      name,
    );
  }
});

t.test('an unsupported declared encoding is refused; the previous data stays', async (t) => {
  const good = await importBytes(t, Buffer.from(`<tv>${PROG('Kept')}</tv>`));
  const path = join(good.bed.dir, 'bad-enc.xml');
  writeFileSync(path, `<?xml version="1.0" encoding="x-made-up"?>\n<tv>${PROG('New')}</tv>`);
  good.src.update(sourceRecord({ id: 1, name: 'shapes', source: path, enable: true }));
  await good.src.idle();
  const st = good.src.status();
  t.equal(st.state, 'error');
  t.match(st.lastError, /encoding "x-made-up" is not supported/);
  const rows = good.bed.rt.source(1)!.db.dayRows('c1', FIXTURE_DAY, FIXTURE_DAY + 86400);
  t.same(
    rows.map((r) => r.title),
    ['Kept'],
  );
});

t.test('time forms: no seconds, date only, no zone, colon in the zone', async (t) => {
  const xml = `<tv>
    ${PROG('no seconds', '202603100100 +0100', ' stop="202603100200 +0100"')}
    ${PROG('no zone', '20260310020000', ' stop="20260310030000"')}
    ${PROG('colon zone', '20260310050000 +01:00', ' stop="20260310060000+01:00"')}
    ${PROG('date only', '20260311 +0100', ' stop="20260312 +0100"')}
  </tv>`;
  const { rows } = await importBytes(t, Buffer.from(xml));
  const at = (title: string) => rows.find((r) => r.title === title);
  t.equal(at('no seconds')?.start_time, FIXTURE_DAY);
  t.equal(at('no zone')?.start_time, FIXTURE_DAY + 2 * 3600);
  t.equal(at('colon zone')?.start_time, FIXTURE_DAY + 4 * 3600);
  t.equal(at('date only')?.start_time, FIXTURE_DAY + 23 * 3600, '2026-03-11 00:00 +0100');
});

t.test('gzip followed by trailing bytes: refused with a message naming gzip', async (t) => {
  const bytes = Buffer.concat([gzipSync(`<tv>${PROG('X')}</tv>`), Buffer.from('GARBAGE\n')]);
  const { st } = await importBytes(t, bytes);
  t.equal(st.state, 'error');
  t.match(st.lastError, /^gzip decompression failed: /);
});

t.test(
  'programmes without stop: closed by the next start; out of order ones are counted',
  async (t) => {
    const none = '';
    const xml = `<tv>
    ${PROG('B', '20260310130000', none)}
    ${PROG('A', '20260310120000', none)}
    ${PROG('C', '20260310140000', none)}
    ${PROG('D', '20260310150000')}
  </tv>`.replace(' stop="20260310130000"', ' stop="20260310160000"');
    const bed = epgTestBed(t);
    const db = new EpgDatabase(join(bed.dir, 'direct.sqlite'), { staging: true });
    t.teardown(() => db.close());
    const progress = { bytes: 0, channels: 0, programmes: 0, skipped: 0 };
    await importXmltv(
      (async function* () {
        yield Buffer.from(xml);
      })(),
      db,
      { forceGzip: false, window: { from: 0, to: 2 ** 32 }, progress },
    );
    const rows = db.dayRows('c1', FIXTURE_DAY, FIXTURE_DAY + 86400);
    t.same(
      rows.map((r) => [r.title, (r.stop_time - r.start_time) / 3600]),
      [
        ['A', 2],
        ['C', 1],
        ['D', 1],
      ],
    );
    t.equal(progress.programmes, 3);
    t.equal(progress.skipped, 1, 'B (no stop, followed by an earlier start) counted as skipped');
    const viaSource = await importBytes(t, Buffer.from(xml));
    t.equal(viaSource.st.skipped, 1, 'the source status shows the count after the import');
  },
);
