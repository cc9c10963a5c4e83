// HTTP-TS (`GET /{stream-name}/mpegts`): one shared buffer per stream holding the output since
// the last PAT that precedes a random access point, so every new client starts at PAT/PMT + key
// frame. Clients share the bytes; one whose socket backlog grows past a bound is dropped.
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { BusSink } from './bus.ts';
import { PAT_PID, pid, pusi, randomAccess, TS_PACKET } from './ts.ts';

/** A client whose unsent backlog exceeds this is too slow and is disconnected. */
export const DEFAULT_MAX_BACKLOG = 8 * 1024 * 1024;
/** The start buffer never holds more than this (a stream without key-frame flags). */
const MAX_START_BUFFER = 16 * 1024 * 1024;

interface Mark {
  chunk: number;
  offset: number;
}

export interface HttpTsStats {
  clients: number;
  served: number;
  dropped: number;
  bufferedBytes: number;
}

export class HttpTsFanout implements BusSink {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private lastPat: Mark | null = null;
  private started = false;
  private clients = new Set<ServerResponse>();
  private served = 0;
  private dropped = 0;

  constructor(readonly maxBacklog = DEFAULT_MAX_BACKLOG) {}

  packets(buf: Buffer): void {
    this.remember(buf);
    for (const c of this.clients) this.write(c, buf);
  }

  discontinuity(): void {
    // The splicer already marked the packets; the start buffer stays valid because the next
    // client still begins at a PAT followed by a key frame.
  }

  end(): void {
    this.chunks = [];
    this.bytes = 0;
    this.lastPat = null;
    this.started = false;
  }

  /** Serve one client; the reply is hijacked and stays open until the client or stream goes. */
  serve(reply: FastifyReply): void {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'Content-Type': 'video/mp2t',
      'Cache-Control': 'no-cache',
      Connection: 'close',
    });
    this.served++;
    this.clients.add(res);
    const forget = () => this.clients.delete(res);
    res.on('close', forget);
    res.on('error', forget);
    if (this.started) for (const c of this.chunks) this.write(res, c);
  }

  /** Disconnect every client (stream closed or HTTP-TS switched off). */
  closeAll(): void {
    for (const c of this.clients) c.destroy();
    this.clients.clear();
  }

  stats(): HttpTsStats {
    return {
      clients: this.clients.size,
      served: this.served,
      dropped: this.dropped,
      bufferedBytes: this.bytes,
    };
  }

  private write(res: ServerResponse, buf: Buffer): void {
    if (res.destroyed) return;
    if (res.writableLength > this.maxBacklog) {
      this.dropped++;
      this.clients.delete(res);
      res.destroy();
      return;
    }
    res.write(buf);
  }

  /** Keep the buffer starting at the last PAT seen before the latest random access point. */
  private remember(buf: Buffer): void {
    let idx = this.chunks.push(buf) - 1;
    this.bytes += buf.length;
    // Bytes already cut from the front of the current chunk; marks are relative to the chunk.
    let shift = 0;
    for (let o = 0; o + TS_PACKET <= buf.length; o += TS_PACKET) {
      const p = pid(buf, o);
      if (p === PAT_PID && pusi(buf, o)) {
        this.lastPat = { chunk: idx, offset: o - shift };
      } else if (this.lastPat && randomAccess(buf, o)) {
        if (this.lastPat.chunk === idx) shift += this.lastPat.offset;
        idx = this.cutAt(this.lastPat, idx);
        this.lastPat = null;
        this.started = true;
      }
    }
    if (this.bytes > MAX_START_BUFFER) {
      // No key frame flagged for a long time: start new clients at the last PAT instead.
      if (this.lastPat) {
        this.cutAt(this.lastPat, idx);
        this.lastPat = { chunk: 0, offset: 0 };
        this.started = true;
      } else {
        this.chunks = [];
        this.bytes = 0;
        this.started = false;
      }
    }
  }

  /** Drop everything before `m`; returns the new index of chunk `cur`. */
  private cutAt(m: Mark, cur: number): number {
    const rest = this.chunks.slice(m.chunk);
    rest[0] = rest[0]!.subarray(m.offset);
    this.chunks = rest;
    this.bytes = rest.reduce((n, c) => n + c.length, 0);
    return cur - m.chunk;
  }
}
