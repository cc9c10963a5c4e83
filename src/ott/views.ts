// Builds the documents a client asks for (master and media playlists, the MPD) from the
// packager's stores, applying the live parameters `a` and `v` (track selection).
import { buildMpd, type DashPeriod, type DashRepresentation } from './dash.ts';
import {
  averageBitrate,
  buildMasterPlaylist,
  buildMediaPlaylist,
  HLS_VERSION_FMP4,
  peakBitrate,
  type Rendition,
  type Variant,
} from './hls.ts';
import { buildLowLatencyPlaylist, lastPosition, type RenditionReport } from './llhls.ts';
import type { CmafRendition, Packager } from './packager.ts';
import type { SegmentDescriptor } from './store.ts';
import type { VttRendition } from './webvtt/writer.ts';

/** DASH minimum update period and buffer, in target durations. */
const MPD_UPDATE_TARGETS = 1;
const MPD_MIN_BUFFER_TARGETS = 1;
const MPD_PRESENTATION_DELAY_TARGETS = 2;
/** Bit-rate figure when a rendition has no complete segment yet. */
const UNKNOWN_BITRATE = 1_000_000;
const AUDIO_GROUP = 'audio';
const SUBTITLE_GROUP = 'subs';
/** Nominal figure for a WebVTT rendition in the MPD (text is a few hundred bytes a second). */
const VTT_BANDWIDTH = 256;
/** Segments one rendition may have in a new DASH Period before it is listed without the
 *  renditions that have none there yet (see holdBackIncompletePeriods). */
const PERIOD_COMPLETE_SEGMENTS = 2;

export interface Selection {
  /** `a`: audio tracks by language code or PID (comma list); empty = all. */
  audio: string[];
  /** `v`: video tracks by PID; empty = all. */
  video: string[];
  /** `s`: subtitle renditions by language code or teletext page (`888`); `none` = no
   *  subtitles; empty = all. */
  subtitles: string[];
  /** `m`: at most this many segments in a live playlist / MPD (fewer than `ott-window`). */
  maxSegments?: number;
}

/** The live window of a store, cut to the `m` limit. */
export function liveSegments(store: { live(): SegmentDescriptor[] }, sel?: Selection) {
  const all = store.live();
  const m = sel?.maxSegments;
  return m !== undefined && m < all.length ? all.slice(-m) : all;
}

export function parseSelection(query: Record<string, unknown>): Selection {
  const list = (v: unknown) =>
    typeof v === 'string' && v !== '' ? v.split(',').map((s) => s.trim()) : [];
  const m = Number(query.m);
  return {
    audio: list(query.a),
    video: list(query.v),
    subtitles: list(query.s),
    maxSegments: Number.isInteger(m) && m >= 1 ? m : undefined,
  };
}

function selected(r: CmafRendition, sel: Selection): boolean {
  return trackSelected(r.track, sel);
}

/** Whether an audio or video track passes `a` / `v` (other tracks always pass). */
export function trackSelected(track: CmafRendition['track'], sel: Selection): boolean {
  const wanted = track.type === 'video' ? sel.video : track.type === 'audio' ? sel.audio : [];
  if (wanted.length === 0) return true;
  return (
    wanted.includes(String(track.pid)) ||
    (track.es.language !== undefined && wanted.includes(track.es.language))
  );
}

/** PIDs an HLS-TS segment drops for `a` / `v`. */
export function droppedPids(p: Packager, sel: Selection): Set<number> {
  const drop = new Set<number>();
  for (const t of p.segmenter.tracks.values()) if (!trackSelected(t, sel)) drop.add(t.pid);
  return drop;
}

/** Subtitle renditions with at least one segment, after the `s` selection. */
export function subtitleRenditions(p: Packager, sel: Selection): VttRendition[] {
  const all = p.vtt?.renditions.filter((r) => r.store.live().length > 0) ?? [];
  if (sel.subtitles.length === 0) return all;
  return all.filter(
    (r) =>
      sel.subtitles.includes(r.page.toString(16)) ||
      (r.language !== undefined && sel.subtitles.includes(r.language)),
  );
}

/** EXT-X-MEDIA lines of the subtitle renditions (URIs relative to the stream's root). */
function subtitleMedia(subs: VttRendition[], query: string): Rendition[] {
  return subs.map((r, i) => ({
    type: 'SUBTITLES',
    groupId: SUBTITLE_GROUP,
    name: `${r.language ?? 'subtitles'} ${r.page.toString(16)}${r.hearingImpaired ? ' (HI)' : ''}`,
    language: r.language,
    uri: `${r.id}/index.m3u8${query}`,
    isDefault: i === 0,
  }));
}

/** Renditions with an init segment (parameters known), after the a/v selection. */
export function readyRenditions(p: Packager, sel: Selection): CmafRendition[] {
  return p.renditions.filter((r) => r.store.init && selected(r, sel));
}

function rate(segs: SegmentDescriptor[], track: CmafRendition['track']): number {
  return peakBitrate(segs) || track.bitrate || UNKNOWN_BITRATE;
}

/** HLS-TS master: only when subtitles are offered (EXT-X-MEDIA needs a master playlist). */
export function tsMaster(p: Packager, sel: Selection, query: string): string | undefined {
  const subs = subtitleRenditions(p, sel);
  if (subs.length === 0) return undefined;
  const segs = p.tsStore!.live();
  const tracks = [...p.segmenter.tracks.values()];
  const video = tracks.find((t) => t.type === 'video');
  const codecs = [video, tracks.find((t) => t.type === 'audio')]
    .map((t) => t?.codec)
    .filter((c): c is string => c !== undefined);
  const variant: Variant = {
    uri: `ts.m3u8${query}`,
    bandwidth: peakBitrate(segs) || UNKNOWN_BITRATE,
    averageBandwidth: averageBitrate(segs) || undefined,
    codecs,
    width: video?.video?.width,
    height: video?.video?.height,
    frameRate: video?.fps || undefined,
    subtitleGroup: SUBTITLE_GROUP,
  };
  return buildMasterPlaylist([variant], subtitleMedia(subs, query));
}

export function vttMediaPlaylist(p: Packager, r: VttRendition, sel?: Selection): string {
  return buildMediaPlaylist({
    segments: liveSegments(r.store, sel),
    targetDuration: p.targetDuration(),
  });
}

/** The HLS-TS media playlist; `segmentQuery` (the `a`/`v` selection) follows each segment
 *  URI so the segment is served filtered. */
export function tsMediaPlaylist(p: Packager, sel?: Selection, segmentQuery = ''): string {
  const store = p.tsStore!;
  return buildMediaPlaylist({
    segments: liveSegments(store, sel),
    targetDuration: p.targetDuration(),
    query: segmentQuery,
  });
}

export function cmafMaster(p: Packager, sel: Selection, query: string): string | undefined {
  const ready = readyRenditions(p, sel);
  const videos = ready.filter((r) => r.track.type === 'video');
  const audios = ready.filter((r) => r.track.type === 'audio');
  if (videos.length === 0 && audios.length === 0) return undefined;
  const subs = subtitleRenditions(p, sel);
  const renditions: Rendition[] = subtitleMedia(subs, query);
  const subtitleGroup = subs.length > 0 ? SUBTITLE_GROUP : undefined;
  const variants: Variant[] = [];
  if (videos.length === 0) {
    for (const a of audios) {
      variants.push({
        uri: `${a.id}/index.m3u8${query}`,
        bandwidth: rate(a.store.live(), a.track),
        codecs: [a.track.codec!],
        subtitleGroup,
      });
    }
  } else {
    audios.forEach((a, i) => {
      renditions.push({
        type: 'AUDIO',
        groupId: AUDIO_GROUP,
        name: a.track.es.language ?? `audio ${a.track.pid}`,
        language: a.track.es.language,
        uri: `${a.id}/index.m3u8${query}`,
        isDefault: i === 0,
        channels: a.track.audio?.channels,
      });
    });
    const audio = audios[0];
    for (const v of videos) {
      const vsegs = v.store.live();
      const codecs = [v.track.codec!];
      if (audio) codecs.push(audio.track.codec!);
      const audioRate = audio ? rate(audio.store.live(), audio.track) : 0;
      variants.push({
        uri: `${v.id}/index.m3u8${query}`,
        bandwidth: rate(vsegs, v.track) + audioRate,
        averageBandwidth:
          averageBitrate(vsegs) + (audio ? averageBitrate(audio.store.live()) : 0) || undefined,
        codecs,
        width: v.track.video?.width,
        height: v.track.video?.height,
        frameRate: v.track.fps || undefined,
        audioGroup: audio ? AUDIO_GROUP : undefined,
        subtitleGroup,
      });
    }
  }
  return buildMasterPlaylist(variants, renditions, HLS_VERSION_FMP4);
}

export function cmafMediaPlaylist(
  p: Packager,
  r: CmafRendition,
  skip: boolean,
  lowLatency: boolean,
  sel?: Selection,
): string {
  const target = p.targetDuration();
  if (!lowLatency) {
    return buildMediaPlaylist({
      segments: liveSegments(r.store, sel),
      targetDuration: target,
      map: 'init.mp4',
    });
  }
  const reports: RenditionReport[] = [];
  for (const other of p.renditions) {
    if (other === r || !other.store.init) continue;
    const pos = lastPosition(other.store.live(), other.store.open);
    if (pos.msn >= 0)
      reports.push({ uri: `../${other.id}/index.m3u8`, lastMsn: pos.msn, lastPart: pos.part });
  }
  return buildLowLatencyPlaylist({
    segments: liveSegments(r.store, sel),
    open: r.store.open,
    targetDuration: target,
    partTarget: p.settings.partDuration,
    map: 'init.mp4',
    skip,
    reports,
  });
}

/**
 * Leave out the newest Periods until every rendition has a segment in them. A writer closes a
 * segment when its own first frame past the next boundary arrives, so after a splice the new
 * run's first video segment is often listed before its first audio segment (the input
 * interleaves audio a little behind video). dash.js fixes a Period's AdaptationSets when it
 * first sees it (prebuffering): a Period first listed without audio stays silent, the audio
 * buffer of the old Period is never continued, and playback stops at the boundary for good
 * (seen in about 1 failover in 8 in `players.test.ts`). A track the new input does not carry
 * must not hold the Period back forever: once some rendition has `PERIOD_COMPLETE_SEGMENTS`
 * segments in it, the Period is listed with what it has.
 */
export function holdBackIncompletePeriods(periods: Map<number, DashPeriod>, renditions: number) {
  const discs = [...periods.keys()].sort((a, b) => b - a);
  for (const disc of discs.slice(0, -1)) {
    const period = periods.get(disc)!;
    const most = Math.max(...period.representations.map((r) => r.segments.length));
    if (period.representations.length >= renditions || most >= PERIOD_COMPLETE_SEGMENTS) return;
    periods.delete(disc);
  }
}

export function dashManifest(
  p: Packager,
  sel: Selection,
  now: number,
  utcTiming: string,
): string | undefined {
  const ready = readyRenditions(p, sel).filter((r) => r.store.live().length > 0);
  if (ready.length === 0 || p.availabilityStart === undefined) return undefined;
  const ast = p.availabilityStart;
  const periods = new Map<number, DashPeriod>();
  let maxSeg = 0;
  for (const r of ready) {
    const byDisc = new Map<number, SegmentDescriptor[]>();
    for (const s of liveSegments(r.store, sel)) {
      byDisc.set(s.discSeq, [...(byDisc.get(s.discSeq) ?? []), s]);
      maxSeg = Math.max(maxSeg, s.duration);
    }
    for (const [disc, segs] of byDisc) {
      let period = periods.get(disc);
      if (!period) {
        const wall = p.periodWallclock.get(disc) ?? segs[0]!.wallclock;
        period = { id: `p${disc}`, start: Math.max(0, (wall - ast) / 1000), representations: [] };
        periods.set(disc, period);
      }
      const rep: DashRepresentation = {
        id: r.id,
        contentType: r.track.type === 'video' ? 'video' : 'audio',
        codecs: r.track.codec!,
        bandwidth: rate(segs, r.track),
        width: r.track.video?.width,
        height: r.track.video?.height,
        frameRate: r.track.fps || undefined,
        sampleRate: r.track.audio?.sampleRate,
        channels: r.track.audio?.channels,
        lang: r.track.es.language,
        segments: segs,
        timescale: segs[0]!.timescale,
        periodOrigin: r.store.periodOrigins.get(disc) ?? segs[0]!.start,
        base: `${r.id}/`,
      };
      period.representations.push(rep);
    }
  }
  holdBackIncompletePeriods(periods, ready.length);
  for (const r of subtitleRenditions(p, sel)) {
    for (const [disc, period] of periods) {
      const segs = liveSegments(r.store, sel).filter((s) => s.discSeq === disc);
      if (segs.length === 0) continue;
      period.representations.push({
        id: r.id,
        contentType: 'text',
        codecs: '',
        mimeType: 'text/vtt',
        media: 'd$Number$.vtt',
        bandwidth: VTT_BANDWIDTH,
        lang: r.language,
        segments: segs,
        timescale: segs[0]!.timescale,
        periodOrigin: r.store.periodOrigins.get(disc) ?? segs[0]!.start,
        base: `${r.id}/`,
      });
    }
  }
  const target = p.settings.segmentDuration;
  return buildMpd({
    dynamic: true,
    availabilityStartTime: ast,
    publishTime: now,
    timeShiftBufferDepth:
      Math.min(p.settings.window, sel.maxSegments ?? p.settings.window) * target,
    minimumUpdatePeriod: MPD_UPDATE_TARGETS * target,
    minBufferTime: MPD_MIN_BUFFER_TARGETS * target,
    suggestedPresentationDelay: MPD_PRESENTATION_DELAY_TARGETS * target,
    maxSegmentDuration: Math.max(maxSeg, target),
    utcTiming,
    periods: [...periods.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v),
  });
}
