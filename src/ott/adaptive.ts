// An adaptive group (`stream-adaptive`): one HLS master / DASH manifest over the packagers of
// its member streams. Member playlists and segments are served by the members themselves under
// `/{group}/{member}/…`; the members cut on a shared PTS grid so their segments line up, and
// number their discontinuities together (./group-discontinuity.ts).

import type { Clock } from '../util/clock.ts';
import { type OttCachePolicy, ottCachePolicy } from './cache-policy.ts';
import { buildMpd, type DashPeriod, type DashRepresentation } from './dash.ts';
import { GroupDiscontinuities } from './group-discontinuity.ts';
import {
  averageBitrate,
  buildMasterPlaylist,
  HLS_VERSION_FMP4,
  peakBitrate,
  type Rendition,
  type Variant,
} from './hls.ts';
import { sendNotFound, sendText, TYPE_M3U8, TYPE_MPD } from './http.ts';
import { OTT_BOTH, OTT_CMAF, OTT_HLS_TS } from './options.ts';
import type { CmafRendition } from './packager.ts';
import type { OttReply, OttRequest } from './request.ts';
import type { OttHandler } from './router.ts';
import type { StreamOttService } from './service.ts';
import type { SegmentDescriptor } from './store.ts';
import { PTS_HZ } from './timeline.ts';
import { parseSelection, readyRenditions, type Selection, subtitleRenditions } from './views.ts';

const AUDIO_GROUP = 'audio';
const SUBTITLE_GROUP = 'subs';
const UNKNOWN_BITRATE = 1_000_000;
const VTT_BANDWIDTH = 256;
/** Segments starting this close before the period origin still belong to the period (rounding). */
const ORIGIN_SLACK = PTS_HZ / 100;

/** Answers the archive requests of a group document; undefined when the request is not one. */
export interface GroupArchiveHandler {
  handle(req: OttRequest, reply: OttReply, path: string): unknown;
}

export interface GroupMember {
  name: string;
  svc: StreamOttService;
}

export interface AdaptiveGroupOptions {
  name: string;
  /** `ott-hls` of the group: 1 HLS-TS, 2 CMAF, 3 both. */
  mode: number;
  segmentDuration: number;
  window: number;
  /** The member streams whose OTT service is running, in the configured order. */
  members: () => GroupMember[];
  clock: Clock;
  /** Archive playback of the group (`t`, `d`, `epg`; src/dvr/adaptive-archive.ts). */
  archive?: GroupArchiveHandler;
  /** The full handler of a member stream (with its archive), for `/{group}/{member}/…`;
   *  without it the member's live OTT service answers. */
  route?: (member: string) => OttHandler | undefined;
  /** The server's Cache-Control policy (defaults without one). */
  cache?: OttCachePolicy;
}

function rate(segs: SegmentDescriptor[], fallback: number): number {
  return peakBitrate(segs) || fallback || UNKNOWN_BITRATE;
}

export class AdaptiveGroup {
  /** One discontinuity sequence for all members: a restart of one member's encoder is a
   *  discontinuity at the same media time in every variant (RFC 8216 §6.2.4). */
  readonly discontinuities = new GroupDiscontinuities();

  constructor(public o: AdaptiveGroupOptions) {}

  private get ts(): boolean {
    return this.o.mode === OTT_HLS_TS || this.o.mode === OTT_BOTH;
  }

  private get cmaf(): boolean {
    return this.o.mode === OTT_CMAF || this.o.mode === OTT_BOTH;
  }

  /** Members with alignment switched on and their discontinuities numbered by the group
   *  (idempotent: a member may have restarted). */
  members(): GroupMember[] {
    const list = this.o.members();
    for (const m of list) m.svc.packager.segmenter.align = true;
    this.discontinuities.sync(list.map((m) => m.svc.packager));
    return list;
  }

  close(): void {
    this.discontinuities.close();
  }

  handle(req: OttRequest, reply: OttReply, rest: string): unknown {
    const path = rest.split('?')[0]!;
    const query = (req.query ?? {}) as Record<string, string | undefined>;
    const members = this.members();
    const sel = parseSelection(query);
    if (path === 'time')
      return sendText(req, reply, new Date(this.o.clock.now()).toISOString(), 'text/plain');
    const archived = this.o.archive?.handle(req, reply, path);
    if (archived !== undefined) return archived;
    let text: string | undefined;
    if (path === 'index.m3u8')
      text = this.ts ? this.tsMaster(members) : this.cmafMaster(members, sel);
    else if (path === 'cmaf.m3u8' && this.cmaf) text = this.cmafMaster(members, sel);
    else if (path === 'index.mpd' && this.cmaf) {
      const mpd = this.mpd(members, sel);
      return mpd
        ? sendText(req, reply, mpd, TYPE_MPD, this.liveCache())
        : sendNotFound(reply, 'group not ready');
    } else {
      const slash = path.indexOf('/');
      const member = members.find((m) => m.name === path.slice(0, slash));
      if (slash > 0 && member) {
        const route = this.o.route?.(member.name);
        const sub = rest.slice(slash + 1);
        return route ? route(req, reply, sub) : member.svc.handle(req, reply, sub);
      }
      return sendNotFound(reply, 'not found');
    }
    return text
      ? sendText(req, reply, text, TYPE_M3U8, this.liveCache())
      : sendNotFound(reply, 'group not ready');
  }

  private liveCache(): string {
    return (this.o.cache ?? ottCachePolicy()).live(this.o.segmentDuration);
  }

  /** HLS over TS: one variant per member (its whole programme). */
  tsMaster(members: GroupMember[]): string | undefined {
    const variants: Variant[] = [];
    for (const m of members) {
      const p = m.svc.packager;
      const segs = p.tsStore?.live() ?? [];
      if (segs.length === 0) continue;
      const tracks = [...p.segmenter.tracks.values()];
      const video = tracks.find((t) => t.type === 'video');
      const audio = tracks.find((t) => t.type === 'audio');
      variants.push({
        uri: `${m.name}/ts.m3u8`,
        bandwidth: rate(segs, 0),
        averageBandwidth: averageBitrate(segs) || undefined,
        codecs: [video?.codec, audio?.codec].filter((c): c is string => c !== undefined),
        width: video?.video?.width,
        height: video?.video?.height,
        frameRate: video?.fps || undefined,
      });
    }
    return variants.length ? buildMasterPlaylist(variants, []) : undefined;
  }

  /** CMAF: every member's video as a variant; audio and subtitles from the first member
   *  that has them, as EXT-X-MEDIA renditions shared by all variants. */
  cmafMaster(members: GroupMember[], sel: Selection): string | undefined {
    const ready = members.map((m) => ({ m, r: readyRenditions(m.svc.packager, sel) }));
    const audioOwner = ready.find((x) => x.r.some((r) => r.track.type === 'audio'));
    const audios = audioOwner?.r.filter((r) => r.track.type === 'audio') ?? [];
    const subOwner = members.find((m) => subtitleRenditions(m.svc.packager, sel).length > 0);
    const subs = subOwner ? subtitleRenditions(subOwner.svc.packager, sel) : [];
    const renditions: Rendition[] = [];
    audios.forEach((a, i) => {
      renditions.push({
        type: 'AUDIO',
        groupId: AUDIO_GROUP,
        name: a.track.es.language ?? `audio ${a.track.pid}`,
        language: a.track.es.language,
        uri: `${audioOwner!.m.name}/${a.id}/index.m3u8`,
        isDefault: i === 0,
        channels: a.track.audio?.channels,
      });
    });
    subs.forEach((s, i) => {
      renditions.push({
        type: 'SUBTITLES',
        groupId: SUBTITLE_GROUP,
        name: `${s.language ?? 'subtitles'} ${s.page.toString(16)}`,
        language: s.language,
        uri: `${subOwner!.name}/${s.id}/index.m3u8`,
        isDefault: i === 0,
      });
    });
    const audio = audios[0];
    const audioRate = audio ? rate(audio.store.live(), audio.track.bitrate) : 0;
    const variants: Variant[] = [];
    for (const { m, r } of ready) {
      for (const v of r.filter((x) => x.track.type === 'video')) {
        const segs = v.store.live();
        variants.push({
          uri: `${m.name}/${v.id}/index.m3u8`,
          bandwidth: rate(segs, v.track.bitrate) + audioRate,
          averageBandwidth:
            averageBitrate(segs) + (audio ? averageBitrate(audio.store.live()) : 0) || undefined,
          codecs: audio ? [v.track.codec!, audio.track.codec!] : [v.track.codec!],
          width: v.track.video?.width,
          height: v.track.video?.height,
          frameRate: v.track.fps || undefined,
          audioGroup: audio ? AUDIO_GROUP : undefined,
          subtitleGroup: subs.length ? SUBTITLE_GROUP : undefined,
        });
      }
    }
    if (variants.length === 0) return undefined;
    return buildMasterPlaylist(variants, renditions, HLS_VERSION_FMP4);
  }

  /**
   * DASH: one Period from the first member's current run. Every representation starts at the
   * same PTS origin (its presentationTimeOffset), which holds because members cut on the grid.
   */
  mpd(members: GroupMember[], sel: Selection): string | undefined {
    const ref = members.find((m) =>
      readyRenditions(m.svc.packager, sel).some(
        (r) => r.track.type === 'video' && r.store.live().length,
      ),
    );
    if (!ref || ref.svc.packager.availabilityStart === undefined) return undefined;
    const rp = ref.svc.packager;
    const refVideo = readyRenditions(rp, sel).find((r) => r.track.type === 'video')!;
    const disc = refVideo.store.last()!.discSeq;
    const origin90 = refVideo.store.periodOrigins.get(disc)!;
    const ast = rp.availabilityStart!;
    const period: DashPeriod = {
      id: `p${disc}`,
      start: Math.max(0, ((rp.periodWallclock.get(disc) ?? ast) - ast) / 1000),
      representations: [],
    };
    let maxSeg = 0;
    const add = (owner: GroupMember, r: CmafRendition) => {
      const scale = r.store.live()[0]?.timescale ?? PTS_HZ;
      const originTs = Math.round((origin90 * scale) / PTS_HZ);
      const slack = Math.round((ORIGIN_SLACK * scale) / PTS_HZ);
      const last = r.store.last()?.discSeq;
      const segs = r.store.live().filter((s) => s.discSeq === last && s.start >= originTs - slack);
      if (segs.length === 0) return;
      for (const s of segs) maxSeg = Math.max(maxSeg, s.duration);
      const rep: DashRepresentation = {
        id: `${owner.name}-${r.id}`,
        contentType: r.track.type === 'video' ? 'video' : 'audio',
        codecs: r.track.codec!,
        bandwidth: rate(segs, r.track.bitrate),
        width: r.track.video?.width,
        height: r.track.video?.height,
        frameRate: r.track.fps || undefined,
        sampleRate: r.track.audio?.sampleRate,
        channels: r.track.audio?.channels,
        lang: r.track.es.language,
        segments: segs,
        timescale: scale,
        periodOrigin: originTs,
        base: `${owner.name}/${r.id}/`,
      };
      period.representations.push(rep);
    };
    for (const m of members)
      for (const r of readyRenditions(m.svc.packager, sel)) if (r.track.type === 'video') add(m, r);
    const audioOwner = members.find((m) =>
      readyRenditions(m.svc.packager, sel).some((r) => r.track.type === 'audio'),
    );
    if (audioOwner)
      for (const r of readyRenditions(audioOwner.svc.packager, sel))
        if (r.track.type === 'audio') add(audioOwner, r);
    const subOwner = members.find((m) => subtitleRenditions(m.svc.packager, sel).length > 0);
    for (const s of subOwner ? subtitleRenditions(subOwner.svc.packager, sel) : []) {
      const segs = s.store
        .live()
        .filter((x) => x.discSeq === disc && x.start >= origin90 - ORIGIN_SLACK);
      if (segs.length === 0) continue;
      period.representations.push({
        id: `${subOwner!.name}-${s.id}`,
        contentType: 'text',
        codecs: '',
        mimeType: 'text/vtt',
        media: 'd$Number$.vtt',
        bandwidth: VTT_BANDWIDTH,
        lang: s.language,
        segments: segs,
        timescale: PTS_HZ,
        periodOrigin: s.store.periodOrigins.get(disc) ?? segs[0]!.start,
        base: `${subOwner!.name}/${s.id}/`,
      });
    }
    const target = this.o.segmentDuration;
    return buildMpd({
      dynamic: true,
      availabilityStartTime: ast,
      publishTime: this.o.clock.now(),
      timeShiftBufferDepth: this.o.window * target,
      minimumUpdatePeriod: target,
      minBufferTime: target,
      suggestedPresentationDelay: 2 * target,
      maxSegmentDuration: Math.max(maxSeg, target),
      utcTiming: 'time',
      periods: [period],
    });
  }
}
