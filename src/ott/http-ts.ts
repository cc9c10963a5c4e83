// HTTP-TS (`GET /{stream-name}/mpegts`): every new client starts with the stream's PAT, then its
// PMT(s), then the latest video random access point (key frame) and everything since, so a
// player can decode from its first bytes. Clients share the bytes; one whose unsent backlog grows
// past a bound is dropped and never slows the others.
import type { ServerResponse } from 'node:http';
import type { BusSink } from '../engine/bus.ts';
import { PAT_PID, pid, pusi, randomAccess, TS_PACKET_SIZE } from '../mpegts/packet.ts';
import { PAT_TABLE_ID, PMT_TABLE_ID, parsePat, patPmtPids, pmtVideoPids } from '../mpegts/psi.ts';
import { PsiRewriter } from '../mpegts/psi-rewrite.ts';
import { BlockPool, type Lease } from './pool.ts';
import type { OttReply } from './request.ts';

/** A client whose unsent backlog exceeds this is too slow and is disconnected. */
export const DEFAULT_MAX_BACKLOG = 8 * 1024 * 1024;
/** The start buffer (output since the last key frame) never holds more than this: past it,
 *  new clients start with the live packets until the next key frame. */
const MAX_START_BUFFER = 16 * 1024 * 1024;
/** First size of the start buffer; it grows by doubling to the largest GOP seen and stays. */
const INITIAL_START_BUFFER = 512 * 1024;
/** A PSI section of more packets than this is not kept for the start header. */
const MAX_PSI_PACKETS = 8;

/**
 * Blocks for the live bytes clients' write queues hold. A fresh copy of every batch for every
 * stream (the receive block is reused once the batch has been handed on) made ~80 MB/s of
 * short-lived ArrayBuffers at 100 streams: V8 ran a scavenge for external-memory pressure several
 * times a second and its major-GC marking took ~20 % of the process (bench/stream-ingest.ts,
 * perf). A block goes back when the last client's write of it has completed.
 */
const fanoutPool = new BlockPool(32 * 1024 * 1024);

export interface HttpTsStats {
  clients: number;
  served: number;
  dropped: number;
  bufferedBytes: number;
}

export class HttpTsFanout implements BusSink {
  /** Takes bursts (BusSink.acceptsBursts): its clients read through socket buffers. */
  readonly acceptsBursts = true;
  /**
   * Output since the latest random access point, copied into one buffer reused from key frame
   * to key frame, and the PAT + PMT packets sent before it. Keeping the receive batches
   * themselves for a GOP would hold each batch's memory past the young generation, and at a
   * hundred streams that external memory makes V8 run a full collection every second or so.
   */
  private start = Buffer.allocUnsafeSlow(INITIAL_START_BUFFER);
  private header: Buffer | null = null;
  private bytes = 0;
  private started = false;
  /** Packets of the latest occurrence of the PAT and of each PMT (since its last PUSI). */
  private psi = new Map<number, Buffer[]>();
  private readers = new Map<number, PsiRewriter>();
  private pmtPids: number[] = [];
  private pmtVideo = new Map<number, number[]>();
  private videoPids = new Set<number>();
  /** Where, in the start buffer, the key frame ends (the next video PES starts); -1 while the
   *  key frame is not complete yet. The mosaic's thumbnails read just that span (keyFrame()). */
  private rapEnd = -1;
  /** Key frames seen so far (the mosaic tells a live picture from a stale one by it). */
  private rapCount = 0;
  private clients = new Set<ServerResponse>();
  private served = 0;
  private dropped = 0;

  constructor(readonly maxBacklog = DEFAULT_MAX_BACKLOG) {}

  packets(buf: Buffer): void {
    this.remember(buf);
    if (this.clients.size === 0) return;
    // The clients' write queues keep it past this call: one copy shared by all of them, in a
    // pooled block each client's write holds until it completes.
    const lease = fanoutPool.acquire(buf.length);
    const own = lease.buf.subarray(0, buf.length);
    buf.copy(own);
    for (const c of this.clients) this.write(c, own, lease);
    lease.release();
  }

  discontinuity(): void {
    // The splicer resumes at the new input's PAT; sections cut by the splice are not finished.
    for (const r of this.readers.values()) r.abandon();
  }

  end(): void {
    this.header = null;
    this.bytes = 0;
    this.started = false;
    this.rapEnd = -1;
    this.psi.clear();
    this.readers.clear();
    this.pmtPids = [];
    this.pmtVideo.clear();
    this.videoPids.clear();
  }

  /** Serve one client; the reply is hijacked and stays open until the client or stream goes.
   *  `headOnly` (a HEAD): the same headers, then the end; no client is kept for it. */
  serve(reply: OttReply, headOnly = false): void {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'Content-Type': 'video/mp2t',
      'Cache-Control': 'no-cache',
      Connection: 'close',
    });
    if (headOnly) {
      res.end();
      return;
    }
    // Send the status line now: a client connecting before any output must not wait for it.
    res.flushHeaders();
    this.served++;
    this.clients.add(res);
    const forget = () => this.clients.delete(res);
    res.on('close', forget);
    res.on('error', forget);
    if (this.started && this.header) {
      this.write(res, this.header);
      // A copy: the start buffer is overwritten while this write may still be queued.
      if (this.bytes > 0) this.write(res, Buffer.from(this.start.subarray(0, this.bytes)));
    }
  }

  /** Disconnect every client (stream closed, paused or HTTP-TS switched off). A client that
   *  took everything sent gets a clean end of the body (the last chunk of the chunked encoding,
   *  so `curl` exits 0 rather than "partial file"); one with bytes still queued is cut off. */
  closeAll(): void {
    for (const c of this.clients) {
      if (c.writableLength > 0) c.destroy();
      else c.end();
    }
    this.clients.clear();
  }

  /**
   * The key-frame tap: PAT + PMT(s) and the packets of the latest complete video key frame (up
   * to the next video PES), enough for a decoder to show that one picture; null before the
   * first complete key frame. A copy: the start buffer is reused. `count` is the number of key
   * frames seen, so a caller tells a new picture from the one it already has.
   */
  keyFrame(): { ts: Buffer; count: number } | null {
    if (!this.started || !this.header || this.rapEnd <= 0 || this.videoPids.size === 0) {
      return null;
    }
    return {
      ts: Buffer.concat([this.header, this.start.subarray(0, this.rapEnd)]),
      count: this.rapCount,
    };
  }

  stats(): HttpTsStats {
    return {
      clients: this.clients.size,
      served: this.served,
      dropped: this.dropped,
      bufferedBytes: this.bytes,
    };
  }

  /** `lease`: `buf` is a view of a pooled block, held until this write completes (or fails:
   *  a destroyed response calls back its pending writes with the error). */
  private write(res: ServerResponse, buf: Buffer, lease?: Lease): void {
    if (res.destroyed) return;
    if (res.writableLength > this.maxBacklog) {
      this.dropped++;
      this.clients.delete(res);
      res.destroy();
      return;
    }
    if (lease) res.write(buf, lease.retain());
    else res.write(buf);
  }

  /** Follow PAT/PMT and restart the start buffer at each video random access point. */
  private remember(buf: Buffer): void {
    let from = -1;
    // The first video PES start after the key frame's in this batch: where the key frame ends.
    let end = -1;
    for (let o = 0; o + TS_PACKET_SIZE <= buf.length; o += TS_PACKET_SIZE) {
      const p = pid(buf, o);
      if (p === PAT_PID || this.psi.has(p)) {
        this.trackPsi(buf, o, p);
      } else if (pusi(buf, o) && this.isRapPid(p)) {
        if (randomAccess(buf, o)) {
          const header = this.psiSnapshot();
          if (header) {
            this.header = header;
            from = o;
            end = -1;
            this.rapCount++;
            continue;
          }
        }
        if (end < 0 && (from >= 0 || (this.started && this.rapEnd < 0))) end = o;
      }
    }
    if (from >= 0) {
      this.bytes = 0;
      this.started = true;
      this.rapEnd = end > from ? end - from : -1;
      this.keep(buf.subarray(from));
    } else if (this.started) {
      if (this.bytes + buf.length > MAX_START_BUFFER) {
        this.bytes = 0;
        this.started = false;
        this.rapEnd = -1;
      } else {
        if (end >= 0 && this.rapEnd < 0) this.rapEnd = this.bytes + end;
        this.keep(buf);
      }
    }
  }

  /** Append to the start buffer, growing it (by doubling) when a GOP is larger than any before. */
  private keep(buf: Buffer): void {
    const need = this.bytes + buf.length;
    if (need > this.start.length) {
      let size = this.start.length * 2;
      while (size < need) size *= 2;
      const grown = Buffer.allocUnsafeSlow(size);
      this.start.copy(grown, 0, 0, this.bytes);
      this.start = grown;
    }
    buf.copy(this.start, this.bytes);
    this.bytes = need;
  }

  /** Video key frames only; a stream without video (radio) starts at any flagged access point. */
  private isRapPid(p: number): boolean {
    return this.videoPids.size === 0 || this.videoPids.has(p);
  }

  private trackPsi(buf: Buffer, o: number, p: number): void {
    const pkt = Buffer.from(buf.subarray(o, o + TS_PACKET_SIZE));
    const list = this.psi.get(p);
    if (pusi(buf, o)) this.psi.set(p, [pkt]);
    else if (list?.length && list.length < MAX_PSI_PACKETS) list.push(pkt);
    let r = this.readers.get(p);
    if (!r) {
      // A reader only: version() never asks for a change, so the bytes stay as they are.
      r = new PsiRewriter({ version: () => null, complete: (s) => this.onSection(p, s) });
      this.readers.set(p, r);
    }
    r.packet(buf, o);
  }

  private onSection(p: number, s: Buffer): void {
    if (p === PAT_PID && s[0] === PAT_TABLE_ID) {
      const pmts = [...patPmtPids(parsePat(s))];
      for (const old of this.pmtPids) {
        if (!pmts.includes(old)) {
          this.psi.delete(old);
          this.readers.delete(old);
          this.pmtVideo.delete(old);
        }
      }
      for (const q of pmts) if (!this.psi.has(q)) this.psi.set(q, []);
      this.pmtPids = pmts;
    } else if (s[0] === PMT_TABLE_ID && this.pmtPids.includes(p)) {
      this.pmtVideo.set(p, pmtVideoPids(s));
    } else {
      return;
    }
    this.videoPids = new Set([...this.pmtVideo.values()].flat());
  }

  /** PAT + every PMT packet as last seen, or null while either is unknown. */
  private psiSnapshot(): Buffer | null {
    const pat = this.psi.get(PAT_PID);
    if (!pat?.length || this.pmtPids.length === 0) return null;
    const parts = [...pat];
    for (const q of this.pmtPids) {
      const pmt = this.psi.get(q);
      if (!pmt?.length || !this.pmtVideo.has(q)) return null;
      parts.push(...pmt);
    }
    return Buffer.concat(parts);
  }
}
