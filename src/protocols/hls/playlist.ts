// HLS playlists (RFC 8216), parsed defensively, no I/O: a master playlist's variants (in
// playlist order) or a media playlist's segments with their media sequence numbers,
// discontinuities, keys (EXT-X-KEY), initialisation sections (EXT-X-MAP) and byte ranges.
// Bounded: lines longer than MAX_LINE are skipped, at most MAX_VARIANTS variants and
// MAX_SEGMENTS segments are kept (the rest are counted), URIs are resolved against the
// playlist's own URL.

export const MAX_LINE = 64 * 1024;
export const MAX_VARIANTS = 1000;
export const MAX_SEGMENTS = 20_000;

export interface Variant {
  /** Resolved URL. */
  url: string;
  /** The URI as written in the playlist. */
  uri: string;
  bandwidth: number;
  resolution: string;
  codecs: string;
}

export interface ByteRange {
  length: number;
  offset: number;
}

export interface SegmentKey {
  method: 'NONE' | 'AES-128' | string;
  url: string;
  uri: string;
  /** 16 bytes, or undefined: the media sequence number is the IV. */
  iv?: Buffer;
}

export interface SegmentMap {
  url: string;
  uri: string;
  range?: ByteRange;
}

export interface Segment {
  url: string;
  uri: string;
  /** Media sequence number. */
  seq: number;
  duration: number;
  /** EXT-X-DISCONTINUITY in front of it. */
  discontinuity: boolean;
  key?: SegmentKey;
  map?: SegmentMap;
  range?: ByteRange;
}

export interface MasterPlaylist {
  kind: 'master';
  variants: Variant[];
  /** Variants beyond MAX_VARIANTS, not kept. */
  variantsDropped: number;
}

export interface MediaPlaylist {
  kind: 'media';
  targetDuration: number;
  mediaSequence: number;
  discontinuitySequence: number;
  /** EXT-X-ENDLIST: nothing will be added (VOD, or a finished event). */
  ended: boolean;
  playlistType: string;
  segments: Segment[];
  segmentsDropped: number;
}

export type Playlist = MasterPlaylist | MediaPlaylist;

export class PlaylistError extends Error {}

/** `A=1,B="x,y",C=0x10` → { A: '1', B: 'x,y', C: '0x10' } (names upper-cased). */
export function parseAttributes(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < s.length) {
    while (s[i] === ' ' || s[i] === ',') i++;
    const eq = s.indexOf('=', i);
    if (eq < 0) break;
    const name = s.slice(i, eq).trim().toUpperCase();
    i = eq + 1;
    let value: string;
    if (s[i] === '"') {
      const end = s.indexOf('"', i + 1);
      value = end < 0 ? s.slice(i + 1) : s.slice(i + 1, end);
      i = end < 0 ? s.length : end + 1;
    } else {
      const end = s.indexOf(',', i);
      value = (end < 0 ? s.slice(i) : s.slice(i, end)).trim();
      i = end < 0 ? s.length : end;
    }
    if (name && !(name in out)) out[name] = value;
  }
  return out;
}

/** Resolve `uri` against `base`; with `raw` the URI's path is kept as written (no
 *  normalisation or percent-encoding by the URL parser; only characters an HTTP request line
 *  cannot carry are escaped). */
export function resolveUri(base: string, uri: string, raw = false): string {
  const resolved = new URL(uri, base).href;
  if (!raw) return resolved;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(uri)) return escapeRequestChars(uri);
  const b = new URL(base);
  if (uri.startsWith('//')) return escapeRequestChars(`${b.protocol}${uri}`);
  if (uri.startsWith('/')) return escapeRequestChars(`${b.origin}${uri}`);
  const rawBase = base.replace(/[?#].*$/, '');
  return escapeRequestChars(rawBase.slice(0, rawBase.lastIndexOf('/') + 1) + uri);
}

function escapeRequestChars(s: string): string {
  return s.replace(/[\x00-\x20\x7f]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function byteRange(v: string, next: number): ByteRange | undefined {
  const m = /^(\d+)(?:@(\d+))?$/.exec(v.trim());
  if (!m) return undefined;
  const length = Number(m[1]);
  const offset = m[2] !== undefined ? Number(m[2]) : next;
  if (!Number.isSafeInteger(length) || !Number.isSafeInteger(offset)) return undefined;
  return { length, offset };
}

function hexIv(v: string | undefined): Buffer | undefined {
  if (!v) return undefined;
  const m = /^0x([0-9a-f]{1,32})$/i.exec(v.trim());
  if (!m) return undefined;
  return Buffer.from(m[1]!.padStart(32, '0'), 'hex');
}

/** Parse a playlist fetched from `url`. Throws PlaylistError when it is not one. */
export function parsePlaylist(text: string, url: string, rawUris = false): Playlist {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (!/^\s*#EXTM3U/.test(body.slice(0, 64))) throw new PlaylistError('not an HLS playlist');
  const variants: Variant[] = [];
  let variantsDropped = 0;
  let pendingVariant: Record<string, string> | null = null;
  const segments: Segment[] = [];
  let segmentsDropped = 0;
  let targetDuration = 0;
  let mediaSequence = 0;
  let discontinuitySequence = 0;
  let ended = false;
  let playlistType = '';
  let duration = 0;
  let discontinuity = false;
  let key: SegmentKey | undefined;
  let map: SegmentMap | undefined;
  let range: ByteRange | undefined;
  let nextRangeOffset = 0;
  let sawMedia = false;
  let seq = -1;
  let lineStart = 0;
  while (lineStart < body.length) {
    let end = body.indexOf('\n', lineStart);
    if (end < 0) end = body.length;
    const long = end - lineStart > MAX_LINE;
    const line = long ? '' : body.slice(lineStart, end).trim();
    lineStart = end + 1;
    if (!line) continue;
    if (line.startsWith('#')) {
      const colon = line.indexOf(':');
      const tag = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1);
      switch (tag) {
        case '#EXT-X-STREAM-INF':
          pendingVariant = parseAttributes(value);
          break;
        case '#EXT-X-TARGETDURATION':
          targetDuration = Number(value) || 0;
          sawMedia = true;
          break;
        case '#EXT-X-MEDIA-SEQUENCE':
          mediaSequence = Math.max(0, Math.floor(Number(value) || 0));
          break;
        case '#EXT-X-DISCONTINUITY-SEQUENCE':
          discontinuitySequence = Math.floor(Number(value) || 0);
          break;
        case '#EXT-X-ENDLIST':
          ended = true;
          break;
        case '#EXT-X-PLAYLIST-TYPE':
          playlistType = value.trim();
          break;
        case '#EXTINF':
          duration = Number.parseFloat(value) || 0;
          sawMedia = true;
          break;
        case '#EXT-X-DISCONTINUITY':
          discontinuity = true;
          break;
        case '#EXT-X-BYTERANGE':
          range = byteRange(value, nextRangeOffset);
          break;
        case '#EXT-X-KEY': {
          const a = parseAttributes(value);
          const method = (a['METHOD'] ?? 'NONE').toUpperCase();
          if (method === 'NONE') key = undefined;
          else {
            const uri = a['URI'] ?? '';
            const iv = hexIv(a['IV']);
            key = {
              method,
              uri,
              url: uri ? resolveUri(url, uri, rawUris) : '',
              ...(iv ? { iv } : {}),
            };
          }
          break;
        }
        case '#EXT-X-MAP': {
          const a = parseAttributes(value);
          const uri = a['URI'] ?? '';
          const r = a['BYTERANGE'] ? byteRange(a['BYTERANGE'], 0) : undefined;
          map = uri
            ? { uri, url: resolveUri(url, uri, rawUris), ...(r ? { range: r } : {}) }
            : undefined;
          break;
        }
      }
      continue;
    }
    // A URI line: a variant after EXT-X-STREAM-INF, else a segment.
    if (pendingVariant) {
      const a = pendingVariant;
      pendingVariant = null;
      if (variants.length >= MAX_VARIANTS) {
        variantsDropped++;
        continue;
      }
      let resolved: string;
      try {
        resolved = resolveUri(url, line, rawUris);
      } catch {
        continue;
      }
      variants.push({
        url: resolved,
        uri: line,
        bandwidth: Number(a['BANDWIDTH']) || 0,
        resolution: a['RESOLUTION'] ?? '',
        codecs: a['CODECS'] ?? '',
      });
      continue;
    }
    if (seq < 0) seq = mediaSequence;
    const s = seq++;
    if (range) nextRangeOffset = range.offset + range.length;
    let resolved = '';
    try {
      resolved = resolveUri(url, line, rawUris);
    } catch {
      resolved = '';
    }
    if (resolved && segments.length < MAX_SEGMENTS) {
      segments.push({
        url: resolved,
        uri: line,
        seq: s,
        duration,
        discontinuity,
        ...(key ? { key } : {}),
        ...(map ? { map } : {}),
        ...(range ? { range } : {}),
      });
    } else segmentsDropped++;
    duration = 0;
    discontinuity = false;
    range = undefined;
  }
  if (variants.length > 0 || (variantsDropped > 0 && !sawMedia)) {
    return { kind: 'master', variants, variantsDropped };
  }
  return {
    kind: 'media',
    targetDuration,
    mediaSequence,
    discontinuitySequence,
    ended,
    playlistType,
    segments,
    segmentsDropped,
  };
}
