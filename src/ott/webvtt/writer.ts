// WebVTT writer (`ott-webvtt`): decodes the teletext subtitle pages and the DVB subtitle
// services (EN 300 743, text read by OCR) the PMT announces and cuts their cues into `.vtt`
// segments on the segmenter's boundaries, so subtitle segment n covers the same interval as
// media segment n. One rendition per teletext page or DVB subtitle composition page.
import type { Boundary, SegmenterSink } from '../segmenter.ts';
import { SegmentStore } from '../store.ts';
import { PTS_HZ, PTS_WRAP } from '../timeline.ts';
import type { Track } from '../tracks.ts';
import { type CueContent, CueTrack, escapeVtt, pageToCue } from './cues.ts';
import { type DisplaySet, DvbSubtitleDecoder, toPgm } from './dvbsub.ts';
import { installedLanguages, type OcrEngine, sharedOcr, tesseractLanguage } from './ocr.ts';
import { pageAddress, pageLabel, TeletextDecoder } from './teletext.ts';

/** Teletext descriptor page types that are subtitles (EN 300 468 table 94). */
const SUBTITLE_PAGE_TYPES = new Set([2, 5]);
const TYPE_HEARING_IMPAIRED = 5;
/** subtitling_type values of hard-of-hearing DVB subtitles (EN 300 468 table 26). */
const DVB_HARD_OF_HEARING_MIN = 0x20;
const DVB_HARD_OF_HEARING_MAX = 0x25;

/** What a DVB subtitle rendition does in order: its cues wait for OCR, and the segments
 *  after a cue wait for it (a `.vtt` segment is written once all its cues are known). */
type VttAction =
  | { kind: 'cue'; pts: number; timeout: number; content?: CueContent; ready: boolean }
  | { kind: 'commit'; b: Boundary; end: number; origin: number; ready: true }
  | { kind: 'close'; pts: number; ready: true };

export interface VttRendition {
  /** Path segment: `t<pid>p<page>`, e.g. `t259p888`. */
  id: string;
  pid: number;
  page: number;
  language?: string;
  hearingImpaired: boolean;
  store: SegmentStore;
  cues: CueTrack;
  /** DVB subtitles (OCR): actions waiting in order; absent for teletext. */
  queue?: VttAction[];
  /** DVB subtitles: when the cue on screen times out (page_time_out). */
  expireAt?: number;
}

function timestamp(seconds: number): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor(ms / 60_000) % 60;
  const s = Math.floor(ms / 1000) % 60;
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}.${pad(ms % 1000, 3)}`;
}

/** The HLS mapping line: cue time 0 is the 90 kHz PTS `origin` (RFC 8216 §3.5). */
export function timestampMap(origin: number): string {
  const mpegts = ((origin % PTS_WRAP) + PTS_WRAP) % PTS_WRAP;
  return `X-TIMESTAMP-MAP=MPEGTS:${mpegts},LOCAL:00:00:00.000`;
}

/** A `.vtt` segment body; cue times are seconds since `origin` (the run's first boundary). */
export function vttSegment(
  cues: { start: number; end: number; text: string; settings: string }[],
  origin: number,
  hls: boolean,
): string {
  const out = ['WEBVTT'];
  if (hls) out.push(timestampMap(origin));
  out.push('');
  for (const c of cues) {
    out.push(
      `${timestamp((c.start - origin) / PTS_HZ)} --> ${timestamp((c.end - origin) / PTS_HZ)} ${c.settings}`,
      c.text,
      '',
    );
  }
  return `${out.join('\n')}\n`;
}

/** The DASH form of a stored HLS segment: the same body without X-TIMESTAMP-MAP (spec 3). */
export function toDashVtt(hlsBody: Buffer): Buffer {
  return Buffer.from(hlsBody.toString('utf8').replace(/^X-TIMESTAMP-MAP=.*\n/m, ''));
}

export class WebVttWriter implements SegmenterSink {
  renditions: VttRendition[] = [];
  private decoders = new Map<number, TeletextDecoder>();
  private dvb = new Map<number, DvbSubtitleDecoder[]>();
  private waiters: (() => void)[] = [];
  private seg?: Boundary;
  private origin = 0;

  constructor(private opts: { window: number; grace: number; ocr?: OcrEngine }) {}

  setWindow(window: number): void {
    for (const r of this.renditions) r.store.setWindow(window);
  }

  rendition(id: string): VttRendition | undefined {
    return this.renditions.find((r) => r.id === id);
  }

  tracks(tracks: Track[]): void {
    const keep = new Map(this.renditions.map((r) => [r.id, r]));
    this.renditions = [];
    this.decoders.clear();
    this.dvb.clear();
    for (const t of tracks) {
      if (t.es.kind === 'dvbsub') {
        this.dvbTrack(t, keep);
        continue;
      }
      if (t.es.kind !== 'teletext') continue;
      const pages = (t.es.teletext ?? []).filter((p) => SUBTITLE_PAGE_TYPES.has(p.type));
      const mine: VttRendition[] = [];
      for (const p of pages) {
        const page = pageAddress(p.magazine, p.page);
        const id = `t${t.pid}p${pageLabel(page)}`;
        const r = keep.get(id) ?? {
          id,
          pid: t.pid,
          page,
          language: p.language,
          hearingImpaired: p.type === TYPE_HEARING_IMPAIRED,
          store: new SegmentStore({ window: this.opts.window, grace: this.opts.grace }),
          cues: new CueTrack(),
        };
        mine.push(r);
      }
      if (mine.length === 0) continue;
      this.renditions.push(...mine);
      const byPage = new Map(mine.map((r) => [r.page, r]));
      this.decoders.set(
        t.pid,
        new TeletextDecoder(new Set(byPage.keys()), (page) =>
          byPage.get(page.page)?.cues.update(page.pts, pageToCue(page)),
        ),
      );
    }
  }

  /** DVB subtitles: one rendition and decoder per composition page of the descriptor. */
  private dvbTrack(t: Track, keep: Map<string, VttRendition>): void {
    const decoders: DvbSubtitleDecoder[] = [];
    for (const p of t.es.subtitling ?? []) {
      const id = `t${t.pid}p${p.compositionPage.toString(16)}`;
      if (this.renditions.some((r) => r.id === id)) continue;
      const r: VttRendition = keep.get(id) ?? {
        id,
        pid: t.pid,
        page: p.compositionPage,
        language: p.language,
        hearingImpaired: p.type >= DVB_HARD_OF_HEARING_MIN && p.type <= DVB_HARD_OF_HEARING_MAX,
        store: new SegmentStore({ window: this.opts.window, grace: this.opts.grace }),
        cues: new CueTrack(),
        queue: [],
      };
      this.renditions.push(r);
      decoders.push(
        new DvbSubtitleDecoder(p.compositionPage, p.ancillaryPage, (set) =>
          this.displaySet(r, set),
        ),
      );
    }
    if (decoders.length) this.dvb.set(t.pid, decoders);
  }

  /** A new display set: its text now (character-coded), or once OCR has read the picture. */
  private displaySet(r: VttRendition, set: DisplaySet): void {
    const action: VttAction = { kind: 'cue', pts: set.pts, timeout: set.timeout, ready: false };
    r.queue!.push(action);
    const img = set.image;
    const cue = (text: string): CueContent | undefined => {
      if (!text) return undefined;
      const line = img ? Math.round((img.y * 100) / set.displayHeight) : 80;
      return {
        text: escapeVtt(text),
        plain: text,
        settings: `line:${Math.min(100, Math.max(0, line))}% align:center`,
      };
    };
    if (set.text || !img) {
      action.content = cue(set.text ?? '');
      action.ready = true;
      this.drain(r);
      return;
    }
    const ocr = this.opts.ocr ?? sharedOcr();
    void installedLanguages()
      .then((have) => ocr.recognise(toPgm(img), tesseractLanguage(r.language, have)))
      .then((text) => {
        action.content = cue(text);
        action.ready = true;
        this.drain(r);
      });
  }

  /** Resolves once no DVB subtitle cue waits for OCR (every segment cut is written). */
  settled(): Promise<void> {
    if (this.renditions.every((r) => !r.queue?.length)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Apply a DVB rendition's actions in order, up to the first cue still being read. */
  private drain(r: VttRendition): void {
    const q = r.queue!;
    while (q.length > 0 && q[0]!.ready) {
      const a = q.shift()!;
      const at = a.kind === 'commit' ? a.end : a.pts;
      if (r.expireAt !== undefined && r.expireAt < at) {
        r.cues.update(r.expireAt, undefined);
        r.expireAt = undefined;
      }
      if (a.kind === 'cue') {
        r.cues.update(a.pts, a.content);
        r.expireAt = a.content && a.timeout > 0 ? a.pts + a.timeout * PTS_HZ : undefined;
      } else if (a.kind === 'close') {
        r.cues.close(a.pts);
        r.expireAt = undefined;
      } else this.commitOne(r, a.b, a.end, a.origin);
    }
    if (this.waiters.length && this.renditions.every((x) => !x.queue?.length))
      for (const w of this.waiters.splice(0)) w();
  }

  subtitle(track: Track, data: Buffer, pts: number): void {
    this.decoders.get(track.pid)?.push(data, pts);
    for (const d of this.dvb.get(track.pid) ?? []) d.push(data, pts);
  }

  boundary(b: Boundary): void {
    if (this.seg) this.commit(this.seg, b.pts);
    if (!this.seg || b.discontinuity) this.origin = b.pts;
    this.seg = b;
  }

  splice(_packetIndex: number, endPts?: number): void {
    for (const d of this.decoders.values()) d.flush();
    for (const list of this.dvb.values()) for (const d of list) d.flush();
    if (this.seg && endPts !== undefined) {
      for (const r of this.renditions)
        if (r.queue) {
          r.queue.push({ kind: 'close', pts: endPts, ready: true });
          this.drain(r);
        } else r.cues.close(endPts);
      this.commit(this.seg, endPts);
    }
    this.seg = undefined;
  }

  private commit(b: Boundary, end: number): void {
    for (const r of this.renditions) {
      if (r.queue) {
        r.queue.push({ kind: 'commit', b, end, origin: this.origin, ready: true });
        this.drain(r);
      } else this.commitOne(r, b, end, this.origin);
    }
  }

  private commitOne(r: VttRendition, b: Boundary, end: number, origin: number): void {
    const cues = r.cues.between(b.pts, end).map((c) => ({
      start: Math.max(c.start, b.pts),
      end: Math.min(c.end ?? end, end),
      text: c.content.text,
      settings: c.content.settings,
    }));
    const body = Buffer.from(vttSegment(cues, origin, true));
    r.store.commit(
      {
        seq: b.seq,
        discSeq: b.discSeq,
        discontinuity: b.discontinuity,
        start: b.pts,
        timescale: PTS_HZ,
        duration: Math.max(0, end - b.pts) / PTS_HZ,
        wallclock: b.wallclock,
        uri: `${b.seq}.vtt`,
        size: body.length,
        parts: [],
      },
      body,
    );
    r.cues.prune(b.pts);
  }
}
