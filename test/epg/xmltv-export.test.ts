// XMLTV output of a rich database checked by tv_validate_file (xmltv-util): several languages,
// unmapped language codes (empty lang), ratings with and without a system, icons, zones with
// half hours on both sides of UTC, only programmes not yet over, a channel_id from two sources
// listed once with a warning.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino, { type Logger } from 'pino';
import t from 'tap';
import { buildXmltvBodies } from '../../src/epg/xmltv-export.ts';
import { XmltvSource } from '../../src/epg/xmltv-source.ts';
import { epgTestBed, FIXTURE_DAY, sourceRecord } from '../helpers/epg-host.ts';

const run = promisify(execFile);
const DTD = '/usr/share/xmltv/xmltv.dtd';

const GUIDE_A = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE tv SYSTEM "xmltv.dtd">
<tv>
<channel id="in.example"><display-name lang="hi">भारत</display-name><display-name lang="en">India</display-name><icon src="http://logos.example/in.png"/></channel>
<channel id="nf.example"><display-name>Newfoundland</display-name></channel>
<channel id="shared.example"><display-name>Shared A</display-name></channel>
<programme start="20260310120000 +0530" stop="20260310130000 +0530" channel="in.example"><title lang="hi">समाचार</title><title lang="en">News</title><title lang="tlh">Qapla</title><desc lang="xx-YY">unmapped</desc><rating><value>U</value></rating><rating system="CBFC"><value>UA</value></rating></programme>
<programme start="20260310100000 -0330" stop="20260310113000 -0330" channel="nf.example"><title>Fish &amp; Chips</title></programme>
<programme start="20260310000000 +0000" stop="20260310050000 +0000" channel="nf.example"><title>Over</title></programme>
<programme start="20260310050000 +0000" stop="20260310060000 +0000" channel="nf.example"><title>Ends now</title></programme>
<programme start="20260310060000 +0000" stop="20260310070000 +0000" channel="shared.example"><title>From A</title></programme>
</tv>`;
const GUIDE_B = `<tv><channel id="shared.example"><display-name>Shared B</display-name></channel>
<programme start="20260310060000" stop="20260310070000" channel="shared.example"><title>From B</title></programme></tv>`;

t.test('a rich guide renders valid XMLTV', async (t) => {
  const bed = epgTestBed(t, FIXTURE_DAY + 6 * 3600);
  const warnings: string[] = [];
  (bed.host as { log: Logger }).log = pino(
    { level: 'warn' },
    { write: (line: string) => void warnings.push(JSON.parse(line).msg) },
  );
  const sources = [GUIDE_A, GUIDE_B].map((xml, i) => {
    const path = join(bed.dir, `g${i}.xml`);
    writeFileSync(path, xml);
    return new XmltvSource(
      bed.rt,
      sourceRecord({ id: i + 1, name: `g${i}`, source: path, enable: true }),
      bed.rt.log,
    );
  });
  for (const s of sources) {
    t.teardown(() => s.close());
    await s.idle();
    t.equal(s.status().state, 'ready', s.status().message ?? '');
  }
  const xml = (
    await buildXmltvBodies(bed.rt, bed.rt.allChannels(), {
      sourceInfoName: 'Guide & Co',
      sourceInfoUrl: 'http://guide.example/?a=1&b=2',
    })
  ).plain.toString();
  const file = join(bed.dir, 'out.xml');
  writeFileSync(file, xml);
  const { stdout, stderr } = await run('tv_validate_file', ['--dtd-file', DTD, file]).catch(
    (err: { stdout: string; stderr: string }) => err,
  );
  t.match(`${stdout}${stderr}`, /Validated ok/, `${stdout}${stderr}`);

  t.match(
    xml,
    'source-info-name="Guide &amp; Co" source-info-url="http://guide.example/?a=1&amp;b=2"',
  );
  t.match(xml, '<icon src="http://logos.example/in.png"/>');
  t.match(xml, 'start="20260310120000 +0530" stop="20260310130000 +0530" channel="in.example"');
  t.match(xml, 'start="20260310100000 -0330" stop="20260310113000 -0330" channel="nf.example"');
  t.match(xml, '<title lang="hi">समाचार</title>');
  t.match(xml, '<title lang="">Qapla</title>', 'unmapped language: empty lang, entry kept');
  t.match(xml, '<desc lang="">unmapped</desc>');
  t.match(xml, '<rating>\n      <value>U</value>', 'no system imported: no system attribute');
  t.notMatch(xml, 'system=""');
  t.match(xml, '<rating system="CBFC">');
  t.notMatch(xml, '>Over<', 'ended before now: not output');
  t.match(xml, '>Ends now<', 'stop == now is output');
  t.equal(xml.split('<channel id="shared.example">').length - 1, 1, 'listed once');
  t.match(xml, '>From A<', 'the lowest source id wins');
  t.notMatch(xml, '>From B<');
  t.ok(
    warnings.some((w) => /several sources/.test(w)),
    'a warning names the duplicate',
  );
});

t.test('an empty source-info-name or source-info-url is omitted, not written as ""', async (t) => {
  const bed = epgTestBed(t, FIXTURE_DAY + 6 * 3600);
  const path = join(bed.dir, 'g.xml');
  writeFileSync(path, GUIDE_B);
  const src = new XmltvSource(
    bed.rt,
    sourceRecord({ id: 1, name: 'g', source: path, enable: true }),
    bed.rt.log,
  );
  t.teardown(() => src.close());
  await src.idle();
  const head = async (sourceInfoName: string, sourceInfoUrl: string) => {
    const xml = (
      await buildXmltvBodies(bed.rt, bed.rt.allChannels(), { sourceInfoName, sourceInfoUrl })
    ).plain.toString();
    return xml.slice(xml.indexOf('<tv'), xml.indexOf('>', xml.indexOf('<tv')) + 1);
  };
  t.equal(await head('sluice', ''), '<tv source-info-name="sluice" generator-info-name="sluice">');
  t.equal(
    await head('', 'http://guide.example/'),
    '<tv source-info-url="http://guide.example/" generator-info-name="sluice">',
  );
  t.equal(await head('', ''), '<tv generator-info-name="sluice">');
  t.equal(await head('\u0001', ''), '<tv generator-info-name="sluice">', 'empty once escaped');
});
