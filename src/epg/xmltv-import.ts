// Streaming XMLTV import: bytes (plain or gzip) → UTF-8 decoder → saxes → batched inserts
// into a staging database. Never holds the document in memory; never expands entities:
// a DOCTYPE with an internal subset (where ENTITY declarations live) is refused, and saxes
// rejects any entity reference other than the five predefined ones and character references.
// The document's expanded size and every text are capped (xmltv-limits.ts).
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import type { EpgDatabase, EventRating, EventText } from './database.ts';
import { languageId } from './languages.ts';
import { sniffXmlEncoding, XML_SNIFF_BYTES } from './xml-encoding.ts';
import {
  IMPORT_LIMITS,
  type ImportLimits,
  LimitedParser,
  sizeText,
  WRITE_CHARS,
} from './xmltv-limits.ts';
import { parseXmltvTime } from './xmltv-time.ts';

const GZIP_MAGIC_0 = 0x1f;
const GZIP_MAGIC_1 = 0x8b;
/** Programmes per insert transaction. */
const BATCH_PROGRAMMES = 2000;

export interface ImportProgress {
  bytes: number;
  channels: number;
  programmes: number;
  /** Programmes dropped: bad times, outside the retention window, no stop. */
  skipped: number;
}

export interface ImportOptions {
  /** content-encoding: 0 detect gzip by its magic bytes, 1 always gzip. */
  forceGzip: boolean;
  /** Keep programmes overlapping [from, to) (Unix seconds). */
  window: { from: number; to: number };
  progress: ImportProgress;
  /** Called with every raw chunk (save-file copy). */
  onRaw?: (chunk: Buffer) => void;
  /** Caps of this import; IMPORT_LIMITS when absent. */
  limits?: ImportLimits;
}

interface Programme {
  channel: string;
  start: number;
  stop: number | undefined;
  offset: number;
  titles: Map<number, string>;
  descs: Map<number, string>;
  ratings: EventRating[];
}

/** Import an XMLTV byte stream into `db` (a fresh staging database). Rejects on any error.
 *  The input is read to its end or closed (its iterator's return()) on every path. */
export async function importXmltv(
  input: AsyncIterable<Buffer>,
  db: EpgDatabase,
  opts: ImportOptions,
): Promise<void> {
  const p = opts.progress;
  const limits = opts.limits ?? IMPORT_LIMITS;
  let first = true;
  let gzip = opts.forceGzip;
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of input) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      if (first && buf.length > 0) {
        first = false;
        if (buf.length >= 2 && buf[0] === GZIP_MAGIC_0 && buf[1] === GZIP_MAGIC_1) gzip = true;
      }
      p.bytes += buf.length;
      opts.onRaw?.(buf);
      yield buf;
    }
  }
  const sink = new XmltvSink(db, opts, limits);
  const it = counted()[Symbol.asyncIterator]();
  try {
    await parse(it, sink, limits, () => gzip);
  } finally {
    // Ended early (a parse error, a cap): return() reaches the input through the generator, which
    // closes it (a file's descriptor, a download's request); a suspended one would hold them.
    await it.return(undefined);
  }
}

async function parse(
  it: AsyncIterator<Buffer>,
  sink: XmltvSink,
  limits: ImportLimits,
  isGzip: () => boolean,
): Promise<void> {
  // Peek the first chunk before deciding on gunzip.
  const head = await it.next();
  const gzip = isGzip();
  const rest = (async function* () {
    if (!head.done) yield head.value;
    for (;;) {
      const n = await it.next();
      if (n.done) return;
      yield n.value;
    }
  })();
  let docBytes = 0;
  const consume = async (source: AsyncIterable<Buffer>) => {
    // The decoder is chosen from the first bytes (BOM or XML declaration), not assumed UTF-8.
    let dec: InstanceType<typeof TextDecoder> | undefined;
    let head: Buffer[] = [];
    let headLen = 0;
    const start = () => {
      const buf = Buffer.concat(head);
      head = [];
      dec = new TextDecoder(sniffXmlEncoding(buf), { fatal: false });
      sink.write(dec.decode(buf, { stream: true }));
      return dec;
    };
    for await (const chunk of source) {
      docBytes += chunk.length;
      if (docBytes > limits.maxDocumentBytes) {
        throw new Error(
          gzip
            ? `XMLTV refused: the document expanded past ${sizeText(limits.maxDocumentBytes)} (gzip)`
            : `XMLTV refused: the document is larger than ${sizeText(limits.maxDocumentBytes)}`,
        );
      }
      if (dec) {
        sink.write(dec.decode(chunk, { stream: true }));
        continue;
      }
      head.push(chunk);
      headLen += chunk.length;
      if (headLen >= XML_SNIFF_BYTES) start();
    }
    sink.write((dec ?? start()).decode());
    sink.end();
  };
  if (!gzip) return consume(rest);
  // pipeline() reports its own "The operation was aborted" when the last stage fails (it
  // aborts the stages before it): the stage's error is kept to report that instead.
  let failed: unknown;
  const consumeGunzipped = (source: AsyncIterable<Buffer>) =>
    consume(source).catch((err: unknown) => {
      failed ??= err;
      throw err;
    });
  await pipeline(Readable.from(rest), createGunzip(), consumeGunzipped).catch((err: unknown) => {
    const e = (failed ?? err) as Error & { code?: string };
    // zlib's own words ("incorrect header check") do not say that gzip was the problem.
    if (e.code?.startsWith('Z_')) throw new Error(`gzip decompression failed: ${e.message}`);
    throw e;
  });
}

class XmltvSink {
  private parser = new SaxesParser({ xmlns: false, position: true });
  private limited: LimitedParser;
  /** The tag whose attributes saxes is reading (between opentagstart and opentag). */
  private opening: string | undefined;
  private stack: string[] = [];
  private text = '';
  private chan: { id: string; names: [number, string][]; icon: string } | undefined;
  private prog: Programme | undefined;
  private textLang = 0;
  private ratingSystem = '';
  private batch: Programme[] = [];
  /** Programmes waiting for a stop time (taken from the next start of the channel). */
  private open = new Map<string, Programme>();
  private knownChannels = new Set<string>();
  private zoneSet = new Set<string>();
  private sawRoot = false;

  constructor(
    private db: EpgDatabase,
    private opts: ImportOptions,
    private limits: ImportLimits,
  ) {
    const ps = this.parser;
    this.limited = new LimitedParser(ps, limits);
    ps.on('opentagstart', (tag) => {
      this.opening = tag.name;
    });
    ps.on('doctype', (dt) => {
      if (dt.includes('['))
        throw new Error(
          'XMLTV refused: DOCTYPE with an internal subset (entity declarations are not allowed)',
        );
    });
    ps.on('opentag', (tag) => this.openTag(tag as SaxesTagPlain));
    ps.on('closetag', (tag) => this.closeTag(tag.name));
    ps.on('text', (t) => this.addText(t));
    ps.on('cdata', (t) => this.addText(t));
    ps.on('error', (err) => {
      throw new Error(`XMLTV parse error: ${err.message}`);
    });
  }

  write(s: string): void {
    for (let i = 0; i < s.length; i += WRITE_CHARS) {
      this.parser.write(s.length <= WRITE_CHARS ? s : s.slice(i, i + WRITE_CHARS));
      this.limited.check(this.stack[this.stack.length - 1], this.opening);
    }
  }

  /** Text and CDATA of one element, joined across comments between them: capped as a whole. */
  private addText(t: string): void {
    if (this.text.length + t.length > this.limits.maxTextChars) {
      const where = this.stack[this.stack.length - 1];
      throw new Error(
        `XMLTV refused: the text of <${where ?? 'tv'}> is longer than ${this.limits.maxTextChars} characters (line ${this.parser.line})`,
      );
    }
    this.text += t;
  }

  end(): void {
    this.parser.close();
    if (!this.sawRoot) throw new Error('XMLTV parse error: no <tv> root element');
    this.opts.progress.skipped += this.open.size;
    this.open.clear();
    this.flush();
  }

  private openTag(tag: SaxesTagPlain): void {
    this.opening = undefined;
    const a = tag.attributes as Record<string, string>;
    const parent = this.stack[this.stack.length - 1];
    if (this.stack.length >= this.limits.maxDepth) {
      throw new Error(
        `XMLTV refused: elements nested deeper than ${this.limits.maxDepth} (<${tag.name}>, line ${this.parser.line})`,
      );
    }
    this.stack.push(tag.name);
    this.text = '';
    if (this.stack.length === 1) {
      if (tag.name !== 'tv')
        throw new Error(`XMLTV parse error: root element is <${tag.name}>, not <tv>`);
      this.sawRoot = true;
      return;
    }
    switch (tag.name) {
      case 'channel':
        if (parent === 'tv') this.chan = { id: a['id'] ?? '', names: [], icon: '' };
        break;
      case 'programme':
        if (parent === 'tv') this.startProgramme(a);
        break;
      case 'icon':
        if (parent === 'channel' && this.chan && !this.chan.icon) this.chan.icon = a['src'] ?? '';
        break;
      case 'rating':
        this.ratingSystem = a['system'] ?? '';
        break;
      default:
        this.textLang = languageId(a['lang']);
    }
  }

  private startProgramme(a: Record<string, string>): void {
    const start = parseXmltvTime(a['start']);
    const stop = parseXmltvTime(a['stop']);
    const channel = a['channel'] ?? '';
    if (!start || !channel || (a['stop'] !== undefined && !stop)) {
      this.prog = undefined;
      this.opts.progress.skipped++;
      return;
    }
    this.prog = {
      channel,
      start: start.utc,
      stop: stop?.utc,
      offset: start.offset,
      titles: new Map(),
      descs: new Map(),
      ratings: [],
    };
  }

  private closeTag(name: string): void {
    this.stack.pop();
    const parent = this.stack[this.stack.length - 1];
    const text = this.text.trim();
    this.text = '';
    if (name === 'display-name' && parent === 'channel' && this.chan && text) {
      this.chan.names.push([this.textLang, text]);
    } else if (name === 'channel' && parent === 'tv' && this.chan) {
      this.addChannel(this.chan);
      this.chan = undefined;
    } else if (this.prog && parent === 'programme' && (name === 'title' || name === 'desc')) {
      const map = name === 'title' ? this.prog.titles : this.prog.descs;
      if (text && !map.has(this.textLang)) map.set(this.textLang, text);
    } else if (this.prog && name === 'value' && parent === 'rating' && text) {
      this.prog.ratings.push({ system: this.ratingSystem, value: text });
    } else if (name === 'programme' && parent === 'tv') {
      if (this.prog) this.addProgramme(this.prog);
      this.prog = undefined;
    }
  }

  private addChannel(c: { id: string; names: [number, string][]; icon: string }): void {
    if (!c.id || this.knownChannels.has(c.id)) return;
    this.knownChannels.add(c.id);
    this.db.upsertChannel(c.id, 0, c.icon);
    for (const [lang, name] of c.names) this.db.addChannelName(c.id, lang, name);
    this.opts.progress.channels++;
  }

  private addProgramme(prog: Programme): void {
    const waiting = this.open.get(prog.channel);
    if (waiting && prog.start > waiting.start) {
      this.open.delete(prog.channel);
      waiting.stop = prog.start;
      this.queue(waiting);
    }
    if (prog.stop === undefined) {
      // An earlier-starting programme without stop replaces the one still waiting, which can
      // then never be closed (its successor came first): counted, not lost silently.
      if (this.open.has(prog.channel)) this.opts.progress.skipped++;
      this.open.set(prog.channel, prog);
    } else this.queue(prog);
  }

  private queue(prog: Programme): void {
    const { from, to } = this.opts.window;
    if (
      prog.stop === undefined ||
      prog.stop <= prog.start ||
      prog.stop < from ||
      prog.start >= to
    ) {
      this.opts.progress.skipped++;
      return;
    }
    this.batch.push(prog);
    if (this.batch.length >= BATCH_PROGRAMMES) this.flush();
  }

  private flush(): void {
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    this.db.transaction(() => {
      for (const p of batch) {
        if (!this.knownChannels.has(p.channel)) {
          this.knownChannels.add(p.channel);
          this.db.upsertChannel(p.channel, p.offset);
          this.opts.progress.channels++;
          this.zoneSet.add(p.channel);
        } else if (!this.zoneSet.has(p.channel)) {
          this.db.setChannelTimeZone(p.channel, p.offset);
          this.zoneSet.add(p.channel);
        }
        const langs = new Set([...p.titles.keys(), ...p.descs.keys()]);
        const texts: EventText[] = [...langs].map((lang) => ({
          lang,
          title: p.titles.get(lang) ?? '',
          desc: p.descs.get(lang) ?? '',
        }));
        this.db.addEvent(p.channel, p.start, p.stop!, texts, p.ratings);
      }
    });
    this.opts.progress.programmes += batch.length;
  }
}
