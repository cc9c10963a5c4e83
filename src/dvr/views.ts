// Archive documents built from index rows: closed VOD HLS media playlists (TS and fMP4), the
// fMP4 master playlist, and the static DASH manifest with one Period per contiguous run.
// Pure functions of their rows, so a repeated request gives the same bytes (spec 3 rule 10).
import { buildMpd, type DashPeriod, type DashRepresentation } from '../ott/dash.ts';
import {
  buildMasterPlaylist,
  HLS_VERSION_ARCHIVE,
  quote,
  type Rendition,
  targetDurationOf,
  type Variant,
} from '../ott/hls.ts';
import type { SegmentDescriptor } from '../ott/store.ts';
import type { ChunkRow } from './index-db.ts';
import { GAP_TOLERANCE_MS } from './settings.ts';

/** HLS group id of archived subtitle renditions. */
const SUBTITLE_GROUP = 'subs';

/** A track of the archive as the layout recorded it (`text`: archived WebVTT). */
export interface ArchiveTrack {
  id: string;
  pid: number;
  type: 'video' | 'audio' | string;
  codec: string;
  lang: string;
  width: number;
  height: number;
  rows: ChunkRow[];
  /** Codec and picture size recorded with another init of the track (a mid-window change). */
  attrs?: (initId: number) => { codec: string; width: number; height: number } | undefined;
}

/** The next row starts a new run: flagged discontinuous, a gap, or another init/layout. */
export function breaksRun(prev: ChunkRow | undefined, row: ChunkRow): boolean {
  if (!prev) return false;
  if (row.disc === 1 || row.init_id !== prev.init_id) return true;
  return row.start_ms - (prev.start_ms + prev.duration * 1000) > GAP_TOLERANCE_MS;
}

function target(rows: ChunkRow[], fallback: number): number {
  let max = 0;
  for (const r of rows) max = Math.max(max, r.duration);
  return targetDurationOf(max || fallback);
}

/**
 * A closed VOD playlist (spec 3 rule 4). `uri` names each chunk; `map` names the init of a
 * row (fMP4), repeated after each change. Empty rows give the header and ENDLIST only.
 */
export function vodPlaylist(
  rows: ChunkRow[],
  o: { uri: (r: ChunkRow) => string; map?: (r: ChunkRow) => string; fallbackTarget: number },
): string {
  const lines = [
    '#EXTM3U',
    `#EXT-X-VERSION:${HLS_VERSION_ARCHIVE}`,
    `#EXT-X-TARGETDURATION:${target(rows, o.fallbackTarget)}`,
    '#EXT-X-PLAYLIST-TYPE:VOD',
    '#EXT-X-MEDIA-SEQUENCE:0',
    '#EXT-X-INDEPENDENT-SEGMENTS',
  ];
  let prev: ChunkRow | undefined;
  for (const r of rows) {
    const broken = breaksRun(prev, r);
    if (broken) lines.push('#EXT-X-DISCONTINUITY');
    if (o.map && (!prev || r.init_id !== prev.init_id))
      lines.push(`#EXT-X-MAP:URI=${quote(o.map(r))}`);
    if (!prev || broken)
      lines.push(`#EXT-X-PROGRAM-DATE-TIME:${new Date(r.start_ms).toISOString()}`);
    lines.push(`#EXTINF:${r.duration.toFixed(3)},`, o.uri(r));
    prev = r;
  }
  lines.push('#EXT-X-ENDLIST');
  return `${lines.join('\n')}\n`;
}

function bitrate(rows: ChunkRow[]): number {
  let bytes = 0;
  let secs = 0;
  for (const r of rows) {
    bytes += r.bytes;
    secs += r.duration;
  }
  return secs > 0 ? (bytes * 8) / secs : 0;
}

function peak(rows: ChunkRow[]): number {
  let p = 0;
  for (const r of rows) if (r.duration > 0) p = Math.max(p, (r.bytes * 8) / r.duration);
  return p;
}

/** fMP4 master over the archive tracks; `query` (the absolute window) goes on every URI. */
export function vodMaster(tracks: ArchiveTrack[], query: string): string | undefined {
  const videos = tracks.filter((t) => t.type === 'video' && t.rows.length > 0);
  const audios = tracks.filter((t) => t.type === 'audio' && t.rows.length > 0);
  const texts = tracks.filter((t) => t.type === 'text' && t.rows.length > 0);
  const variants: Variant[] = [];
  const uri = (t: ArchiveTrack) => `${t.id}/index.m3u8?${query}`;
  // Archived WebVTT: a closed subtitle playlist per track (spec 3, subtitles in archive mode).
  const renditions: Rendition[] = texts.map((x, i) => ({
    type: 'SUBTITLES',
    groupId: SUBTITLE_GROUP,
    name: x.lang || `subtitles ${x.id}`,
    language: x.lang || undefined,
    uri: uri(x),
    isDefault: i === 0,
  }));
  const subtitleGroup = texts.length > 0 ? SUBTITLE_GROUP : undefined;
  if (videos.length === 0) {
    for (const a of audios)
      variants.push({
        uri: uri(a),
        bandwidth: peak(a.rows) || 1,
        codecs: [a.codec],
        subtitleGroup,
      });
  } else {
    audios.forEach((a, i) => {
      renditions.push({
        type: 'AUDIO',
        groupId: 'audio',
        name: a.lang || `audio ${a.pid}`,
        language: a.lang || undefined,
        uri: uri(a),
        isDefault: i === 0,
      });
    });
    const audio = audios[0];
    for (const v of videos) {
      variants.push({
        uri: uri(v),
        bandwidth: peak(v.rows) + (audio ? peak(audio.rows) : 0) || 1,
        averageBandwidth: bitrate(v.rows) + (audio ? bitrate(audio.rows) : 0) || undefined,
        codecs: audio ? [v.codec, audio.codec] : [v.codec],
        width: v.width || undefined,
        height: v.height || undefined,
        audioGroup: audio ? 'audio' : undefined,
        subtitleGroup,
      });
    }
  }
  if (variants.length === 0) return undefined;
  return buildMasterPlaylist(variants, renditions, HLS_VERSION_ARCHIVE);
}

/** TS master with archived subtitle tracks `subs` (their languages in `langs`). */
export function vodTsMaster(
  rate: { average: number; peak: number },
  subs: string[],
  langs: string[],
  query: string,
): string {
  const renditions: Rendition[] = subs.map((id, i) => ({
    type: 'SUBTITLES',
    groupId: SUBTITLE_GROUP,
    name: langs[i] || `subtitles ${id}`,
    language: langs[i] || undefined,
    uri: `${id}/index.m3u8?${query}`,
    isDefault: i === 0,
  }));
  const variant: Variant = {
    uri: `ts.m3u8?${query}`,
    bandwidth: Math.round(rate.peak) || 1,
    averageBandwidth: Math.round(rate.average) || undefined,
    codecs: [],
    subtitleGroup: SUBTITLE_GROUP,
  };
  return buildMasterPlaylist([variant], renditions, HLS_VERSION_ARCHIVE);
}

/** Contiguous runs of the main track: [start of first row, end of last row) per run. */
export function runs(main: ChunkRow[]): { from: number; to: number; rows: ChunkRow[] }[] {
  const out: { from: number; to: number; rows: ChunkRow[] }[] = [];
  let prev: ChunkRow | undefined;
  for (const r of main) {
    const cur = out[out.length - 1];
    if (!cur || breaksRun(prev, r)) out.push({ from: r.start_ms, to: r.start_ms, rows: [r] });
    else cur.rows.push(r);
    out[out.length - 1]!.to = r.start_ms + r.duration * 1000;
    prev = r;
  }
  return out;
}

function descriptor(r: ChunkRow, i: number, text = false): SegmentDescriptor {
  return {
    seq: i,
    discSeq: 0,
    discontinuity: false,
    start: r.media_start,
    timescale: r.timescale,
    duration: r.duration,
    wallclock: r.start_ms,
    // DASH text segments are the `d` form: the same .vtt without X-TIMESTAMP-MAP.
    uri: text ? `d${r.id}.vtt` : `${r.id}.m4s`,
    size: r.bytes,
    parts: [],
  };
}

/**
 * Static MPD (spec 3 rule 5): one Period per contiguous run of the main track, each track a
 * Representation with explicit `.m4s` URLs under `<track>/dvr-i<init>/`. Gaps are not
 * played: each Period starts where the previous one ended.
 */
export function vodMpd(tracks: ArchiveTrack[], fallbackTarget: number): string {
  const main =
    tracks.find((t) => t.type === 'video' && t.rows.length) ?? tracks.find((t) => t.rows.length);
  const periods: DashPeriod[] = [];
  let at = 0;
  let maxSeg = 0;
  for (const run of main ? runs(main.rows) : []) {
    const reps: DashRepresentation[] = [];
    let length = 0;
    for (const t of tracks) {
      const rows = t.rows.filter(
        (r) =>
          r.start_ms >= run.from - GAP_TOLERANCE_MS && r.start_ms < run.to - GAP_TOLERANCE_MS / 2,
      );
      const mine = t === main ? run.rows : rows.filter((r) => r.init_id === rows[0]?.init_id);
      if (mine.length === 0 || (t.type !== 'video' && t.type !== 'audio' && t.type !== 'text'))
        continue;
      const text = t.type === 'text';
      const first = mine[0]!;
      let secs = 0;
      for (const r of mine) {
        secs += r.duration;
        maxSeg = Math.max(maxSeg, r.duration);
      }
      if (t === main) length = secs;
      // Each Period describes its own init: a resolution or profile change splits the runs.
      const a = t.attrs?.(first.init_id) ?? t;
      reps.push({
        id: t.id,
        contentType: t.type as 'video' | 'audio' | 'text',
        codecs: text ? '' : a.codec,
        mimeType: text ? 'text/vtt' : undefined,
        bandwidth: peak(mine) || 1,
        width: a.width || undefined,
        height: a.height || undefined,
        lang: t.lang || undefined,
        segments: mine.map((r, i) => descriptor(r, i, text)),
        timescale: first.timescale,
        periodOrigin: first.media_start,
        base: `${t.id}/dvr-i${first.init_id}/`,
      });
    }
    if (reps.length === 0) continue;
    periods.push({ id: `p${periods.length}`, start: at, representations: reps });
    at += length;
  }
  if (periods.length === 0) periods.push({ id: 'p0', start: 0, representations: [] });
  return buildMpd({
    dynamic: false,
    availabilityStartTime: 0,
    publishTime: 0,
    timeShiftBufferDepth: 0,
    minimumUpdatePeriod: 0,
    minBufferTime: fallbackTarget,
    suggestedPresentationDelay: 0,
    maxSegmentDuration: Math.max(maxSeg, main ? 0 : 0) || fallbackTarget,
    duration: at,
    periods,
  });
}
