// Size caps of an XMLTV import: a huge text, attribute value, comment, CDATA section, name or
// entity reference, too many attributes, too deep a nesting, and a document expanding past the
// size cap are refused with a message naming the cap — after reading little more than the cap
// (the parser does not accumulate the giant token first) — and the input is closed.
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { EpgDatabase } from '../../src/epg/database.ts';
import { importXmltv } from '../../src/epg/xmltv-import.ts';
import { IMPORT_LIMITS, type ImportLimits } from '../../src/epg/xmltv-limits.ts';
import { epgTestBed, FIXTURE_DAY } from '../helpers/epg-host.ts';

const CHUNK = 16 * 1024;
/** How much each giant input offers: far past every cap, small enough for a quick run. */
const OFFERED = 8 * 1024 * 1024;
/** A refused import stops reading within this much input. */
const READ_AT_MOST = 256 * 1024;
const MAX = IMPORT_LIMITS.maxTextChars;
const PROG = '<programme start="20260310120000" stop="20260310130000" channel="c1">';

/** `prefix`, then `fill(i)` pieces in CHUNK-sized buffers up to OFFERED bytes, then `suffix`;
 *  `closed` turns true when the consumer ends the iteration early. */
function feed(prefix: string, fill: (i: number) => string, suffix: string) {
  const state = { closed: false, done: false };
  const chunks = (async function* () {
    try {
      yield Buffer.from(prefix);
      let sent = 0;
      let i = 0;
      while (sent < OFFERED) {
        let s = '';
        while (s.length < CHUNK) s += fill(i++);
        sent += s.length;
        yield Buffer.from(s);
      }
      yield Buffer.from(suffix);
      state.done = true;
    } finally {
      if (!state.done) state.closed = true;
    }
  })();
  return { chunks, state };
}

async function run(
  t: Test,
  input: AsyncIterable<Buffer>,
  limits: ImportLimits = IMPORT_LIMITS,
  forceGzip = false,
) {
  const bed = epgTestBed(t);
  const db = new EpgDatabase(join(bed.dir, 'staging.sqlite'), { staging: true });
  t.teardown(() => db.close());
  const progress = { bytes: 0, channels: 0, programmes: 0, skipped: 0 };
  const err = await importXmltv(input, db, {
    forceGzip,
    window: { from: 0, to: 2 ** 32 },
    progress,
    limits,
  }).then(
    () => undefined,
    (e: Error) => e,
  );
  return { err, progress, db };
}

const a = (c: string) => () => c.repeat(1024);
const cases: [string, string, (i: number) => string, string, RegExp][] = [
  [
    'a title',
    `<tv>${PROG}<title>`,
    a('a'),
    '</title></programme></tv>',
    /^XMLTV refused: the text of <title> is longer than 65536 characters \(line 1\)$/,
  ],
  [
    'a description in CDATA',
    `<tv>${PROG}<title>T</title><desc><![CDATA[`,
    a('b'),
    ']]></desc></programme></tv>',
    /^XMLTV refused: the text of <desc> is longer than 65536 characters/,
  ],
  [
    'a text cut by comments (each piece short)',
    `<tv>${PROG}<title>`,
    () => `${'c'.repeat(1000)}<!---->`,
    '</title></programme></tv>',
    /^XMLTV refused: the text of <title> is longer than 65536 characters/,
  ],
  [
    'an attribute value',
    '<tv><channel id="',
    a('d'),
    '"/></tv>',
    /^XMLTV refused: an attribute value of <channel> is longer than 65536 characters/,
  ],
  [
    'a comment',
    '<tv><!--',
    a('e'),
    '--></tv>',
    /^XMLTV refused: the text of <tv> is longer than 65536 characters/,
  ],
  [
    'a processing instruction',
    '<tv><?pi ',
    a('f'),
    '?></tv>',
    /^XMLTV refused: the text of <tv> is longer than 65536 characters/,
  ],
  [
    'a DOCTYPE before the root',
    '<!DOCTYPE tv SYSTEM "',
    a('g'),
    '"><tv/>',
    /^XMLTV refused: markup outside <tv> is longer than 65536 characters/,
  ],
  [
    'an element name',
    '<tv><',
    a('h'),
    '/></tv>',
    /^XMLTV refused: a name longer than 65536 characters/,
  ],
  [
    'an entity reference',
    '<tv><channel id="x"><display-name>&',
    a('i'),
    ';</display-name></channel></tv>',
    /^XMLTV refused: an entity reference longer than 65536 characters/,
  ],
  [
    'many attributes',
    '<tv><programme',
    (i) => ` a${i}="1"`,
    '/></tv>',
    /^XMLTV refused: <programme> has more than 64 attributes/,
  ],
  [
    'deep nesting',
    '<tv>',
    () => '<x>',
    '</tv>',
    /^XMLTV refused: elements nested deeper than 32 \(<x>, line 1\)$/,
  ],
];

for (const [what, prefix, fill, suffix, re] of cases) {
  t.test(`refused: ${what}`, async (t) => {
    const { chunks, state } = feed(prefix, fill, suffix);
    const { err, progress } = await run(t, chunks);
    t.match(err?.message, re, err?.message ?? 'imported');
    t.ok(progress.bytes < READ_AT_MOST, `stopped after ${progress.bytes} bytes of ${OFFERED}`);
    t.ok(state.closed, 'the input was closed');
  });
}

t.test('a title of exactly the cap is imported', async (t) => {
  const title = 'z'.repeat(MAX);
  const xml = `<tv>${PROG}<title>${title}</title></programme></tv>`;
  const { err, db } = await run(
    t,
    (async function* () {
      for (let i = 0; i < xml.length; i += CHUNK) yield Buffer.from(xml.slice(i, i + CHUNK));
    })(),
  );
  t.equal(err, undefined);
  t.equal(db.dayRows('c1', FIXTURE_DAY, FIXTURE_DAY + 86400)[0]?.title.length, MAX);
});

t.test('a gzip expanding past the document cap is refused early', async (t) => {
  const small: ImportLimits = { ...IMPORT_LIMITS, maxDocumentBytes: 1024 * 1024 };
  // 40 MB of small, valid elements: only the document cap can stop it.
  const bomb = gzipSync(Buffer.from(`<tv>${'<a/>'.repeat(10_000_000)}</tv>`));
  t.ok(bomb.length < 128 * 1024, `the gzip is ${bomb.length} bytes`);
  let closed = false;
  let done = false;
  const input = (async function* () {
    try {
      for (let i = 0; i < bomb.length; i += 512) yield bomb.subarray(i, i + 512);
      done = true;
    } finally {
      closed = !done;
    }
  })();
  const { err, progress } = await run(t, input, small);
  t.equal(err?.message, 'XMLTV refused: the document expanded past 1 MB (gzip)');
  t.ok(progress.bytes < bomb.length / 2, `read ${progress.bytes} of ${bomb.length} bytes`);
  t.ok(closed, 'the input was closed');

  const plain = feed('<tv>', () => '<a/>', '</tv>');
  const second = await run(t, plain.chunks, small);
  t.equal(second.err?.message, 'XMLTV refused: the document is larger than 1 MB');
  t.ok(second.progress.bytes <= 1024 * 1024 + CHUNK, `read ${second.progress.bytes} bytes`);
  t.ok(plain.state.closed, 'the input was closed');
});

t.test('the caps in force', async (t) => {
  t.same(IMPORT_LIMITS, {
    maxDocumentBytes: 1024 * 1024 * 1024,
    maxTextChars: 65536,
    maxAttributes: 64,
    maxDepth: 32,
  });
});
