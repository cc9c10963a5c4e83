// The OTT service of one stream: subscribes the packager to the stream bus and answers the
// requests under `/{name}/` (playlists, manifest, init and media segments, time source).

import type { Logger } from 'pino';
import type { StreamBus } from '../engine/bus.ts';
import type { Clock } from '../util/clock.ts';
import type { Services } from '../util/services.ts';
import { type OttCachePolicy, ottCachePolicy } from './cache-policy.ts';
import {
  RenderCache,
  sendBytes,
  sendError,
  sendNotFound,
  sendText,
  TYPE_M3U8,
  TYPE_M4S,
  TYPE_MP4,
  TYPE_MPD,
  TYPE_TS,
  TYPE_VTT,
  waitFor,
} from './http.ts';
import { LIVE_DELIVERY_SERVICE, LIVE_PUBLISHING_SERVICE, LivePublisher } from './live-publish.ts';
import { lastPosition } from './llhls.ts';
import { readSettings } from './options.ts';
import { type CmafRendition, Packager } from './packager.ts';
import { ottRegistry } from './registry.ts';
import type { OttReply, OttRequest } from './request.ts';
import { FilteredCache, filterPids } from './ts-filter.ts';
import type { OttService } from './types.ts';
import {
  cmafMaster,
  cmafMediaPlaylist,
  dashManifest,
  droppedPids,
  parseSelection,
  tsMaster,
  tsMediaPlaylist,
  vttMediaPlaylist,
} from './views.ts';
import { toDashVtt } from './webvtt/writer.ts';

/** A blocking request waits at most this many target durations (RFC 8216bis 6.2.5.2). */
const BLOCK_TARGETS = 3;
/** `_HLS_msn` further than this past the live edge is refused with 400. */
const MSN_AHEAD_LIMIT = 2;
const TIME_PATH = 'time';
const RENDITION_PATH = /^(c\d+)\/(init(?:-\d+)?\.mp4|index\.m3u8|(\d+)(?:\.(\d+))?\.m4s)$/;
const TS_SEGMENT = /^seg-[0-9a-f]+\.ts$/;
/** Subtitle rendition paths: `t<pid>p<page>/index.m3u8`, `<n>.vtt` (HLS), `d<n>.vtt` (DASH). */
const VTT_PATH = /^(t\d+p[0-9a-f]+)\/(index\.m3u8|(d?)(\d+)\.vtt)$/;

export interface OttServiceOptions {
  name: string;
  spec: Record<string, unknown>;
  bus: StreamBus;
  clock: Clock;
  log: Logger;
  services?: Services;
}

/** Live parameters carried from a master playlist to the playlists it names. */
const KEPT_PARAMETERS = ['a', 'v', 's', 'm'];
/** The query of a request without parameters (its kept query is ''). */
const NO_QUERY: Record<string, string | undefined> = {};
/** Parameters that change the bytes of an HLS-TS segment (PID filtering). */
const SEGMENT_PARAMETERS = ['a', 'v'];

function keptQuery(query: Record<string, string | undefined>, keys = KEPT_PARAMETERS): string {
  const keep = new URLSearchParams();
  for (const k of keys) if (query[k]) keep.set(k, query[k]!);
  return keep.size > 0 ? `?${keep}` : '';
}

export class StreamOttService implements OttService {
  readonly packager: Packager;
  private unsubscribe: () => void;
  private unregister: () => void;
  private filtered = new FilteredCache();
  private rendered = new RenderCache();
  /** Publishes the plain live HLS-TS responses to the native engine, when there is one. */
  private live?: LivePublisher;
  private readonly cache: OttCachePolicy;

  constructor(private o: OttServiceOptions) {
    this.cache = ottCachePolicy(o.services);
    this.packager = new Packager(readSettings(o.spec), o.clock);
    this.unsubscribe = o.bus.subscribe(this.packager);
    this.unregister = o.services ? ottRegistry(o.services).register(o.name, this) : () => {};
    const delivery =
      o.services?.get(LIVE_PUBLISHING_SERVICE) ?? o.services?.get(LIVE_DELIVERY_SERVICE);
    if (delivery && o.services) this.live = new LivePublisher(delivery, o.name, this, o.services);
  }

  /** The stream record as last given (adaptive groups read the member's `dvr-storage`). */
  get spec(): Record<string, unknown> {
    return this.o.spec;
  }

  update(spec: Record<string, unknown>): void {
    this.o.spec = spec;
    this.packager.update(readSettings(spec));
    this.live?.sync();
  }

  close(): void {
    this.live?.close();
    this.unsubscribe();
    this.unregister();
  }

  status(): Record<string, unknown> {
    const p = this.packager;
    return {
      mode: p.settings.mode,
      packets: p.packetCount,
      discontinuities: p.discontinuities,
      ...(p.oversizeCuts ? { oversizeCuts: p.oversizeCuts } : {}),
      'ts-segments': p.tsStore?.live().length ?? 0,
      renditions: p.renditions.map((r) => ({
        id: r.id,
        pid: r.track.pid,
        codec: r.track.codec,
        language: r.track.es.language,
        segments: r.store.live().length,
      })),
    };
  }

  handle(req: OttRequest, reply: OttReply, rest: string): unknown {
    const path = rest.split('?')[0]!;
    const query = (req.query ?? {}) as Record<string, string | undefined>;
    const p = this.packager;
    if (query.t !== undefined || query.epg !== undefined)
      return sendNotFound(reply, 'VOD: no DVR archive');
    if (path === TIME_PATH)
      return sendText(req, reply, new Date(this.o.clock.now()).toISOString(), 'text/plain');
    if (path === 'index.m3u8') {
      if (p.settings.ts) return this.tsPlaylist(req, reply, query);
      if (p.settings.cmaf) return this.master(req, reply, query);
    }
    if (path === 'ts.m3u8' && p.settings.ts) return this.tsPlaylist(req, reply, query, false);
    const vm = VTT_PATH.exec(path);
    const vr = vm ? p.vtt?.rendition(vm[1]!) : undefined;
    if (vm && vr) {
      if (vm[2] === 'index.m3u8') {
        if (vr.store.live().length === 0) return sendNotFound(reply, 'subtitles not ready');
        return sendText(
          req,
          reply,
          vttMediaPlaylist(p, vr, parseSelection(query)),
          TYPE_M3U8,
          this.liveCache(),
        );
      }
      const body = vr.store.get(`${vm[4]}.vtt`);
      if (!body) return sendNotFound(reply, 'segment not in the window');
      return sendBytes(req, reply, vm[3] ? toDashVtt(body) : body, TYPE_VTT, this.cache.segment);
    }
    if (path === 'cmaf.m3u8' && p.settings.cmaf) return this.master(req, reply, query);
    if (path === 'index.mpd' && p.settings.cmaf) return this.mpd(req, reply, query);
    if (TS_SEGMENT.test(path) && p.tsStore) {
      const data = p.tsStore.get(path);
      if (!data) return sendNotFound(reply, 'segment not in the window');
      // Pooled bytes stay ours until the response is done (finished or aborted).
      reply.raw.once('close', p.tsStore.retain(path));
      const drop = droppedPids(p, parseSelection(query));
      const body =
        drop.size === 0
          ? data
          : this.filtered.get(path, drop, () => filterPids(data, drop, p.segmenter.demux.pmtPid));
      return sendBytes(req, reply, body, TYPE_TS, this.cache.segment);
    }
    const m = RENDITION_PATH.exec(path);
    const r = m && p.cmafEnabled ? p.rendition(m[1]!) : undefined;
    if (m && r) {
      if (m[2]!.startsWith('init')) {
        // `init.mp4` falls back to the current init once the first one has left the store.
        const init = r.store.get(m[2]!) ?? (m[2] === 'init.mp4' ? r.store.init : undefined);
        return init
          ? sendBytes(req, reply, init, TYPE_MP4, this.liveCache())
          : sendNotFound(reply, 'init segment not ready');
      }
      if (m[2] === 'index.m3u8') return this.mediaPlaylist(req, reply, r, query);
      return this.media(
        req,
        reply,
        r,
        `${m[2]}`,
        Number(m[3]),
        m[4] === undefined ? -1 : Number(m[4]),
      );
    }
    return sendNotFound(reply, 'not found');
  }

  /** The TS media playlist; as `index.m3u8` (`mayMaster`) a master when subtitles are
   *  offered. `a`/`v` make the segment URIs carry the selection (filtered segments). */
  private tsPlaylist(
    req: OttRequest,
    reply: OttReply,
    query: Record<string, string | undefined>,
    mayMaster = true,
  ): unknown {
    if (this.packager.tsStore!.live().length === 0) return sendNotFound(reply, 'stream not ready');
    return sendText(req, reply, this.renderTs(query, mayMaster), TYPE_M3U8, this.liveCache());
  }

  private renderTs(
    query: Record<string, string | undefined>,
    mayMaster: boolean,
    kept = keptQuery(query),
  ): Buffer {
    const store = this.packager.tsStore!;
    // Subtitle renditions change the master: their stores' versions are part of the key.
    const vtt = this.packager.vtt?.renditions.map((r) => r.store.version).join(',') ?? '';
    const key = `ts|${store.version}|${vtt}|${this.packager.targetDuration()}|${mayMaster}|${kept}`;
    return this.rendered.get(key, () => {
      const sel = parseSelection(query);
      const master = mayMaster ? tsMaster(this.packager, sel, keptQuery(query)) : undefined;
      return master ?? tsMediaPlaylist(this.packager, sel, keptQuery(query, SEGMENT_PARAMETERS));
    })!;
  }

  /**
   * What `handle` answers to a GET of `index.m3u8` (modes 1 and 3) or `ts.m3u8` without
   * parameters once the stream has segments; undefined for anything else. For the HTTP fast
   * path (src/api/routes/ott-fast.ts), which sends it with `sendText`'s headers.
   */
  plainTsPlaylist(path: string): Buffer | undefined {
    if (!this.packager.settings.ts || (path !== 'index.m3u8' && path !== 'ts.m3u8')) return;
    if (this.packager.tsStore!.live().length === 0) return;
    return this.renderTs(NO_QUERY, path === 'index.m3u8', '');
  }

  private master(
    req: OttRequest,
    reply: OttReply,
    query: Record<string, string | undefined>,
  ): unknown {
    const text = cmafMaster(this.packager, parseSelection(query), keptQuery(query));
    return text
      ? sendText(req, reply, text, TYPE_M3U8, this.liveCache())
      : sendNotFound(reply, 'stream not ready');
  }

  private mpd(
    req: OttRequest,
    reply: OttReply,
    query: Record<string, string | undefined>,
  ): unknown {
    const text = dashManifest(this.packager, parseSelection(query), this.o.clock.now(), TIME_PATH);
    return text
      ? sendText(req, reply, text, TYPE_MPD, this.liveCache())
      : sendNotFound(reply, 'stream not ready');
  }

  private blockMs(): number {
    return BLOCK_TARGETS * this.packager.targetDuration() * 1000;
  }

  private async mediaPlaylist(
    req: OttRequest,
    reply: OttReply,
    r: CmafRendition,
    query: Record<string, string | undefined>,
  ): Promise<unknown> {
    const msn = query._HLS_msn === undefined ? undefined : Number(query._HLS_msn);
    const part = query._HLS_part === undefined ? undefined : Number(query._HLS_part);
    const skip = query._HLS_skip === 'YES' || query._HLS_skip === 'v2';
    if (msn !== undefined) {
      if (!Number.isInteger(msn) || (part !== undefined && !Number.isInteger(part)))
        return sendError(reply, 400, 'bad _HLS_msn/_HLS_part');
      const edge = lastPosition(r.store.live(), r.store.open).msn;
      if (edge >= 0 && msn > edge + MSN_AHEAD_LIMIT)
        return sendError(reply, 400, '_HLS_msn too far ahead');
      const ready = () => {
        const last = r.store.last();
        if (last && last.seq >= msn) return true;
        const open = r.store.open;
        return (
          part !== undefined && open !== undefined && open.seq === msn && open.parts.length > part
        );
      };
      if (!(await waitFor([r.store], ready, this.o.clock, this.blockMs())))
        return sendError(reply, 503, 'playlist update not available in time');
    }
    if (r.store.live().length === 0 && !r.store.open?.parts.length)
      return sendNotFound(reply, 'stream not ready');
    // Rendition reports name the other tracks' edges: every rendition's version is in the key.
    const versions = this.packager.renditions.map((x) => x.store.version).join(',');
    const key = `c|${r.id}|${versions}|${this.packager.targetDuration()}|${skip}|${query.m ?? ''}`;
    const body = this.rendered.get(key, () =>
      cmafMediaPlaylist(this.packager, r, skip, true, parseSelection(query)),
    );
    const target = this.packager.targetDuration();
    const cache = msn === undefined ? this.cache.live(target) : this.cache.blocking(target);
    return sendText(req, reply, body!, TYPE_M3U8, cache);
  }

  /** Cache-Control of this stream's live documents and init segments (./cache-policy.ts). */
  liveCache(): string {
    return this.cache.live(this.packager.targetDuration());
  }

  private async media(
    req: OttRequest,
    reply: OttReply,
    r: CmafRendition,
    uri: string,
    seq: number,
    part: number,
  ): Promise<unknown> {
    let data = r.store.get(uri);
    if (!data && this.isNext(r, seq, part)) {
      // A preload hint names the next part before it exists: hold the request until it does.
      await waitFor([r.store], () => r.store.get(uri) !== undefined, this.o.clock, this.blockMs());
      data = r.store.get(uri);
    }
    if (!data) return sendNotFound(reply, 'segment not in the window');
    reply.raw.once('close', r.store.retain(uri));
    return sendBytes(req, reply, data, TYPE_M4S, this.cache.segment);
  }

  private isNext(r: CmafRendition, seq: number, part: number): boolean {
    const open = r.store.open;
    const last = r.store.last();
    if (open) return seq === open.seq && (part < 0 || part === open.parts.length);
    return last !== undefined && seq === last.seq + 1 && part <= 0;
  }
}
