// Archive playback on a stream's live URLs (spec 3): decides whether a request is an archive
// one, answers the four 404s, resolves the window (t/d, epg, aliases), builds the closed
// playlists / static MPD from the index and serves archived chunks from disk.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { OttCachePolicy } from '../ott/cache-policy.ts';
import {
  sendBytes,
  sendNotFound,
  sendText,
  TYPE_M3U8,
  TYPE_M4S,
  TYPE_MP4,
  TYPE_MPD,
  TYPE_TS,
  TYPE_VTT,
} from '../ott/http.ts';
import type { Packager } from '../ott/packager.ts';
import type { OttReply, OttRequest } from '../ott/request.ts';
import { filterPids } from '../ott/ts-filter.ts';
import { toDashVtt } from '../ott/webvtt/writer.ts';
import type { Clock } from '../util/clock.ts';
import type { EpgLookup } from './epg.ts';
import { type ChunkRow, isSubtitleTrack, layoutLang, TS_TRACK } from './index-db.ts';
import type { ArchiveSessions } from './sessions.ts';
import { readStreamDvr } from './settings.ts';
import type { ArchiveStorage } from './storage.ts';
import {
  droppedByLayout,
  type LayoutTrack,
  pmtPidOf,
  selectionOf,
  selectionQuery,
} from './ts-select.ts';
import { type ArchiveTrack, vodMaster, vodMpd, vodPlaylist, vodTsMaster } from './views.ts';
import {
  type ArchiveAsk,
  closedWindow,
  type Interval,
  parseArchive,
  resolveWindow,
  windowQuery,
} from './window.ts';

export const VOD_NOT_RUNNING = 'VOD: stream not running';
export const VOD_NO_ARCHIVE = 'VOD: no DVR archive';
export const VOD_DETACHED = 'VOD: DVR detached';
export const VOD_NO_EVENT = 'VOD: EPG event not found';
export const VOD_SEGMENT_GONE = 'VOD: segment not in the archive';

const TS_SEGMENT = /^seg-[0-9a-f]+\.ts$/;
const CMAF_CHUNK = /^(c\d+)\/dvr-i(\d+)\/(?:init\.mp4|(\d+)\.m4s)$/;
const CHILD_PLAYLIST = /^(c\d+|t\d+p[0-9a-f]+)\/index\.m3u8$/;
/** Archived WebVTT: `t<pid>p<page>/dvr-i<init>/<id>.vtt` (HLS), `…/d<id>.vtt` (DASH, no map). */
const VTT_CHUNK = /^(t\d+p[0-9a-f]+)\/dvr-i(\d+)\/(d?)(\d+)\.vtt$/;
const DEFAULT_TARGET = 4;

export interface PlaybackContext {
  name: string;
  spec: () => Record<string, unknown>;
  /** Stream state word (`running`, …). */
  state: () => string;
  packager?: Packager;
  /** The running storage with this id, if any. */
  storage: (id: number) => ArchiveStorage | undefined;
  sessions: ArchiveSessions;
  epg: EpgLookup;
  clock: Clock;
  log: Logger;
  /** The server's Cache-Control policy (http-server `segment-cache-max-age`). */
  cache: () => OttCachePolicy;
}

type Query = Record<string, string | undefined>;

/** The client an archive session belongs to: its address and the stream (or group) name. The
 *  client holds one session per window (src/dvr/sessions.ts). */
export function archiveClientKey(ip: string, name: string): string {
  return `${ip}|${name}`;
}

function clientKey(req: OttRequest, name: string): string {
  return archiveClientKey(req.ip, name);
}

export class ArchivePlayer {
  constructor(private c: PlaybackContext) {}

  private get target(): number {
    return this.c.packager?.settings.segmentDuration ?? DEFAULT_TARGET;
  }

  /**
   * Answer an archive request; undefined when the request is a live one (the caller passes it
   * on to the live OTT service).
   */
  handle(req: OttRequest, reply: OttReply, rest: string): Promise<unknown> | undefined {
    const path = rest.split('?')[0]!;
    const query = (req.query ?? {}) as Query;
    if (TS_SEGMENT.test(path)) {
      if (this.c.packager?.tsStore?.get(path)) return undefined; // live memory (rule 9)
      return this.tsChunk(req, reply, path);
    }
    const chunk = CMAF_CHUNK.exec(path);
    if (chunk) return this.cmafChunk(req, reply, chunk[1]!, Number(chunk[2]), chunk[3]);
    const vtt = VTT_CHUNK.exec(path);
    if (vtt) return this.vttChunk(req, reply, vtt[1]!, Number(vtt[2]), vtt[3] === 'd', vtt[4]!);
    const ask = parseArchive(path, query);
    if (!ask) return undefined;
    return this.document(req, reply, ask.path, ask.ask, query);
  }

  /** The storage the stream is bound to now, or the reason archive playback is refused. */
  private bound(req: OttRequest): { storage: ArchiveStorage; id: number } | { error: string } {
    if (this.c.state() !== 'running') return { error: VOD_NOT_RUNNING };
    const key = clientKey(req, this.c.name);
    const id = readStreamDvr(this.c.spec()).storage;
    const had = this.c.sessions.storageOf(key);
    if (had !== undefined && had !== id) {
      this.c.sessions.forget(key);
      return { error: VOD_DETACHED };
    }
    if (id === 0) return { error: VOD_NO_ARCHIVE };
    const storage = this.c.storage(id);
    if (storage?.state !== 'ready' || !storage.index) return { error: VOD_NO_ARCHIVE };
    return { storage, id };
  }

  private async document(
    req: OttRequest,
    reply: OttReply,
    path: string,
    ask: ArchiveAsk,
    query: Query,
  ): Promise<unknown> {
    const b = this.bound(req);
    if ('error' in b) return sendNotFound(reply, b.error);
    const { storage } = b;
    const index = storage.index!;
    const name = this.c.name;
    const p = this.c.packager;
    const child = CHILD_PLAYLIST.exec(path);
    const tsMode = p ? p.settings.ts : index.tracks(name).includes(TS_TRACK);
    const cmafMode = p ? p.settings.cmaf : index.tracks(name).some((t) => t !== TS_TRACK);
    const mainTrack = tsMode ? TS_TRACK : (child?.[1] ?? this.cmafMain(storage));
    let window: Interval;
    if (ask.kind === 'epg') {
      const ev = Number.isFinite(ask.at) ? this.c.epg(name, this.c.spec(), ask.at) : undefined;
      if (!ev) return sendNotFound(reply, VOD_NO_EVENT);
      window = { from: ev.start * 1000, to: ev.stop * 1000 };
    } else {
      const first = mainTrack ? index.firstStart(name, mainTrack) : undefined;
      window = resolveWindow(ask.t, ask.d, this.c.clock.now(), first);
      // A window "to now" ends at the end of the newest chunk, not at the clock: the same
      // request answers the same bytes until a chunk is added (rule 10), masters included.
      const end = ask.d > 0 || !mainTrack ? undefined : index.span(name, mainTrack)?.last;
      if (end !== undefined && end < window.to)
        window = { from: window.from, to: Math.max(window.from, end) };
    }
    const recordedTo = mainTrack ? index.span(name, mainTrack)?.last : undefined;
    const cache = this.c.cache().archive(closedWindow(ask, window, recordedTo), this.target);
    // A window running to now protects from its start onward, chunks recorded while the
    // session is open included (spec 3: the slot is registered with the window start).
    const open = ask.kind === 'window' && ask.d <= 0;
    const guard = open ? { from: window.from, to: Number.POSITIVE_INFINITY } : window;
    this.c.sessions.open(clientKey(req, name), b.id, storage, name, guard, req.raw.socket);
    // Media playlists come from the storage's rendered hour blocks (same text as vodPlaylist).
    const media = (track: string) =>
      storage.blocks.playlist(name, track, window.from, window.to, this.target).text;
    if (child) return sendText(req, reply, media(child[1]!), TYPE_M3U8, cache);
    if (path === 'index.m3u8' && tsMode) {
      // With archived subtitles in the window, index.m3u8 is a master (as live): the TS media
      // playlist plus a SUBTITLES group, every URI carrying the resolved window.
      const subs = index
        .tracks(name)
        .filter((x) => isSubtitleTrack(x) && index.hasIn(name, x, window.from, window.to))
        .sort();
      if (subs.length > 0) {
        const langs = subs.map((id) => this.trackLang(storage, id));
        const rate = index.rate(name, TS_TRACK, window.from, window.to);
        const sel = selectionQuery(query).replace('?', '&');
        const master = vodTsMaster(rate, subs, langs, windowQuery(window) + sel);
        return sendText(req, reply, master, TYPE_M3U8, cache);
      }
    }
    const wantTs = path === 'ts.m3u8' || (path === 'index.m3u8' && tsMode);
    if (wantTs && tsMode) {
      // `a`/`v` as live: the segment URIs carry the selection and are served PID-filtered.
      const sel = selectionQuery(query);
      const text = sel
        ? media(TS_TRACK).replace(/^(seg-[0-9a-f]+\.ts)$/gm, `$1${sel}`)
        : media(TS_TRACK);
      return sendText(req, reply, text, TYPE_M3U8, cache);
    }
    const wantMaster = path === 'cmaf.m3u8' || (path === 'index.m3u8' && !tsMode);
    if ((wantMaster || path === 'index.mpd') && cmafMode) {
      const tracks = this.tracks(storage, window, query);
      if (path === 'index.mpd')
        return sendText(req, reply, vodMpd(tracks, this.target), TYPE_MPD, cache);
      const master = vodMaster(tracks, windowQuery(window));
      // An empty window still gets a valid closed playlist (rule 3).
      const text = master ?? vodPlaylist([], { uri: () => '', fallbackTarget: this.target });
      return sendText(req, reply, text, TYPE_M3U8, cache);
    }
    return sendNotFound(reply, 'not found');
  }

  private cmafMain(storage: ArchiveStorage): string | undefined {
    return storage
      .index!.tracks(this.c.name)
      .filter((t) => t !== TS_TRACK)
      .sort()[0];
  }

  /** Language of a track from the newest layout recorded for it ('' when unknown). */
  private trackLang(storage: ArchiveStorage, id: string): string {
    const index = storage.index!;
    const row = index.newest(this.c.name, id, 1)[0];
    const init = row ? index.initById(row.init_id) : undefined;
    const pid = Number(/^[ct](\d+)/.exec(id)?.[1] ?? 0);
    const layout = init ? (JSON.parse(init.layout) as Record<string, unknown>[]) : [];
    return layoutLang(
      layout.find((x) => x['pid'] === pid),
      id,
    );
  }

  /** CMAF tracks recorded in the window with their layout, after the `a`/`v` selection. */
  private tracks(storage: ArchiveStorage, w: Interval, query: Query): ArchiveTrack[] {
    const index = storage.index!;
    const name = this.c.name;
    const list = (v: string | undefined) => (v ? v.split(',').map((s) => s.trim()) : []);
    const wantA = list(query.a);
    const wantV = list(query.v);
    const out: ArchiveTrack[] = [];
    for (const id of index
      .tracks(name)
      .filter((t) => t !== TS_TRACK)
      .sort()) {
      const rows = w.to > w.from ? index.range(name, id, w.from, w.to) : [];
      const subtitle = isSubtitleTrack(id);
      const pid = Number(/^[ct](\d+)/.exec(id)?.[1] ?? 0);
      const entry = (initId: number) => {
        const init = index.initById(initId);
        const layout = init ? (JSON.parse(init.layout) as Record<string, unknown>[]) : [];
        return layout.find((x) => x['pid'] === pid);
      };
      const l = (rows[0] ? entry(rows[0].init_id) : undefined) ?? {};
      const t: ArchiveTrack = {
        id,
        pid,
        type: subtitle ? 'text' : String(l['type'] ?? ''),
        codec: String(l['codec'] ?? ''),
        lang: layoutLang(l, id),
        width: Number(l['width'] ?? 0),
        height: Number(l['height'] ?? 0),
        rows,
        attrs: (initId) => {
          const e = entry(initId);
          if (!e) return undefined;
          return {
            codec: String(e['codec'] ?? ''),
            width: Number(e['width'] ?? 0),
            height: Number(e['height'] ?? 0),
          };
        },
      };
      if (subtitle) {
        out.push(t);
        continue;
      }
      const want = t.type === 'video' ? wantV : wantA;
      if (want.length > 0 && !want.includes(String(pid)) && !(t.lang && want.includes(t.lang)))
        continue;
      out.push(t);
    }
    return out;
  }

  private segmentStorage(req: OttRequest, reply: OttReply): ArchiveStorage | undefined {
    const id = readStreamDvr(this.c.spec()).storage;
    const storage = id ? this.c.storage(id) : undefined;
    if (!storage?.index) {
      sendNotFound(reply, VOD_NO_ARCHIVE);
      return undefined;
    }
    this.c.sessions.touch(clientKey(req, this.c.name), req.raw.socket);
    return storage;
  }

  private async tsChunk(req: OttRequest, reply: OttReply, uri: string): Promise<unknown> {
    const storage = this.segmentStorage(req, reply);
    if (!storage) return reply;
    const index = storage.index!;
    const row = index.byUri(this.c.name, uri);
    if (row?.track !== TS_TRACK) return this.sendChunk(req, reply, storage, undefined, TYPE_TS);
    const sel = selectionOf((req.query ?? {}) as Query);
    if (sel.audio.length === 0 && sel.video.length === 0)
      return this.sendChunk(req, reply, storage, row, TYPE_TS);
    let data: Buffer;
    try {
      data = await readFile(join(storage.dir, row.path));
    } catch {
      return sendNotFound(reply, VOD_SEGMENT_GONE);
    }
    const init = index.initById(row.init_id);
    const layout = init ? (JSON.parse(init.layout) as LayoutTrack[]) : [];
    const drop = droppedByLayout(layout, sel);
    const pmt = pmtPidOf(data);
    const body = drop.size > 0 && pmt !== undefined ? filterPids(data, drop, pmt) : data;
    return sendBytes(req, reply, body, TYPE_TS, this.c.cache().segment);
  }

  private async cmafChunk(
    req: OttRequest,
    reply: OttReply,
    track: string,
    initId: number,
    id: string | undefined,
  ): Promise<unknown> {
    const storage = this.segmentStorage(req, reply);
    if (!storage) return reply;
    const index = storage.index!;
    if (id === undefined) {
      const init = index.initById(initId);
      if (!init || init.stream !== this.c.name || init.track !== track || !init.path)
        return sendNotFound(reply, VOD_SEGMENT_GONE);
      return this.sendFile(req, reply, storage, init.path, TYPE_MP4);
    }
    const row = index.byId(Number(id));
    const ok = row && row.stream === this.c.name && row.track === track && row.init_id === initId;
    return this.sendChunk(req, reply, storage, ok ? row : undefined, TYPE_M4S);
  }

  /** An archived `.vtt`: HLS keeps X-TIMESTAMP-MAP, the DASH form (`d<id>.vtt`) drops it. */
  private async vttChunk(
    req: OttRequest,
    reply: OttReply,
    track: string,
    initId: number,
    dash: boolean,
    id: string,
  ): Promise<unknown> {
    const storage = this.segmentStorage(req, reply);
    if (!storage) return reply;
    const row = storage.index!.byId(Number(id));
    const ok = row && row.stream === this.c.name && row.track === track && row.init_id === initId;
    if (!ok) return sendNotFound(reply, VOD_SEGMENT_GONE);
    let body: Buffer;
    try {
      body = await readFile(join(storage.dir, row.path));
    } catch {
      return sendNotFound(reply, VOD_SEGMENT_GONE);
    }
    return sendBytes(req, reply, dash ? toDashVtt(body) : body, TYPE_VTT, this.c.cache().segment);
  }

  private sendChunk(
    req: OttRequest,
    reply: OttReply,
    storage: ArchiveStorage,
    row: ChunkRow | undefined,
    type: string,
  ): Promise<unknown> | unknown {
    // Removed by cleanup (or never recorded): 404 for the segment, never 500 (rule 8).
    if (!row) return sendNotFound(reply, VOD_SEGMENT_GONE);
    return this.sendFile(req, reply, storage, row.path, type);
  }

  private async sendFile(
    req: OttRequest,
    reply: OttReply,
    storage: ArchiveStorage,
    rel: string,
    type: string,
  ): Promise<unknown> {
    let data: Buffer;
    try {
      data = await readFile(join(storage.dir, rel));
    } catch {
      return sendNotFound(reply, VOD_SEGMENT_GONE);
    }
    return sendBytes(
      req,
      reply,
      data,
      type,
      type === TYPE_MP4 ? this.c.cache().live(this.target) : this.c.cache().segment,
    );
  }
}
