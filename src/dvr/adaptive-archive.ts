// Archive playback on an adaptive group's URLs (spec 3 rule 7): `t`/`d`/`epg` on
// `/{group}/index.m3u8`, `cmaf.m3u8` and `index.mpd` combine the archives of the member
// streams. Only members with a ready archive storage enter the HLS master (others are skipped
// with a log note); the DASH manifest has a Representation per quality in each Period. The
// documents point at the members' own archive URLs (`{member}/c256/index.m3u8?t=…`,
// `{member}/c256/dvr-i5/9.m4s`), which the group forwards to the member stream.

import type { Logger } from 'pino';
import { type OttCachePolicy, ottCachePolicy } from '../ott/cache-policy.ts';
import { buildMasterPlaylist, HLS_VERSION_ARCHIVE, type Variant } from '../ott/hls.ts';
import { sendNotFound, sendText, TYPE_M3U8, TYPE_MPD } from '../ott/http.ts';
import type { OttReply, OttRequest } from '../ott/request.ts';
import type { StreamOttService } from '../ott/service.ts';
import type { Clock } from '../util/clock.ts';
import type { EpgLookup } from './epg.ts';
import { isSubtitleTrack, layoutLang, TS_TRACK } from './index-db.ts';
import { VOD_NO_ARCHIVE, VOD_NO_EVENT, VOD_NOT_RUNNING } from './playback.ts';
import { readStreamDvr } from './settings.ts';
import type { ArchiveStorage } from './storage.ts';
import { type ArchiveTrack, vodMaster, vodMpd, vodPlaylist } from './views.ts';
import { closedWindow, type Interval, parseArchive, resolveWindow, windowQuery } from './window.ts';

/** The group documents archive mode applies to; member paths go on to the member. */
const GROUP_DOCUMENTS = new Set(['index.m3u8', 'cmaf.m3u8', 'index.mpd']);
const TRACK_PID = /^[ct](\d+)/;

export interface ArchiveMember {
  name: string;
  svc: StreamOttService;
}

export interface GroupArchiveOptions {
  group: string;
  /** `ott-hls` of the group (1 HLS-TS, 2 CMAF, 3 both). */
  ts: boolean;
  cmaf: boolean;
  target: number;
  members: () => ArchiveMember[];
  /** The running storage with this id, if any. */
  storage: (id: number) => ArchiveStorage | undefined;
  epg?: EpgLookup;
  clock: Clock;
  log?: Logger;
  /** The server's Cache-Control policy (defaults without one). */
  cache?: OttCachePolicy;
}

interface Archived {
  name: string;
  spec: Record<string, unknown>;
  svc: StreamOttService;
  storage: ArchiveStorage;
}

type Query = Record<string, string | undefined>;

export class GroupArchive {
  /** Members already reported as skipped (one log line per member, not per request). */
  private noted = new Set<string>();

  constructor(private o: GroupArchiveOptions) {}

  /** Answer an archive request for a group document; undefined when it is not one. */
  handle(req: OttRequest, reply: OttReply, path: string): unknown {
    const query = (req.query ?? {}) as Query;
    const ask = parseArchive(path, query);
    if (!ask || !GROUP_DOCUMENTS.has(ask.path)) return undefined;
    const members = this.o.members();
    if (members.length === 0) return sendNotFound(reply, VOD_NOT_RUNNING);
    const archived = this.archived(members);
    if (archived.length === 0) return sendNotFound(reply, VOD_NO_ARCHIVE);
    let window: Interval;
    if (ask.ask.kind === 'epg') {
      const first = archived[0]!;
      const ev = this.o.epg?.(first.name, first.spec, ask.ask.at);
      if (!ev) return sendNotFound(reply, VOD_NO_EVENT);
      window = { from: ev.start * 1000, to: ev.stop * 1000 };
    } else {
      window = resolveWindow(ask.ask.t, ask.ask.d, this.o.clock.now(), this.archiveStart(archived));
    }
    const wq = windowQuery(window);
    const doc = ask.path;
    const closed = closedWindow(ask.ask, window, this.recordedTo(archived));
    const cache = (this.o.cache ?? ottCachePolicy()).archive(closed, this.o.target);
    if (doc === 'index.m3u8' && this.o.ts)
      return sendText(req, reply, this.tsMaster(archived, window, wq), TYPE_M3U8, cache);
    if (!this.o.cmaf) return sendNotFound(reply, 'not found');
    const tracks = this.tracks(archived, window, query);
    if (doc === 'index.mpd')
      return sendText(req, reply, vodMpd(tracks, this.o.target), TYPE_MPD, cache);
    const master =
      vodMaster(tracks, wq) ?? vodPlaylist([], { uri: () => '', fallbackTarget: this.o.target });
    return sendText(req, reply, master, TYPE_M3U8, cache);
  }

  /** Members bound to a ready storage; the others are left out with a log note. */
  private archived(members: ArchiveMember[]): Archived[] {
    const out: Archived[] = [];
    for (const m of members) {
      const spec = m.svc.spec;
      const id = readStreamDvr(spec).storage;
      const storage = id > 0 ? this.o.storage(id) : undefined;
      if (storage?.state === 'ready' && storage.index) {
        out.push({ name: m.name, spec, svc: m.svc, storage });
        this.noted.delete(m.name);
      } else if (!this.noted.has(m.name)) {
        this.noted.add(m.name);
        this.o.log?.info(
          { group: this.o.group, member: m.name, storage: id },
          'archive playback: member has no ready archive storage, left out of the group',
        );
      }
    }
    return out;
  }

  /** The earliest chunk of any member (t=0 and rule 2 move the window start to it). */
  /** Where every member's archive has been recorded to (ms): the earliest of their ends. */
  private recordedTo(archived: Archived[]): number | undefined {
    let to: number | undefined;
    for (const a of archived) {
      const index = a.storage.index!;
      const track = index.tracks(a.name).find((t) => !isSubtitleTrack(t));
      const last = track === undefined ? undefined : index.span(a.name, track)?.last;
      if (last === undefined) return undefined;
      to = to === undefined ? last : Math.min(to, last);
    }
    return to;
  }

  private archiveStart(archived: Archived[]): number | undefined {
    let first: number | undefined;
    for (const a of archived) {
      const index = a.storage.index!;
      for (const track of index.tracks(a.name)) {
        const s = index.firstStart(a.name, track);
        if (s !== undefined && (first === undefined || s < first)) first = s;
      }
    }
    return first;
  }

  /** HLS over TS: one variant per member with archived TS chunks in the window. */
  private tsMaster(archived: Archived[], w: Interval, wq: string): string {
    const variants: Variant[] = [];
    for (const a of archived) {
      const index = a.storage.index!;
      if (!(w.to > w.from && index.hasIn(a.name, TS_TRACK, w.from, w.to))) continue;
      const rate = index.rate(a.name, TS_TRACK, w.from, w.to);
      const tracks = [...a.svc.packager.segmenter.tracks.values()];
      const video = tracks.find((t) => t.type === 'video');
      const audio = tracks.find((t) => t.type === 'audio');
      variants.push({
        uri: `${a.name}/ts.m3u8?${wq}`,
        bandwidth: Math.round(rate.peak) || 1,
        averageBandwidth: Math.round(rate.average) || undefined,
        codecs: [video?.codec, audio?.codec].filter((c): c is string => c !== undefined),
        width: video?.video?.width,
        height: video?.video?.height,
        frameRate: video?.fps || undefined,
      });
    }
    if (variants.length > 0) return buildMasterPlaylist(variants, [], HLS_VERSION_ARCHIVE);
    // An empty window is still a valid closed playlist (spec 3 rule 3).
    return vodPlaylist([], { uri: () => '', fallbackTarget: this.o.target });
  }

  /**
   * CMAF tracks of the group in the window, named `{member}/{track}` so the documents' URIs
   * lead to the member: every member's video; audio and subtitles from the first member that
   * archived them (the renditions are shared by every variant, as live). `a`/`v` select.
   */
  private tracks(archived: Archived[], w: Interval, query: Query): ArchiveTrack[] {
    const list = (v: string | undefined) => (v ? v.split(',').map((s) => s.trim()) : []);
    const wantA = list(query.a);
    const wantV = list(query.v);
    const videos: ArchiveTrack[] = [];
    let others: ArchiveTrack[] | undefined;
    for (const a of archived) {
      const mine = memberTracks(a, w);
      const picked = mine.filter((t) => {
        if (t.type === 'text') return true;
        const want = t.type === 'video' ? wantV : wantA;
        return (
          want.length === 0 || want.includes(String(t.pid)) || (!!t.lang && want.includes(t.lang))
        );
      });
      videos.push(...picked.filter((t) => t.type === 'video'));
      const rest = picked.filter((t) => t.type !== 'video' && t.rows.length > 0);
      if (!others && rest.length > 0) others = rest;
    }
    return [...videos, ...(others ?? [])];
  }
}

/** One member's archived CMAF tracks (and WebVTT) with rows in the window and their layout. */
function memberTracks(a: Archived, w: Interval): ArchiveTrack[] {
  const index = a.storage.index!;
  const out: ArchiveTrack[] = [];
  for (const id of index
    .tracks(a.name)
    .filter((t) => t !== TS_TRACK)
    .sort()) {
    const rows = w.to > w.from ? index.range(a.name, id, w.from, w.to) : [];
    const pid = Number(TRACK_PID.exec(id)?.[1] ?? 0);
    const init = rows[0] ? index.initById(rows[0].init_id) : undefined;
    const layout = init ? (JSON.parse(init.layout) as Record<string, unknown>[]) : [];
    const l = layout.find((x) => x['pid'] === pid) ?? {};
    out.push({
      id: `${a.name}/${id}`,
      pid,
      type: isSubtitleTrack(id) ? 'text' : String(l['type'] ?? ''),
      codec: String(l['codec'] ?? ''),
      lang: layoutLang(l, id),
      width: Number(l['width'] ?? 0),
      height: Number(l['height'] ?? 0),
      rows,
    });
  }
  return out;
}
