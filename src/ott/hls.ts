// HLS playlist text: media playlists (TS or fMP4, live or archive) built from segment
// descriptors, and master playlists from variant and rendition descriptions.
import type { SegmentDescriptor } from './store.ts';

export const HLS_VERSION_TS = 3;
export const HLS_VERSION_FMP4 = 7;
/** Spec 3 rule 4: archive playlists declare version 6. */
export const HLS_VERSION_ARCHIVE = 6;

export interface MediaPlaylistOptions {
  segments: SegmentDescriptor[];
  targetDuration: number;
  /** `EXT-X-MAP` URI for fMP4 renditions. */
  map?: string;
  /** Archive (VOD) playlist: PLAYLIST-TYPE VOD, media sequence 0, ENDLIST (spec 3 rule 4). */
  vod?: boolean;
  /** Added to every segment URI (e.g. `?a=eng`). */
  query?: string;
  version?: number;
}

/**
 * EXT-X-TARGETDURATION from the longest segment (seconds): rounded to the nearest integer
 * (RFC 8216bis 4.4.3.1), at least 1. Rounding, not ceiling: an audio segment a frame longer
 * than the video's (4.011 s beside 4.000 s) gets the same target.
 */
export function targetDurationOf(longest: number): number {
  return Math.max(1, Math.round(longest));
}

export function formatDuration(s: number): string {
  return s.toFixed(3);
}

export function quote(s: string): string {
  return `"${s.replace(/"/g, "'")}"`;
}

/** Header lines shared by plain and low-latency media playlists. */
export function mediaHeader(o: MediaPlaylistOptions, extra: string[] = []): string[] {
  const first = o.segments[0];
  const version =
    o.version ?? (o.vod ? HLS_VERSION_ARCHIVE : o.map ? HLS_VERSION_FMP4 : HLS_VERSION_TS);
  const lines = [
    '#EXTM3U',
    `#EXT-X-VERSION:${version}`,
    `#EXT-X-TARGETDURATION:${o.targetDuration}`,
  ];
  if (o.vod) lines.push('#EXT-X-PLAYLIST-TYPE:VOD');
  lines.push(...extra);
  lines.push(`#EXT-X-MEDIA-SEQUENCE:${o.vod ? 0 : (first?.seq ?? 0)}`);
  if (!o.vod && first && first.discSeq > 0)
    lines.push(`#EXT-X-DISCONTINUITY-SEQUENCE:${first.discSeq}`);
  lines.push('#EXT-X-INDEPENDENT-SEGMENTS');
  // A segment's own init (after a parameter change) wins over the playlist's default.
  const map = o.map ? (first?.map ?? o.map) : undefined;
  if (map) lines.push(`#EXT-X-MAP:URI=${quote(map + (o.query ?? ''))}`);
  return lines;
}

/** Lines of one segment; `i` is its position in the list (no marker before the first). */
export function segmentLines(
  s: SegmentDescriptor,
  i: number,
  prev: SegmentDescriptor | undefined,
  query = '',
  partLines: string[] = [],
) {
  const lines: string[] = [];
  const spliced = prev ? prev.discSeq !== s.discSeq : false;
  if (i > 0 && (s.discontinuity || spliced)) lines.push('#EXT-X-DISCONTINUITY');
  // A new init segment (new picture parameters) is named before the first segment using it.
  if (i > 0 && s.map && s.map !== (prev?.map ?? 'init.mp4'))
    lines.push(`#EXT-X-MAP:URI=${quote(s.map + query)}`);
  // Date only on the first line: after a splice the player should butt the new timeline
  // against the old one; a wall-clock date there would open a hole the size of the switch.
  if (i === 0) lines.push(`#EXT-X-PROGRAM-DATE-TIME:${new Date(s.wallclock).toISOString()}`);
  // LL-HLS parts sit after the segment's tags and before its EXTINF.
  lines.push(...partLines, `#EXTINF:${formatDuration(s.duration)},`, s.uri + query);
  return lines;
}

export function buildMediaPlaylist(o: MediaPlaylistOptions): string {
  const lines = mediaHeader(o);
  o.segments.forEach((s, i) => {
    lines.push(...segmentLines(s, i, o.segments[i - 1], o.query));
  });
  if (o.vod) lines.push('#EXT-X-ENDLIST');
  return `${lines.join('\n')}\n`;
}

export interface Variant {
  uri: string;
  bandwidth: number;
  averageBandwidth?: number;
  codecs: string[];
  width?: number;
  height?: number;
  frameRate?: number;
  audioGroup?: string;
  subtitleGroup?: string;
}

export interface Rendition {
  type: 'AUDIO' | 'SUBTITLES';
  groupId: string;
  name: string;
  language?: string;
  uri: string;
  isDefault: boolean;
  channels?: number;
}

export function buildMasterPlaylist(
  variants: Variant[],
  renditions: Rendition[],
  version = HLS_VERSION_TS,
): string {
  const lines = ['#EXTM3U', `#EXT-X-VERSION:${version}`, '#EXT-X-INDEPENDENT-SEGMENTS'];
  for (const r of renditions) {
    const attrs = [`TYPE=${r.type}`, `GROUP-ID=${quote(r.groupId)}`, `NAME=${quote(r.name)}`];
    if (r.language) attrs.push(`LANGUAGE=${quote(r.language)}`);
    attrs.push(`DEFAULT=${r.isDefault ? 'YES' : 'NO'}`, 'AUTOSELECT=YES');
    if (r.channels) attrs.push(`CHANNELS=${quote(String(r.channels))}`);
    attrs.push(`URI=${quote(r.uri)}`);
    lines.push(`#EXT-X-MEDIA:${attrs.join(',')}`);
  }
  for (const v of variants) {
    const attrs = [`BANDWIDTH=${Math.max(1, Math.round(v.bandwidth))}`];
    if (v.averageBandwidth) attrs.push(`AVERAGE-BANDWIDTH=${Math.round(v.averageBandwidth)}`);
    if (v.codecs.length > 0) attrs.push(`CODECS=${quote(v.codecs.join(','))}`);
    if (v.width && v.height) attrs.push(`RESOLUTION=${v.width}x${v.height}`);
    if (v.frameRate) attrs.push(`FRAME-RATE=${v.frameRate.toFixed(3)}`);
    if (v.audioGroup) attrs.push(`AUDIO=${quote(v.audioGroup)}`);
    if (v.subtitleGroup) attrs.push(`SUBTITLES=${quote(v.subtitleGroup)}`);
    lines.push(`#EXT-X-STREAM-INF:${attrs.join(',')}`, v.uri);
  }
  return `${lines.join('\n')}\n`;
}

/** Peak bit rate of a rendition from its segments (bits per second), 0 when unknown. */
export function peakBitrate(segments: SegmentDescriptor[]): number {
  let peak = 0;
  for (const s of segments) if (s.duration > 0) peak = Math.max(peak, (s.size * 8) / s.duration);
  return peak;
}

export function averageBitrate(segments: SegmentDescriptor[]): number {
  let bytes = 0;
  let secs = 0;
  for (const s of segments) {
    bytes += s.size;
    secs += s.duration;
  }
  return secs > 0 ? (bytes * 8) / secs : 0;
}
