// `hls` input: pulls an HLS playlist (RFC 8216) or a progressive HTTP transport stream from `uri`
// (docs/inputs-pull.md). A master playlist gives the variant `adaptive-stream-id` (counted from
// 1 in playlist order). Live playlists are reloaded about every target duration and followed by
// media sequence number; a gap or EXT-X-DISCONTINUITY splices the stream (onDiscontinuity).
// VOD playlists (EXT-X-ENDLIST) are played at real time and looped. Segments: MPEG-TS passed
// through as they are, fMP4/CMAF remuxed to TS (src/protocols/mp4 → src/mpegts/es-mux.ts),
// AES-128 decrypted; all delivered at real time by their PCR. `preload` segments are fetched
// ahead, within the input's body memory (body-buffers.ts). A 404 or over-cap segment is skipped
// and counted; every request has a hard deadline; an origin that stops answering leaves the
// input silent with its reason in fault(), so the stream fails over to its backup.
import { createDecipheriv } from 'node:crypto';
import { bool, int, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport, TransportMetrics } from '../../engine/input.ts';
import { EsMuxer } from '../../mpegts/es-mux.ts';
import { SYNC_BYTE, TS_PACKET_SIZE } from '../../mpegts/packet.ts';
import { PcrPacer } from '../../mpegts/pcr-pacer.ts';
import {
  type MediaPlaylist,
  type Playlist,
  PlaylistError,
  parsePlaylist,
  type Segment,
  type SegmentMap,
} from '../../protocols/hls/playlist.ts';
import { type Mp4Init, parseInit, parseSegment } from '../../protocols/mp4/fmp4.ts';
import { Backoff } from '../common.ts';
import { BodyBuffers, sizeWords } from './body-buffers.ts';
import { Deadline } from './deadline.ts';
import { type GetResult, HttpClient, HttpError } from './http.ts';

/** A segment bigger than this is refused and counted (`oversize`). */
export const MAX_SEGMENT_BYTES = 32 * 1024 * 1024;
/** What one input's segment bodies may hold in all (playing, arriving, kept for reuse): one
 *  playing and the next growing to the cap, with room for the copy while a body grows. */
export const BODY_MEMORY_BYTES = (5 * MAX_SEGMENT_BYTES) / 2;
export const MAX_PLAYLIST_BYTES = 4 * 1024 * 1024;
/** Segment URLs of one playlist once resolved, in all: a short URI against a long playlist
 *  URL takes many times its own bytes. */
export const MAX_PLAYLIST_URL_BYTES = 16 * 1024 * 1024;
export const MAX_INIT_BYTES = 1024 * 1024;
/** An AES-128 key is 16 bytes: more than this is not read. */
export const MAX_KEY_BYTES = 1024;
/** Live segments queued beyond this (the origin lists them faster than they play) are
 *  dropped from the front, as a gap. */
export const MAX_LIVE_QUEUE = 64;
/** A segment's deadline: `client-timeout`, or twice its duration when longer, at most this. */
const MAX_SEGMENT_DEADLINE_MS = 60_000;
/** Master → media playlists followed at most this deep (a playlist referencing itself stops). */
export const MAX_PLAYLIST_DEPTH = 4;
/** A live playlist is joined this many segments from its end (RFC 8216 6.3.3). */
export const LIVE_START_SEGMENTS = 3;
/** A live playlist not updated for this many target durations is reported stale. */
const STALE_TARGETS = 3;
const MIN_RELOAD_MS = 500;
const MODE_DETECT = 0;
/** mode 1 (segmented playlist) is every mode other than these two. */
const MODE_PROGRESSIVE = 2;

interface Job {
  seg: Segment;
  body?: Promise<Buffer | HttpError>;
  /** Fetched again once after a refusal for want of body memory. */
  again?: boolean;
}

interface Counters {
  segments: number;
  bytes: number;
  notFound: number;
  oversize: number;
  segmentErrors: number;
  badSegments: number;
  reloads: number;
  reloadErrors: number;
  discontinuities: number;
  gaps: number;
  loops: number;
  reconnects: number;
}

export class HlsInput implements InputTransport {
  private readonly client: HttpClient;
  private readonly backoff: Backoff;
  private readonly pacer: PcrPacer;
  /** Segment bodies: reused once played (no new memory per segment for the collector). */
  private readonly bodies = new BodyBuffers(BODY_MEMORY_BYTES);
  /** About the size of the segments played lately (how much a preload will take). */
  private typicalBytes = 0;
  private readonly abort = new AbortController();
  private closed = false;
  private running: Promise<void> | null = null;
  private readonly sleepers = new Set<() => void>();
  private readonly c: Counters = {
    segments: 0,
    bytes: 0,
    notFound: 0,
    oversize: 0,
    segmentErrors: 0,
    badSegments: 0,
    reloads: 0,
    reloadErrors: 0,
    discontinuities: 0,
    gaps: 0,
    loops: 0,
    reconnects: 0,
  };
  private lastError = '';
  /** What keeps the input from delivering now ('' = nothing). */
  private faultText = '';
  private kind = '';
  private playlistUrl = '';
  private variant: Record<string, unknown> | null = null;
  private variants = 0;
  private live = false;
  private targetDuration = 0;
  private mediaSequence = -1;
  private pendingDiscontinuity = '';
  private readonly keys = new Map<string, Buffer>();
  private init: { url: string; init: Mp4Init } | null = null;
  private muxer: { mux: EsMuxer; tracks: Map<number, number>; out: Buffer[] } | null = null;
  private readonly trace: boolean;

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.trace = bool(cfg, 'trace', false);
    this.client = new HttpClient({
      userAgent: str(cfg, 'user-agent'),
      cookies: str(cfg, 'cookies'),
      login: str(cfg, 'login'),
      password: str(cfg, 'password'),
      timeoutMs: int(cfg, 'client-timeout', 10) * 1000,
      maxSockets: int(cfg, 'preload', 1) + 2,
      clock: ctx.clock,
    });
    this.backoff = new Backoff(ctx.clock);
    this.pacer = new PcrPacer(
      ctx.clock,
      (b) => this.ctx.onData(b),
      () => this.ctx.smooth?.() ?? true,
    );
  }

  start(): void {
    if (!str(this.cfg, 'uri')) throw new Error('hls input: uri is not set');
    this.running = this.run();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        await this.session();
        this.backoff.reset();
      } catch (err) {
        if (this.closed) break;
        this.fail(err);
      }
      if (this.closed) break;
      this.c.reconnects++;
      this.pendingDiscontinuity = 'origin reopened';
      await new Promise<void>((resolve) => {
        const d = this.backoff.schedule(resolve);
        this.sleepers.add(resolve);
        this.ctx.log.info({ retryMs: d, reason: this.lastError }, 'hls input reopening');
      });
    }
  }

  private fail(err: unknown): void {
    const msg = err instanceof Error ? err.message : String(err);
    this.lastError = msg;
    this.faultText = msg;
    this.ctx.log.warn({ uri: str(this.cfg, 'uri'), err: msg }, 'hls input');
  }

  private get rawUris(): boolean {
    return bool(this.cfg, 'disable-url-encode', false);
  }

  /** One run from the configured URI until the origin fails (throws) or the input closes. */
  private async session(): Promise<void> {
    const mode = int(this.cfg, 'mode', MODE_DETECT);
    const uri = str(this.cfg, 'uri');
    if (mode === MODE_PROGRESSIVE) return this.progressive(uri, null);
    let url = uri;
    const seen = new Set<string>();
    let text = '';
    if (mode === MODE_DETECT) {
      const r = await this.detect(url);
      if (r === null) return; // progressive stream played to its end
      text = r.text;
      url = r.url;
    } else {
      ({ text, url } = await this.getPlaylist(url));
    }
    for (let depth = 0; ; depth++) {
      if (seen.has(url)) throw new PlaylistError(`playlist references itself (${url})`);
      seen.add(url);
      const pl = this.parse(text, url);
      if (pl.kind === 'media') {
        this.playlistUrl = url;
        return this.playMedia(url, pl);
      }
      if (depth + 1 >= MAX_PLAYLIST_DEPTH) throw new PlaylistError('playlists nested too deep');
      const id = int(this.cfg, 'adaptive-stream-id', 1);
      this.variants = pl.variants.length + pl.variantsDropped;
      const v = pl.variants[id - 1];
      if (!v) {
        throw new PlaylistError(
          `adaptive-stream-id ${id}: the master playlist lists ${this.variants} variant(s)` +
            (pl.variantsDropped ? ` (only the first ${pl.variants.length} are read)` : ''),
        );
      }
      this.variant = {
        index: id,
        bandwidth: v.bandwidth,
        resolution: v.resolution,
        codecs: v.codecs,
      };
      ({ text, url } = await this.getPlaylist(v.url));
    }
  }

  /** A playlist's text and its URL after redirects. */
  private async getPlaylist(url: string): Promise<{ text: string; url: string }> {
    const r = await this.getSmall('playlist', url, { maxBytes: MAX_PLAYLIST_BYTES });
    return { text: r.body.toString('utf8'), url: r.url };
  }

  /** A playlist, key or initialisation section (under the client's deadline); a refused body
   *  in words. */
  private async getSmall(
    what: string,
    url: string,
    opts: { maxBytes: number; range?: { offset: number; length: number } },
  ): Promise<GetResult> {
    try {
      return await this.client.get(url, { ...opts, signal: this.abort.signal });
    } catch (err) {
      throw err instanceof HttpError && err.refusal
        ? new HttpError(refused(what, url, err), 0)
        : err;
    }
  }

  /** parsePlaylist, once the URLs it would resolve are known to fit MAX_PLAYLIST_URL_BYTES. */
  private parse(text: string, url: string): Playlist {
    const bytes = resolvedUrlBytes(text, url);
    if (bytes > MAX_PLAYLIST_URL_BYTES) {
      throw new PlaylistError(
        `playlist ${shortUrl(url)} would take about ${sizeWords(bytes)} of segment URLs once resolved ` +
          `against its own URL, over the ${sizeWords(MAX_PLAYLIST_URL_BYTES)} cap`,
      );
    }
    return parsePlaylist(text, url, this.rawUris);
  }

  /** mode 0: GET the URI; a playlist comes back as its text, a transport stream is played
   *  progressively from the same response (null when it ends). The request's deadline holds
   *  until the first bytes show a transport stream (then only the idle time-out), and to the
   *  end of a playlist. */
  private async detect(url: string): Promise<{ text: string; url: string } | null> {
    let decided: 'playlist' | 'ts' | '' = '';
    const head: Buffer[] = [];
    let size = 0;
    /** Why the body was given up in onChunk (which must not throw: it runs in a stream event). */
    let refusal: Error | null = null;
    const ac = new AbortController();
    const stop = () => ac.abort();
    const giveUp = (err: Error) => {
      refusal = err;
      ac.abort();
    };
    const deadline = new Deadline(this.ctx.clock, int(this.cfg, 'client-timeout', 10) * 1000);
    this.abort.signal.addEventListener('abort', stop);
    try {
      const r = await this.client
        .get(url, {
          maxBytes: MAX_PLAYLIST_BYTES,
          signal: ac.signal,
          deadline,
          onChunk: (c) => {
            if (refusal) return;
            if (decided === 'ts') return this.progressiveChunk(c);
            head.push(c);
            size += c.length;
            if (decided === 'playlist') {
              if (size > MAX_PLAYLIST_BYTES) {
                giveUp(
                  new PlaylistError(
                    `playlist from ${url} grew past the ${sizeWords(MAX_PLAYLIST_BYTES)} cap`,
                  ),
                );
              }
              return;
            }
            const b = Buffer.concat(head);
            const s = b
              .subarray(0, 64)
              .toString('latin1')
              .replace(/^\ufeff|^\xef\xbb\xbf/, '');
            if (/^\s*#EXTM3U/.test(s)) decided = 'playlist';
            else if (b[0] === SYNC_BYTE || b.length >= 3 * TS_PACKET_SIZE) {
              decided = 'ts';
              deadline.cancel(); // a stream: the origin paces it
              this.kind = 'progressive';
              this.faultText = '';
              head.length = 0;
              this.progressiveChunk(b);
            } else if (b.length >= 64 && !/^\s*#/.test(s)) {
              giveUp(new PlaylistError('neither an HLS playlist nor a transport stream'));
            }
          },
        })
        .catch((err: unknown) => {
          throw refusal ?? err;
        });
      if (refusal) throw refusal;
      if ((decided as string) === 'ts') return null;
      return { text: Buffer.concat(head).toString('utf8'), url: r.url };
    } finally {
      deadline.cancel();
      this.abort.signal.removeEventListener('abort', stop);
    }
  }

  /** Progressive HTTP-TS bytes: handed over as they come (the origin paces them). */
  private progressiveChunk(c: Buffer): void {
    this.c.bytes += c.length;
    if (this.pendingDiscontinuity) {
      this.markDiscontinuity();
    }
    this.backoff.reset();
    this.ctx.onData(c);
  }

  /** mode 2: the URI is a transport stream; played until it ends (then reopened). */
  private async progressive(url: string, _unused: null): Promise<void> {
    this.kind = 'progressive';
    await this.client.get(url, {
      maxBytes: Number.MAX_SAFE_INTEGER,
      signal: this.abort.signal,
      onChunk: (c) => {
        this.faultText = '';
        this.progressiveChunk(c);
      },
    });
    this.lastError = 'origin ended the stream';
  }

  private markDiscontinuity(): void {
    const reason = this.pendingDiscontinuity || 'discontinuity';
    this.pendingDiscontinuity = '';
    this.c.discontinuities++;
    this.pacer.reset();
    this.ctx.onDiscontinuity?.(reason);
  }

  // --- media playlists ---------------------------------------------------------------------

  private queue: Job[] = [];
  private lastQueued = -1;
  private changed: (() => void) | null = null;
  private lastChangeAt = 0;

  private async playMedia(url: string, first: MediaPlaylist): Promise<void> {
    this.kind = 'playlist';
    this.dropJobs(this.queue.splice(0));
    this.lastQueued = -1;
    this.live = !first.ended;
    this.lastChangeAt = this.ctx.clock.monotonic();
    this.take(first, true);
    const reloader = this.live ? this.reloadLoop(url, first) : Promise.resolve();
    try {
      while (!this.closed) {
        const job = this.queue.shift();
        if (!job) {
          if (!this.live) {
            // VOD: played to its end, loop from the start.
            this.c.loops++;
            this.pendingDiscontinuity = 'playlist looped';
            this.lastQueued = -1;
            this.take(this.current ?? first, false);
            if (this.queue.length === 0) throw new PlaylistError('the playlist has no segments');
            continue;
          }
          if (this.reloadFailure) throw this.reloadFailure;
          await new Promise<void>((resolve) => {
            this.changed = resolve;
            this.sleepers.add(resolve);
          });
          continue;
        }
        this.prefetch(job);
        let body = await job.body!;
        if (body instanceof HttpError && body.refusal?.kind === 'memory' && !job.again) {
          // Preloads took the memory first: this one's turn has come, it is fetched again.
          job.again = true;
          job.body = this.fetchSegment(job.seg);
          body = await job.body;
        }
        if (this.closed) {
          if (!(body instanceof HttpError)) this.bodies.give(body);
          break;
        }
        if (body instanceof HttpError) {
          this.segmentFailed(job.seg, body);
          continue;
        }
        this.typicalBytes = Math.max(body.length, Math.floor(this.typicalBytes * 0.75));
        await this.playSegment(job.seg, body);
        this.bodies.give(body);
      }
    } finally {
      this.dropJobs(this.queue.splice(0));
      this.live = false;
      this.changed?.();
      await reloader;
    }
  }

  private reloadFailure: Error | null = null;
  /** The last media playlist read (what a VOD loop, or a live one that ended, replays). */
  private current: MediaPlaylist | null = null;

  /** Queue the playlist's new segments (by media sequence number). */
  private take(pl: MediaPlaylist, joining: boolean): void {
    this.targetDuration = pl.targetDuration;
    this.current = pl;
    const segs = pl.segments;
    if (segs.length === 0) return;
    const newest = segs[segs.length - 1]!.seq;
    if (this.lastQueued >= 0 && newest < this.lastQueued - segs.length) {
      // The media sequence went back: the origin restarted its numbering.
      this.lastQueued = -1;
      this.pendingDiscontinuity = 'media sequence restarted';
      joining = true;
    }
    let from = 0;
    if (this.lastQueued < 0) {
      if (joining && this.live) from = Math.max(0, segs.length - LIVE_START_SEGMENTS);
    } else {
      from = segs.findIndex((s) => s.seq > this.lastQueued);
      if (from < 0) return;
      if (segs[from]!.seq > this.lastQueued + 1) {
        this.c.gaps++;
        segs[from] = { ...segs[from]!, discontinuity: true };
        this.ctx.log.info(
          { missed: segs[from]!.seq - this.lastQueued - 1 },
          'hls input: segments gone from the playlist before they were fetched',
        );
      }
    }
    for (let i = from; i < segs.length; i++) this.queue.push({ seg: segs[i]! });
    const over = this.live ? this.queue.length - MAX_LIVE_QUEUE : 0;
    if (over > 0) {
      // The origin lists segments faster than they play: the oldest go, as a gap.
      this.dropJobs(this.queue.splice(0, over));
      this.c.gaps++;
      this.queue[0] = { ...this.queue[0]!, seg: { ...this.queue[0]!.seg, discontinuity: true } };
      this.ctx.log.info(
        { dropped: over, queued: MAX_LIVE_QUEUE },
        'hls input: live segments queued faster than they play; the oldest dropped',
      );
    }
    this.lastQueued = newest;
    this.mediaSequence = pl.mediaSequence;
    this.lastChangeAt = this.ctx.clock.monotonic();
    const wake = this.changed;
    this.changed = null;
    wake?.();
  }

  private async reloadLoop(url: string, first: MediaPlaylist): Promise<void> {
    let last = first;
    let grew = true;
    while (this.live && !this.closed) {
      const td = Math.max(last.targetDuration, 1) * 1000;
      await this.sleep(Math.max(MIN_RELOAD_MS, grew ? td : td / 2));
      if (!this.live || this.closed) break;
      try {
        const r = await this.getPlaylist(url);
        this.c.reloads++;
        const pl: Playlist = this.parse(r.text, r.url);
        if (pl.kind !== 'media')
          throw new PlaylistError('a media playlist became a master playlist');
        const before = this.lastQueued;
        this.take(pl, false);
        grew = this.lastQueued !== before;
        last = pl;
        if (pl.ended) this.live = false;
        const staleMs = this.ctx.clock.monotonic() - this.lastChangeAt;
        if (staleMs > STALE_TARGETS * td) {
          this.faultText = `playlist not updated for ${Math.round(staleMs / 1000)} s`;
        } else if (this.faultText && !this.failingSegments) this.faultText = '';
        this.reloadErrors = 0;
      } catch (err) {
        if (this.closed) break;
        this.c.reloadErrors++;
        this.reloadErrors++;
        this.fail(err);
        grew = false;
        // Errors for longer than the playlist's window: start over from the URI.
        if (
          this.reloadErrors * (td / 2) >
          Math.max(3 * td, int(this.cfg, 'client-timeout', 10) * 1000)
        ) {
          this.reloadFailure = err instanceof Error ? err : new Error(String(err));
          const wake = this.changed;
          this.changed = null;
          wake?.();
          break;
        }
      }
    }
  }

  private reloadErrors = 0;
  private failingSegments = 0;

  /** Start fetching the job and the `preload` after it, the preloads only while the body
   *  memory has room for them at about the size segments have had. */
  private prefetch(job: Job): void {
    const preload = Math.min(10, Math.max(1, int(this.cfg, 'preload', 1)));
    if (!job.body) job.body = this.fetchSegment(job.seg);
    let room = this.bodies.limit - this.bodies.lentBytes - this.typicalBytes;
    for (const j of this.queue.slice(0, preload)) {
      if (j.body) continue;
      if (room < this.typicalBytes * 2) break;
      room -= this.typicalBytes;
      j.body = this.fetchSegment(j.seg);
    }
  }

  /** Jobs no longer to be played: their bodies, once they come, go back. */
  private dropJobs(jobs: Job[]): void {
    for (const j of jobs) {
      void j.body?.then((b) => {
        if (!(b instanceof HttpError)) this.bodies.give(b);
      });
    }
  }

  private async fetchSegment(seg: Segment): Promise<Buffer | HttpError> {
    try {
      if (this.trace) this.ctx.log.info({ url: seg.url, seq: seg.seq }, 'hls segment GET');
      const r = await this.client.get(seg.url, {
        maxBytes: MAX_SEGMENT_BYTES,
        signal: this.abort.signal,
        bodies: this.bodies,
        deadlineMs: Math.max(
          int(this.cfg, 'client-timeout', 10) * 1000,
          Math.min(2000 * seg.duration, MAX_SEGMENT_DEADLINE_MS),
        ),
        ...(seg.range ? { range: seg.range } : {}),
      });
      return r.body;
    } catch (err) {
      return err instanceof HttpError ? err : new HttpError((err as Error).message, 0);
    }
  }

  private segmentFailed(seg: Segment, err: HttpError): void {
    if (this.closed) return;
    if (err.status === 404) this.c.notFound++;
    else if (err.tooBig) this.c.oversize++;
    else this.c.segmentErrors++;
    this.failingSegments++;
    const what = err.refusal
      ? refused(`segment ${seg.seq}`, seg.url, err)
      : `segment ${seg.seq}: ${err.message}`;
    this.lastError = `${what}; skipped`;
    if (this.failingSegments >= 3) this.faultText = this.lastError;
    this.pendingDiscontinuity ||= 'segment skipped';
    this.ctx.log.warn({ url: seg.url, seq: seg.seq, err: this.lastError }, 'hls segment skipped');
  }

  private async playSegment(seg: Segment, raw: Buffer): Promise<void> {
    let body = raw;
    try {
      if (seg.key) body = await this.decrypt(seg, body);
      if (seg.discontinuity) this.pendingDiscontinuity ||= 'EXT-X-DISCONTINUITY';
      const ts = await this.toTs(seg, body);
      if (!ts) return;
      if (this.pendingDiscontinuity) this.markDiscontinuity();
      this.c.segments++;
      this.c.bytes += raw.length;
      this.failingSegments = 0;
      if (!this.faultText.startsWith('playlist not updated')) this.faultText = '';
      this.backoff.reset();
      await this.pacer.play(ts);
    } catch (err) {
      this.c.badSegments++;
      this.lastError = `segment ${seg.seq}: ${(err as Error).message}`;
      this.failingSegments++;
      if (this.failingSegments >= 3) this.faultText = this.lastError;
      this.pendingDiscontinuity ||= 'segment skipped';
    }
  }

  private async decrypt(seg: Segment, body: Buffer): Promise<Buffer> {
    const k = seg.key!;
    if (k.method !== 'AES-128') throw new Error(`encryption method ${k.method} not supported`);
    let key = this.keys.get(k.url);
    if (!key) {
      const r = await this.getSmall('key', k.url, { maxBytes: MAX_KEY_BYTES });
      if (r.body.length !== 16) throw new Error(`key of ${r.body.length} bytes, not 16`);
      key = r.body;
      if (this.keys.size > 64) this.keys.clear();
      this.keys.set(k.url, key);
    }
    let iv = k.iv;
    if (!iv) {
      iv = Buffer.alloc(16);
      iv.writeUInt32BE(Math.floor(seg.seq / 2 ** 32), 8);
      iv.writeUInt32BE(seg.seq >>> 0, 12);
    }
    const d = createDecipheriv('aes-128-cbc', key, iv);
    return Buffer.concat([d.update(body), d.final()]);
  }

  /** The segment as aligned TS packets, or null (counted) when it carries nothing usable. */
  private async toTs(seg: Segment, body: Buffer): Promise<Buffer | null> {
    const sync = tsStart(body);
    if (sync >= 0) {
      const end = body.length - ((body.length - sync) % TS_PACKET_SIZE);
      return body.subarray(sync, end);
    }
    const box = body.length >= 8 ? body.toString('latin1', 4, 8) : '';
    if (seg.map || ['ftyp', 'styp', 'moof', 'sidx', 'emsg', 'prft', 'moov'].includes(box)) {
      return this.remux(seg.map, body);
    }
    if (body.toString('latin1', 0, 3) === 'ID3') {
      throw new Error('codec not supported: packed audio segments (ID3 + AAC/MP3)');
    }
    throw new Error('neither MPEG-TS nor fMP4');
  }

  private async remux(map: SegmentMap | undefined, body: Buffer): Promise<Buffer> {
    const initUrl = map ? `${map.url}#${map.range?.offset ?? ''}` : 'in-segment';
    if (!this.init || this.init.url !== initUrl) {
      let initBytes = body;
      if (map) {
        const r = await this.getSmall('initialisation section', map.url, {
          maxBytes: MAX_INIT_BYTES,
          ...(map.range ? { range: map.range } : {}),
        });
        initBytes = r.body;
      }
      const init = parseInit(initBytes);
      const out: Buffer[] = [];
      const mux = new EsMuxer({ sink: (b) => out.push(b), batchPackets: 256 });
      const tracks = new Map<number, number>();
      const unsupported: string[] = [];
      for (const t of init.tracks) {
        if (!t.codec) {
          unsupported.push(t.sampleEntry);
          continue;
        }
        tracks.set(
          t.id,
          mux.addTrack({
            codec: t.codec,
            timescale: t.timescale,
            ...(t.config ? { config: t.config } : {}),
            ...(t.language ? { language: t.language } : {}),
          }),
        );
      }
      if (tracks.size === 0) {
        throw new Error(`codec not supported: ${unsupported.join(', ') || 'no tracks'}`);
      }
      if (this.init) this.pendingDiscontinuity ||= 'new initialisation section';
      this.init = { url: initUrl, init };
      this.muxer = { mux, tracks, out };
    }
    const m = this.muxer!;
    for (const f of parseSegment(body, this.init.init)) {
      const t = m.tracks.get(f.trackId);
      if (t !== undefined) m.mux.write(t, f);
    }
    m.mux.flush();
    const ts = m.out.length === 1 ? m.out[0]! : Buffer.concat(m.out);
    m.out.length = 0;
    if (ts.length === 0) throw new Error('fMP4 segment without samples');
    return ts;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      const done = () => {
        this.sleepers.delete(done);
        timer.cancel();
        resolve();
      };
      const timer = this.ctx.clock.setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.backoff.cancel();
    this.abort.abort();
    this.pacer.close();
    for (const w of [...this.sleepers]) w();
    this.sleepers.clear();
    this.changed?.();
    await this.running;
    this.client.close();
  }

  fault(): string {
    return this.faultText;
  }

  status(): Record<string, unknown> {
    return {
      kind: this.kind,
      ...(this.playlistUrl ? { playlist: this.playlistUrl } : {}),
      ...(this.variant ? { variant: this.variant, variants: this.variants } : {}),
      ...(this.kind === 'playlist'
        ? {
            live: this.live,
            targetDuration: this.targetDuration,
            mediaSequence: this.mediaSequence,
            queued: this.queue.length,
          }
        : {}),
      ...this.c,
      memory: { held: this.bodies.held, peak: this.bodies.peak, limit: this.bodies.limit },
      ...(this.muxer ? { remux: this.muxer.mux.stats() } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  metrics(): TransportMetrics {
    return {
      protocol: 'hls',
      rttSeconds: 0,
      packets: {
        segments: this.c.segments,
        bytes: this.c.bytes,
        notFound: this.c.notFound,
        oversize: this.c.oversize,
        segmentErrors: this.c.segmentErrors + this.c.badSegments,
        reloads: this.c.reloads,
        discontinuities: this.c.discontinuities,
      },
    };
  }
}

/** Offset of the first of three packets in a row starting with the sync byte (two for a
 *  short body), or -1 when the body is not TS. */
function tsStart(b: Buffer): number {
  for (let i = 0; i < TS_PACKET_SIZE && i < b.length; i++) {
    if (b[i] !== SYNC_BYTE) continue;
    const n = Math.min(3, Math.floor((b.length - i) / TS_PACKET_SIZE));
    if (n === 0) return -1;
    let ok = true;
    for (let k = 1; k < n && ok; k++) ok = b[i + k * TS_PACKET_SIZE] === SYNC_BYTE;
    if (ok) return i;
  }
  return -1;
}

/** A refused body in words: `segment 7 from URL is 40 MiB, over the 32 MiB cap`. */
function refused(what: string, url: string, err: HttpError): string {
  const r = err.refusal;
  if (r?.kind === 'cap') {
    return r.declared
      ? `${what} from ${shortUrl(url)} is ${sizeWords(r.bytes)}, over the ${sizeWords(r.cap)} cap`
      : `${what} from ${shortUrl(url)} grew past the ${sizeWords(r.cap)} cap (no length announced)`;
  }
  if (r?.kind === 'memory') {
    return (
      `${what} from ${shortUrl(url)}: no room, the input holds ${sizeWords(r.held)} of segments ` +
      `(its limit is ${sizeWords(r.limit)})`
    );
  }
  return `${what} from ${shortUrl(url)}: ${err.message}`;
}

/** A URL for a message: a very long one (an origin's choice) shortened in the middle. */
function shortUrl(url: string): string {
  return url.length <= 200 ? url : `${url.slice(0, 120)}…${url.slice(-60)}`;
}

/** About how many bytes the URLs of a playlist take once resolved: every URI line gets the
 *  playlist's directory in front of it (counted whether or not the parser keeps the line). */
function resolvedUrlBytes(text: string, url: string): number {
  const dir = url.replace(/[?#].*$/, '').lastIndexOf('/') + 1;
  let lines = 0;
  let atStart = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) atStart = true;
    else if (atStart && c !== 0x20 && c !== 0x09 && c !== 0x0d) {
      if (c !== 0x23) lines++; // not '#'
      atStart = false;
    }
  }
  return lines * dir + text.length;
}
