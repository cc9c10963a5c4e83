// DASH manifest text (MPD). Live: type dynamic, SegmentTemplate with $Number$ and a
// SegmentTimeline per representation, a Period per discontinuity. Archive: type static with
// explicit segment URLs (spec 3 rule 5) and a SegmentTimeline of the real durations. Either
// way every segment's MPD time is its `tfdt`. Built from segment descriptors.
import type { SegmentDescriptor } from './store.ts';

const MPD_NS = 'urn:mpeg:dash:schema:mpd:2011';
const PROFILE_LIVE = 'urn:mpeg:dash:profile:isoff-live:2011';
const UTC_HTTP_ISO = 'urn:mpeg:dash:utc:http-iso:2014';

export interface DashRepresentation {
  id: string;
  contentType: 'video' | 'audio' | 'text';
  /** Empty for raw WebVTT text (no codecs attribute). */
  codecs: string;
  /** Default `<contentType>/mp4`; `text/vtt` for raw WebVTT segments. */
  mimeType?: string;
  /** Media template after `base`; default `$Number$.m4s`. No init segment when it is set for text. */
  media?: string;
  bandwidth: number;
  width?: number;
  height?: number;
  frameRate?: number;
  sampleRate?: number;
  channels?: number;
  lang?: string;
  /** Segments of this representation inside the period. */
  segments: SegmentDescriptor[];
  /** Track timescale and media time of the period start (presentationTimeOffset). */
  timescale: number;
  periodOrigin: number;
  /** Template base, e.g. `c256/` → `c256/init.mp4`, `c256/$Number$.m4s`. */
  base: string;
}

export interface DashPeriod {
  id: string;
  /** Seconds from availabilityStartTime (dynamic) or from the start (static). */
  start: number;
  representations: DashRepresentation[];
}

export interface MpdOptions {
  dynamic: boolean;
  availabilityStartTime: number;
  publishTime: number;
  timeShiftBufferDepth: number;
  minimumUpdatePeriod: number;
  minBufferTime: number;
  suggestedPresentationDelay: number;
  maxSegmentDuration: number;
  /** Static only. */
  duration?: number;
  utcTiming?: string;
  periods: DashPeriod[];
}

export function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** ISO 8601 duration in seconds, e.g. PT4.000S. */
export function isoDuration(s: number): string {
  return `PT${Math.max(0, s).toFixed(3)}S`;
}

function isoTime(ms: number): string {
  return new Date(Math.floor(ms)).toISOString();
}

/**
 * SegmentTimeline `S` elements: each segment at its own start and real duration (audio
 * segments alternate by a frame: AAC frames of 1024 samples do not divide the segment
 * length, so a nominal `@duration` drifts from the real starts by ~10 ms a segment). `@t`
 * only where a segment does not follow its predecessor; `repeat` folds equal durations into
 * `@r` runs. Exported for tests.
 */
export function timeline(segs: SegmentDescriptor[], repeat = true): string {
  const out: string[] = [];
  let expected = -1;
  let run: { t: number; d: number; r: number } | undefined;
  const flush = () => {
    if (!run) return;
    const t = run.t === expected ? '' : ` t="${run.t}"`;
    out.push(`<S${t} d="${run.d}"${run.r > 0 ? ` r="${run.r}"` : ''}/>`);
    expected = run.t + run.d * (run.r + 1);
    run = undefined;
  };
  for (const s of segs) {
    const d = Math.round(s.duration * s.timescale);
    if (repeat && run && run.d === d && run.t + run.d * (run.r + 1) === s.start) run.r++;
    else {
      flush();
      run = { t: s.start, d, r: 0 };
    }
  }
  flush();
  return out.join('');
}

function representation(r: DashRepresentation, dynamic: boolean): string {
  const attrs = [`id="${escapeXml(r.id)}"`];
  if (r.codecs) attrs.push(`codecs="${escapeXml(r.codecs)}"`);
  attrs.push(`bandwidth="${Math.max(1, Math.round(r.bandwidth))}"`);
  if (r.width && r.height) attrs.push(`width="${r.width}"`, `height="${r.height}"`);
  if (r.frameRate) attrs.push(`frameRate="${frameRateAttr(r.frameRate)}"`);
  if (r.sampleRate) attrs.push(`audioSamplingRate="${r.sampleRate}"`);
  const channels = r.channels
    ? `<AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="${r.channels}"/>`
    : '';
  const first = r.segments[0];
  let body: string;
  const initUri = escapeXml(r.base + (first?.map ?? 'init.mp4'));
  const init = r.contentType === 'text' ? '' : `initialization="${initUri}" `;
  const media = escapeXml(r.base + (r.media ?? '$Number$.m4s'));
  if (dynamic) {
    body =
      `<SegmentTemplate timescale="${r.timescale}" presentationTimeOffset="${r.periodOrigin}" ` +
      `${init}media="${media}" ` +
      `startNumber="${first?.seq ?? 0}"><SegmentTimeline>${timeline(r.segments)}</SegmentTimeline></SegmentTemplate>`;
  } else {
    const uri = (s: SegmentDescriptor) =>
      r.media ? r.media.replace('$Number$', String(s.seq)) : s.uri;
    const urls = r.segments
      .map((s) => `<SegmentURL media="${escapeXml(r.base + uri(s))}"/>`)
      .join('');
    // No `@r` here: dash.js (5.2) pairs a SegmentURL with the index of the `S` element rather
    // than of the segment, so a run would replay its first URL (dash.js pull request 5133).
    body =
      `<SegmentList timescale="${r.timescale}" presentationTimeOffset="${r.periodOrigin}">` +
      `${r.contentType === 'text' ? '' : `<Initialization sourceURL="${initUri}"/>`}` +
      `<SegmentTimeline>${timeline(r.segments, false)}</SegmentTimeline>${urls}</SegmentList>`;
  }
  return `<Representation ${attrs.join(' ')}>${channels}${body}</Representation>`;
}

function frameRateAttr(fps: number): string {
  const rounded = Math.round(fps);
  if (Math.abs(fps - rounded) < 0.001) return String(rounded);
  return `${Math.round(fps * 1001)}/1001`;
}

function adaptationSets(p: DashPeriod, dynamic: boolean): string {
  const groups = new Map<string, DashRepresentation[]>();
  for (const r of p.representations) {
    const key =
      r.contentType === 'video'
        ? 'video'
        : r.contentType === 'audio'
          ? `audio:${r.lang ?? ''}:${r.codecs}`
          : `text:${r.id}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  let id = 0;
  const out: string[] = [];
  for (const reps of groups.values()) {
    const r0 = reps[0]!;
    const attrs = [
      `id="${id++}"`,
      `contentType="${r0.contentType}"`,
      `mimeType="${r0.mimeType ?? `${r0.contentType}/mp4`}"`,
      'segmentAlignment="true"',
    ];
    if (r0.contentType !== 'text') attrs.push('startWithSAP="1"');
    if (r0.lang) attrs.push(`lang="${escapeXml(r0.lang)}"`);
    const role =
      r0.contentType === 'text'
        ? 'subtitle'
        : r0.contentType === 'audio' && id > 2
          ? 'alternate'
          : 'main';
    out.push(
      `<AdaptationSet ${attrs.join(' ')}><Role schemeIdUri="urn:mpeg:dash:role:2011" value="${role}"/>` +
        `${reps.map((r) => representation(r, dynamic)).join('')}</AdaptationSet>`,
    );
  }
  return out.join('');
}

export function buildMpd(o: MpdOptions): string {
  const attrs = [
    `xmlns="${MPD_NS}"`,
    `profiles="${PROFILE_LIVE}"`,
    `type="${o.dynamic ? 'dynamic' : 'static'}"`,
    `minBufferTime="${isoDuration(o.minBufferTime)}"`,
    `maxSegmentDuration="${isoDuration(o.maxSegmentDuration)}"`,
  ];
  if (o.dynamic) {
    attrs.push(
      `availabilityStartTime="${isoTime(o.availabilityStartTime)}"`,
      `publishTime="${isoTime(o.publishTime)}"`,
      `minimumUpdatePeriod="${isoDuration(o.minimumUpdatePeriod)}"`,
      `timeShiftBufferDepth="${isoDuration(o.timeShiftBufferDepth)}"`,
      `suggestedPresentationDelay="${isoDuration(o.suggestedPresentationDelay)}"`,
    );
  } else attrs.push(`mediaPresentationDuration="${isoDuration(o.duration ?? 0)}"`);
  const periods = o.periods
    .map(
      (p) =>
        `<Period id="${escapeXml(p.id)}" start="${isoDuration(p.start)}">${adaptationSets(p, o.dynamic)}</Period>`,
    )
    .join('\n');
  const utc = o.utcTiming
    ? `\n<UTCTiming schemeIdUri="${UTC_HTTP_ISO}" value="${escapeXml(o.utcTiming)}"/>`
    : '';
  return `<?xml version="1.0" encoding="UTF-8"?>\n<MPD ${attrs.join(' ')}>\n${periods}${utc}\n</MPD>\n`;
}
