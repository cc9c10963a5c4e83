// `rtsp` input: pulls a stream from an RTSP/1.0 server (docs/inputs-pull.md). OPTIONS, DESCRIBE
// (SDP), SETUP per supported track, PLAY; media over UDP (`transport` 0: a free even port pair
// per track) or interleaved on the control connection (`transport` 1, or 2 with the control
// connection tunnelled over HTTP). H.264, HEVC and AAC go
// through the depacketizers (src/protocols/rtp/depacketize.ts) into the one muxer
// (src/mpegts/es-mux.ts); an MP2T track is passed through as it is. Timestamps come from the
// RTP timestamps, aligned across tracks by the PLAY reply's RTP-Info, else by the arrival of
// each track's first packet corrected by RTCP sender reports (src/protocols/rtp/timeline.ts);
// video decoding times from those and the SPS's reorder depth (src/protocols/rtp/dts.ts).
// Keep-alive (GET_PARAMETER when offered, else OPTIONS) and RTCP receiver reports run while
// playing; a keep-alive unanswered or no media for `client-timeout` ends the session, which is
// reopened with backoff. The first media must come within `client-timeout` of connecting (one
// timer over every request of the set-up, however slowly the server answers them).
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { bool, int, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport, TransportMetrics } from '../../engine/input.ts';
import { EsMuxer } from '../../mpegts/es-mux.ts';
import {
  AacDepacketizer,
  aacParamsOf,
  type Depacketizer,
  H264Depacketizer,
  HevcDepacketizer,
  Mp2tDepacketizer,
  type RtpFrame,
} from '../../protocols/rtp/depacketize.ts';
import { DtsFromPts, type TimedFrame } from '../../protocols/rtp/dts.ts';
import { parseRtp, type RtpPacket, RtpSequencer } from '../../protocols/rtp/packet.ts';
import { leadingNalsOf, reorderDepthOfSps, spsOf } from '../../protocols/rtp/reorder-depth.ts';
import { RtpTimeline } from '../../protocols/rtp/timeline.ts';
import { parseRtpInfo, parseSession, parseTransport } from '../../protocols/rtsp/message.ts';
import { aacConfigOf, paramSetsOf, parseSdp, type SdpMedia } from '../../protocols/rtsp/sdp.ts';
import type { Timer } from '../../util/clock.ts';
import { maskCredentials } from '../../util/credentials.ts';
import { Backoff } from '../common.ts';
import { RtspConnection, RtspError } from './connection.ts';

export const TRANSPORT_UDP = 0;
export const TRANSPORT_TCP = 1;
export const TRANSPORT_HTTP = 2;
/** RTCP receiver reports every this many ms. */
export const RTCP_INTERVAL_MS = 5000;
/** UDP packets held behind a missing one before it is given up (the depacketizer counts it). */
export const RTSP_REORDER_PACKETS = 16;
/** Timestamps start this far in (the muxer's PCR runs 500 ms behind the first DTS). */
const PTS_ORIGIN_S = 10;
/** Frames held while the PLAY answer is read (they may arrive in the same read), in count
 *  and bytes; the rest are dropped. */
const MAX_EARLY_FRAMES = 256;
export const MAX_EARLY_BYTES = 4 * 1024 * 1024;

interface Track {
  media: SdpMedia;
  dep: Depacketizer;
  /** UDP: packets put back in sequence order before the depacketizer. */
  reorder: RtpSequencer | null;
  /** es-mux track index; -1 for MP2T (passed through). */
  mux: number;
  /** Video: decoding times from the presentation times and the SPS's reorder depth. */
  dts: DtsFromPts<RtpFrame> | null;
  clockRate: number;
  rtpChannel: number;
  rtcpChannel: number;
  udp: UdpSocket[];
  serverPorts: [number, number] | null;
  /** Index in the session's RtpTimeline. */
  clock: number;
  ssrc: number;
  maxSeq: number;
  cycles: number;
  received: number;
  /** Last SR: middle 32 bits of its NTP time and when it arrived. */
  lsr: number;
  lsrAt: number;
}

interface Counters {
  packets: number;
  bytes: number;
  rtcp: number;
  keepAlives: number;
  reconnects: number;
}

export class RtspInput implements InputTransport {
  private readonly backoff: Backoff;
  private closed = false;
  private running: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private conn: RtspConnection | null = null;
  private tracks: Track[] = [];
  private muxer: EsMuxer | null = null;
  private timeline = new RtpTimeline();
  private sync = '';
  private early: { t: Track; f: RtpFrame }[] = [];
  private earlyBytes = 0;
  /** Until the first RTP packet of a session: ends it when `client-timeout` has passed. */
  private setupTimer: Timer | null = null;
  /** The most the input has held of what the server sent (frames before PLAY, unread bytes). */
  private heldPeak = 0;
  private readonly c: Counters = { packets: 0, bytes: 0, rtcp: 0, keepAlives: 0, reconnects: 0 };
  private faultText = '';
  private lastError = '';
  private state = 'idle';
  private unsupported: string[] = [];
  private sessions = 0;
  private lastMediaAt = 0;
  private readonly ssrc = (Math.random() * 0xffffffff) >>> 0;

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.backoff = new Backoff(ctx.clock);
  }

  private get timeoutMs(): number {
    return Math.max(1, int(this.cfg, 'client-timeout', 10)) * 1000;
  }

  start(): void {
    if (!str(this.cfg, 'uri')) throw new Error('rtsp input: uri is not set');
    this.running = this.run();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        await this.session();
      } catch (err) {
        if (this.closed) break;
        const msg = err instanceof Error ? err.message : String(err);
        this.lastError = msg;
        this.faultText = msg;
        this.ctx.log.warn({ uri: maskCredentials(str(this.cfg, 'uri')), err: msg }, 'rtsp input');
      }
      this.teardown();
      if (this.closed) break;
      this.c.reconnects++;
      this.state = 'waiting to reconnect';
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.backoff.schedule(resolve);
      });
      this.wake = null;
    }
  }

  /** One session: connect, describe, set up, play until something fails (throws). */
  private async session(): Promise<void> {
    const transport = int(this.cfg, 'transport', TRANSPORT_UDP);
    const u = parseUrl(str(this.cfg, 'uri'));
    this.state = 'connecting';
    let ended: (e: Error) => void = () => {};
    const end = new Promise<never>((_, reject) => {
      ended = reject;
    });
    end.catch(() => {});
    const conn = new RtspConnection({
      host: u.host,
      port: u.port,
      login: str(this.cfg, 'rtsp-login') || u.login,
      password: str(this.cfg, 'rtsp-password') || u.password,
      userAgent: str(this.cfg, 'user-agent') || 'sluice',
      cookies: str(this.cfg, 'cookies'),
      timeoutMs: this.timeoutMs,
      ...(transport === TRANSPORT_HTTP ? { tunnel: u.path } : {}),
      trace: bool(this.cfg, 'trace', false),
      log: this.ctx.log,
      clock: this.ctx.clock,
      onInterleaved: (ch, d) => this.interleaved(ch, d),
      onClose: (e) => ended(e),
    });
    this.conn = conn;
    this.setupTimer = this.ctx.clock.setTimeout(() => {
      this.setupTimer = null;
      ended(
        new RtspError(
          `no media from the server for ${this.timeoutMs / 1000} s since connecting (${this.state})`,
        ),
      );
      conn.close();
    }, this.timeoutMs);
    const step = <T>(p: Promise<T>) => Promise.race([p, end]);
    await step(conn.open());
    const options = await step(conn.request('OPTIONS', u.url));
    const useGetParameter = /\bGET_PARAMETER\b/i.test(options.headers['public'] ?? '');
    this.state = 'describing';
    const desc = await step(conn.request('DESCRIBE', u.url, { Accept: 'application/sdp' }));
    const base = desc.headers['content-base'] ?? desc.headers['content-location'] ?? u.url;
    const sdp = parseSdp(desc.body.toString('utf8'), base);
    this.unsupported = sdp.media
      .filter((m) => m.codec === undefined)
      .map((m) => `${m.type} ${m.encoding || `payload type ${m.payloadType}`}`);
    const chosen = this.chooseTracks(sdp.media);
    if (chosen.length === 0) {
      throw new RtspError(
        `codec not supported: ${this.unsupported.join(', ') || 'no media in the SDP'}`,
      );
    }
    this.state = 'setting up';
    let sessionTimeoutS = 60;
    for (const [i, m] of chosen.entries()) {
      const t = this.makeTrack(m, i);
      let header: string;
      if (transport !== TRANSPORT_UDP)
        header = `RTP/AVP/TCP;unicast;interleaved=${t.rtpChannel}-${t.rtcpChannel}`;
      else {
        const ports = await this.bindPair(t, conn.localAddress);
        header = `RTP/AVP;unicast;client_port=${ports}-${ports + 1}`;
      }
      const r = await step(conn.request('SETUP', m.control, { Transport: header }));
      const tr = parseTransport(r.headers['transport'] ?? '');
      if (transport !== TRANSPORT_UDP && tr.interleaved) {
        t.rtpChannel = tr.interleaved[0];
        t.rtcpChannel = tr.interleaved[1];
      }
      if (transport === TRANSPORT_UDP) {
        if (r.headers['transport'] && /\/TCP/i.test(r.headers['transport'])) {
          throw new RtspError(
            'the server answered SETUP over UDP with TCP transport; set transport 1',
          );
        }
        t.serverPorts = tr.serverPorts ?? null;
      }
      if (r.headers['session']) sessionTimeoutS = parseSession(r.headers['session']).timeoutS;
    }
    if (!conn.session) throw new RtspError('SETUP answered without a Session header');
    this.state = 'starting';
    const play = await step(conn.request('PLAY', sdp.control, { Range: 'npt=0.000-' }));
    const info = parseRtpInfo(play.headers['rtp-info'] ?? '');
    this.timeline = new RtpTimeline();
    for (const t of this.tracks) {
      const e = info.find((x) => x.url === t.media.control || t.media.control.endsWith(x.url));
      t.clock = this.timeline.addTrack(t.clockRate, e?.rtptime);
    }
    this.sync = this.timeline.useRtpInfo() ? 'rtp-info' : 'first packets';
    // The stream splices before the first bytes of a reopened session.
    if (this.sessions > 0) this.ctx.onDiscontinuity?.('rtsp session reopened');
    this.sessions++;
    const early = this.early;
    this.early = [];
    this.earlyBytes = 0;
    for (const e of early) this.frame(e.t, e.f);
    this.muxer?.flush();
    this.state = 'playing';
    this.faultText = '';
    this.lastMediaAt = this.ctx.clock.monotonic();
    this.backoff.reset();
    await this.play(conn, end, u.url, useGetParameter, sessionTimeoutS);
  }

  private chooseTracks(media: SdpMedia[]): SdpMedia[] {
    const ts = media.find((m) => m.codec === 'mp2t');
    if (ts) return [ts];
    const out: SdpMedia[] = [];
    for (const m of media) {
      if (m.codec === 'aac' && !aacConfigOf(m)) {
        this.unsupported.push(`${m.type} MPEG4-GENERIC with a config= that is not hex`);
        continue;
      }
      if (m.codec === 'aac' && !aacParamsOf(m.fmtp)) {
        this.unsupported.push(`${m.type} MPEG4-GENERIC with AU headers beyond size and index`);
        continue;
      }
      if (m.codec === 'hevc' && Number(m.fmtp['sprop-max-don-diff'] ?? 0) > 0) {
        this.unsupported.push(`${m.type} H265 with DONL (sprop-max-don-diff)`);
        continue;
      }
      if (m.codec && m.clockRate > 0) out.push(m);
    }
    return out;
  }

  private makeTrack(m: SdpMedia, i: number): Track {
    const t: Track = {
      media: m,
      dep: null as unknown as Depacketizer,
      reorder: null,
      mux: -1,
      dts: null,
      clockRate: m.clockRate,
      rtpChannel: 2 * i,
      rtcpChannel: 2 * i + 1,
      udp: [],
      serverPorts: null,
      clock: -1,
      ssrc: -1,
      maxSeq: -1,
      cycles: 0,
      received: 0,
      lsr: 0,
      lsrAt: 0,
    };
    const emit = (f: RtpFrame) => this.frame(t, f);
    if (m.codec === 'mp2t') t.dep = new Mp2tDepacketizer(emit);
    else {
      if (!this.muxer) this.muxer = new EsMuxer({ sink: (b) => this.ctx.onData(b, true) });
      if (m.codec === 'aac') {
        t.dep = new AacDepacketizer(aacParamsOf(m.fmtp)!, emit);
        t.mux = this.muxer.addTrack({
          codec: 'aac',
          config: aacConfigOf(m)!,
          timescale: m.clockRate,
        });
      } else {
        t.dep = m.codec === 'h264' ? new H264Depacketizer(emit) : new HevcDepacketizer(emit);
        const ps = paramSetsOf(m);
        t.mux = this.muxer.addTrack({
          codec: m.codec === 'h264' ? 'h264' : 'hevc',
          timescale: m.clockRate,
          ...(ps.length ? { paramSets: ps } : {}),
        });
        t.dts = new DtsFromPts(m.clockRate);
        this.readDepth(t, ps);
      }
    }
    this.tracks.push(t);
    return t;
  }

  /** Bind an even RTP port and the RTCP port above it on `host`; returns the RTP port. */
  private async bindPair(t: Track, host: string): Promise<number> {
    for (let attempt = 0; attempt < 32; attempt++) {
      const port = 2 * (10_000 + Math.floor(Math.random() * 20_000));
      const rtp = createSocket('udp4');
      const rtcp = createSocket('udp4');
      try {
        await bind(rtp, port, host);
        await bind(rtcp, port + 1, host);
      } catch {
        rtp.close();
        rtcp.close();
        continue;
      }
      const server = this.conn?.remoteAddress ?? '';
      rtp.on('message', (d, r) => {
        if (r.address === server || server.endsWith(r.address)) this.rtp(t, d);
      });
      rtcp.on('message', (d, r) => {
        if (r.address === server || server.endsWith(r.address)) this.rtcpIn(t, d);
      });
      rtp.on('error', () => {});
      rtcp.on('error', () => {});
      t.udp = [rtp, rtcp];
      t.reorder = new RtpSequencer(true, (q) => t.dep.push(q), RTSP_REORDER_PACKETS);
      return port;
    }
    throw new RtspError('no free UDP port pair for RTP');
  }

  private interleaved(channel: number, d: Buffer): void {
    for (const t of this.tracks) {
      if (channel === t.rtpChannel) this.rtp(t, d);
      else if (channel === t.rtcpChannel) this.rtcpIn(t, d);
      else continue;
      return;
    }
  }

  private rtp(t: Track, d: Buffer): void {
    const p = parseRtp(d);
    if (!p || p.payloadType !== t.media.payloadType) return;
    this.c.packets++;
    this.c.bytes += d.length;
    this.lastMediaAt = this.ctx.clock.monotonic();
    this.setupTimer?.cancel();
    this.setupTimer = null;
    t.received++;
    this.sequence(t, p);
    if (t.reorder) t.reorder.push(p);
    else t.dep.push(p);
    this.muxer?.flush();
  }

  /** RFC 3550 A.1 highest sequence number with cycles, for the receiver report. */
  private sequence(t: Track, p: RtpPacket): void {
    t.ssrc = p.ssrc;
    if (t.maxSeq < 0) t.maxSeq = p.seq;
    else {
      const d = (p.seq - t.maxSeq) & 0xffff;
      if (d > 0 && d < 0x8000) {
        if (p.seq < t.maxSeq) t.cycles += 0x10000;
        t.maxSeq = p.seq;
      }
    }
  }

  private frame(t: Track, f: RtpFrame): void {
    if (t.clock < 0) {
      // Media that came with the PLAY answer, before its RTP-Info was read: held briefly (a
      // copy: a view would keep the whole read it came in, beyond what is counted).
      if (
        this.early.length < MAX_EARLY_FRAMES &&
        this.earlyBytes + f.data.length <= MAX_EARLY_BYTES
      ) {
        this.early.push({ t, f: { ...f, data: Buffer.from(f.data) } });
        this.earlyBytes += f.data.length;
        this.heldPeak = Math.max(this.heldPeak, this.held());
      }
      return;
    }
    if (t.mux < 0) {
      this.ctx.onData(f.data);
      return;
    }
    const pts =
      this.timeline.time(t.clock, f.timestamp, this.ctx.clock.monotonic()) +
      PTS_ORIGIN_S * t.clockRate;
    if (!t.dts) {
      this.muxer!.write(t.mux, { pts, data: f.data, key: f.key });
      return;
    }
    if (f.key) this.readDepth(t, leadingNalsOf(this.videoCodec(t), f.data));
    for (const o of t.dts.push(pts, f)) this.writeVideo(t, o);
  }

  private writeVideo(t: Track, o: TimedFrame<RtpFrame>): void {
    if (!this.muxer) return;
    if (o.stepBack) {
      // The reorder depth was found larger than assumed: DTS (and PCR) step back once.
      this.muxer.flush();
      this.ctx.onDiscontinuity?.('rtsp: video reorder depth grew, decoding times re-anchored');
    }
    this.muxer.write(t.mux, { pts: o.pts, dts: o.dts, data: o.item.data, key: o.item.key });
  }

  private videoCodec(t: Track): 'h264' | 'hevc' {
    return t.media.codec === 'hevc' ? 'hevc' : 'h264';
  }

  /** The reorder depth of the SPS among `nals` (sprop, or in front of a key frame). */
  private readDepth(t: Track, nals: Uint8Array[]): void {
    const codec = this.videoCodec(t);
    for (const sps of spsOf(codec, nals)) {
      const n = reorderDepthOfSps(codec, sps);
      if (n !== undefined) t.dts!.setDepth(n);
    }
  }

  private rtcpIn(t: Track, d: Buffer): void {
    this.c.rtcp++;
    // Walk the compound packet for a sender report (PT 200) to answer in LSR/DLSR.
    let off = 0;
    while (off + 4 <= d.length) {
      const pt = d[off + 1]!;
      const len = (d.readUInt16BE(off + 2) + 1) * 4;
      if (pt === 200 && off + 20 <= d.length) {
        t.lsr = d.readUInt32BE(off + 10);
        t.lsrAt = this.ctx.clock.monotonic();
        if (t.clock >= 0) {
          this.timeline.senderReport(
            t.clock,
            d.readUInt32BE(off + 8),
            d.readUInt32BE(off + 12),
            d.readUInt32BE(off + 16),
          );
        }
      }
      off += len;
    }
  }

  /** A receiver report (RFC 3550 6.4.2) for each track that has received packets. */
  private sendReports(conn: RtspConnection): void {
    for (const t of this.tracks) {
      if (t.ssrc < 0) continue;
      const rr = Buffer.alloc(32);
      rr[0] = 0x81;
      rr[1] = 201;
      rr.writeUInt16BE(7, 2);
      rr.writeUInt32BE(this.ssrc, 4);
      rr.writeUInt32BE(t.ssrc >>> 0, 8);
      const lost = Math.min(t.dep.stats.lost, 0x7fffff);
      rr.writeUInt32BE(lost, 12);
      rr.writeUInt32BE((t.cycles + t.maxSeq) >>> 0, 16);
      rr.writeUInt32BE(0, 20);
      rr.writeUInt32BE(t.lsr >>> 0, 24);
      const dlsr = t.lsr ? Math.round(((this.ctx.clock.monotonic() - t.lsrAt) / 1000) * 65536) : 0;
      rr.writeUInt32BE(dlsr >>> 0, 28);
      if (t.udp.length === 2 && t.serverPorts) {
        t.udp[1]!.send(rr, t.serverPorts[1], conn.remoteAddress);
      } else if (t.udp.length === 0) {
        const h = Buffer.from([0x24, t.rtcpChannel, 0, rr.length]);
        conn.write(Buffer.concat([h, rr]));
      }
    }
  }

  /** Playing: keep-alives, receiver reports and the media watchdog until the session ends. */
  private play(
    conn: RtspConnection,
    end: Promise<never>,
    url: string,
    useGetParameter: boolean,
    sessionTimeoutS: number,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // One timer per purpose: a long session does not pile up spent timers.
      const timers = new Map<string, Timer>();
      const set = (name: string, fn: () => void, ms: number) => {
        timers.get(name)?.cancel();
        timers.set(name, this.ctx.clock.setTimeout(fn, ms));
      };
      let done = false;
      const stop = (err?: Error) => {
        if (done) return;
        done = true;
        for (const x of timers.values()) x.cancel();
        if (err) reject(err);
        else resolve();
      };
      end.catch((e) => stop(e));
      this.wake = () => stop();
      const timeoutMs = this.timeoutMs;
      // Keep-alives often enough that a server that stops answering is noticed within
      // client-timeout, and within the session time-out in any case.
      const keepAliveMs = Math.max(500, Math.min((sessionTimeoutS * 1000) / 2, timeoutMs / 2));
      let outstanding = false;
      const keepAlive = () => {
        if (done) return;
        set('keepAlive', keepAlive, keepAliveMs);
        if (outstanding) return; // the last one is still within its time to answer
        outstanding = true;
        this.c.keepAlives++;
        let answered = false;
        conn.request(useGetParameter ? 'GET_PARAMETER' : 'OPTIONS', url).then(
          () => {
            answered = true;
            outstanding = false;
          },
          (e: Error) => {
            // An error status still shows the server is alive; silence does not.
            if (e instanceof RtspError && e.status > 0) {
              answered = true;
              outstanding = false;
            } else stop(e);
          },
        );
        set(
          'answer',
          () => {
            if (!answered && !done) {
              stop(new RtspError(`keep-alive not answered within ${timeoutMs / 2000} s`));
            }
          },
          timeoutMs / 2,
        );
      };
      set('keepAlive', keepAlive, keepAliveMs);
      const reports = () => {
        if (done) return;
        this.sendReports(conn);
        set('reports', reports, RTCP_INTERVAL_MS);
      };
      set('reports', reports, 1000);
      const watchdog = () => {
        if (done) return;
        const idle = this.ctx.clock.monotonic() - this.lastMediaAt;
        if (idle >= timeoutMs) {
          stop(new RtspError(`no media from the server for ${timeoutMs / 1000} s`));
          return;
        }
        set('watchdog', watchdog, Math.max(100, timeoutMs - idle));
      };
      set('watchdog', watchdog, timeoutMs);
    });
  }

  /** Bytes held now of what the server sent: frames before the PLAY answer, unread bytes. */
  private held(): number {
    return this.earlyBytes + (this.conn?.buffered ?? 0);
  }

  private teardown(): void {
    this.setupTimer?.cancel();
    this.setupTimer = null;
    const conn = this.conn;
    this.conn = null;
    if (conn) {
      if (conn.session && this.state === 'playing') {
        conn.request('TEARDOWN', str(this.cfg, 'uri')).catch(() => {});
      }
      // Give TEARDOWN its write before closing; nothing waits for its answer.
      setImmediate(() => conn.close());
    }
    for (const t of this.tracks) {
      for (const s of t.udp) s.close();
      for (const o of t.dts?.flush() ?? []) this.writeVideo(t, o);
    }
    this.tracks = [];
    this.muxer?.flush();
    this.muxer = null;
    this.early = [];
    this.earlyBytes = 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.backoff.cancel();
    this.wake?.();
    this.conn?.close();
    await this.running;
    this.teardown();
  }

  fault(): string {
    return this.faultText;
  }

  status(): Record<string, unknown> {
    return {
      state: this.state,
      transport: ['udp', 'tcp', 'http'][int(this.cfg, 'transport', 0)] ?? 'udp',
      ...(this.sync ? { sync: this.sync, srCorrections: this.timeline.srCorrections } : {}),
      ...this.c,
      memory: { held: this.held(), peak: this.heldPeak },
      tracks: this.tracks.map((t) => ({
        codec: t.media.codec,
        control: t.media.control,
        clockRate: t.clockRate,
        received: t.received,
        ...t.dep.stats,
        ...(t.reorder ? { reordered: t.reorder.reordered, duplicates: t.reorder.duplicates } : {}),
        ...(t.dts ? { dts: t.dts.stats() } : {}),
      })),
      ...(this.unsupported.length ? { unsupported: this.unsupported } : {}),
      ...(this.muxer ? { remux: this.muxer.stats() } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  metrics(): TransportMetrics {
    let lost = 0;
    let frames = 0;
    let dropped = 0;
    for (const t of this.tracks) {
      lost += t.dep.stats.lost;
      frames += t.dep.stats.frames;
      dropped += t.dep.stats.dropped;
    }
    return {
      protocol: 'rtsp',
      rttSeconds: 0,
      packets: {
        received: this.c.packets,
        bytes: this.c.bytes,
        lost,
        frames,
        framesDropped: dropped,
        reconnects: this.c.reconnects,
      },
    };
  }
}

function bind(s: UdpSocket, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    s.once('error', reject);
    s.bind({ port, address: host || undefined, exclusive: true }, () => {
      s.off('error', reject);
      resolve();
    });
  });
}

/** rtsp://[login:password@]host[:port]/path → the parts; the URL sent carries no userinfo. */
function parseUrl(uri: string): {
  url: string;
  host: string;
  port: number;
  /** Path and query, for the HTTP tunnel's requests. */
  path: string;
  login: string;
  password: string;
} {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    throw new RtspError(`uri ${JSON.stringify(maskCredentials(uri))} is not a URL`);
  }
  if (u.protocol !== 'rtsp:') throw new RtspError(`uri scheme ${u.protocol} is not rtsp:`);
  const login = decodeURIComponent(u.username);
  const password = decodeURIComponent(u.password);
  u.username = '';
  u.password = '';
  return {
    url: u.toString(),
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port ? Number(u.port) : 554,
    path: `${u.pathname || '/'}${u.search}`,
    login,
    password,
  };
}
