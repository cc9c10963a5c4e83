// WebVTT writer (`ott-webvtt`): decodes the teletext subtitle pages the PMT announces and
// cuts their cues into `.vtt` segments on the segmenter's boundaries, so subtitle segment n
// covers the same interval as media segment n. One rendition per subtitle page.
import type { Boundary, SegmenterSink } from '../segmenter.ts';
import { SegmentStore } from '../store.ts';
import { PTS_HZ, PTS_WRAP } from '../timeline.ts';
import type { Track } from '../tracks.ts';
import { CueTrack, pageToCue } from './cues.ts';
import { pageAddress, pageLabel, TeletextDecoder } from './teletext.ts';

/** Teletext descriptor page types that are subtitles (EN 300 468 table 94). */
const SUBTITLE_PAGE_TYPES = new Set([2, 5]);
const TYPE_HEARING_IMPAIRED = 5;

export interface VttRendition {
  /** Path segment: `t<pid>p<page>`, e.g. `t259p888`. */
  id: string;
  pid: number;
  page: number;
  language?: string;
  hearingImpaired: boolean;
  store: SegmentStore;
  cues: CueTrack;
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
  private seg?: Boundary;
  private origin = 0;

  constructor(private opts: { window: number; grace: number }) {}

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
    for (const t of tracks) {
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

  subtitle(track: Track, data: Buffer, pts: number): void {
    this.decoders.get(track.pid)?.push(data, pts);
  }

  boundary(b: Boundary): void {
    if (this.seg) this.commit(this.seg, b.pts);
    if (!this.seg || b.discontinuity) this.origin = b.pts;
    this.seg = b;
  }

  splice(_packetIndex: number, endPts?: number): void {
    for (const d of this.decoders.values()) d.flush();
    if (this.seg && endPts !== undefined) {
      for (const r of this.renditions) r.cues.close(endPts);
      this.commit(this.seg, endPts);
    }
    this.seg = undefined;
  }

  private commit(b: Boundary, end: number): void {
    for (const r of this.renditions) {
      const cues = r.cues.between(b.pts, end).map((c) => ({
        start: Math.max(c.start, b.pts),
        end: Math.min(c.end ?? end, end),
        text: c.content.text,
        settings: c.content.settings,
      }));
      const body = Buffer.from(vttSegment(cues, this.origin, true));
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
}
