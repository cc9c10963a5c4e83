// The stream workers (docs/architecture.md, "Stream workers"): worker threads, each one event
// loop of the data plane, that run whole streams. This side places a stream in the worker
// with the fewest, forwards its OTT requests there, relays its bus to readers on this thread,
// and starts a worker again (with its streams) if one dies.

import type { Socket } from 'node:net';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { StreamApplied } from '../config/spec-types.generated.ts';
import type { DesiredState, Resource } from '../config/types.ts';
import type { StreamPlacement, WorkerLoop } from '../drivers/stream/placement.ts';
import { streamRegistry } from '../drivers/stream/registry.ts';
import type { RecorderTotalsRow } from '../dvr/recorder-totals.ts';
import { dvrStorages } from '../dvr/registry.ts';
import { EIT_SINK_SERVICE } from '../engine/bus.ts';
import { CLUSTER_SERVICE } from '../engine/cluster.ts';
import type { UdpOwner, UdpTotals } from '../native/udp.ts';
import { viewerQuery } from '../ott/access.ts';
import { ottCachePolicy } from '../ott/cache-policy.ts';
import { LIVE_DELIVERY_SERVICE } from '../ott/live-publish.ts';
import type { OttReply, OttRequest } from '../ott/request.ts';
import type { OttRouter } from '../ott/router.ts';
import { DriverError, type Host } from '../reconciler/driver.ts';
import { ffmpegPath } from '../util/ffmpeg.ts';
import { LOOP_DELAY_SINK } from '../util/loop-delay-sampler.ts';
import type { Services } from '../util/services.ts';
import { mainThreadReason } from './eligible.ts';
import type {
  ControlRequest,
  FromWorker,
  LoopFigures,
  StorageOp,
  StorageView,
  ToWorker,
  WorkerInit,
  WorkerTotals,
} from './protocol.ts';
import { RemoteStream, type WorkerLink } from './remote-stream.ts';

/** A stream's create, update or close that the worker has not answered by then failed. */
const REQUEST_DEADLINE_MS = 60_000;
/** A worker that died is started again after this (and at most once per this period). */
const RESTART_MS = 1_000;

export interface StreamWorkersOptions {
  services: Services;
  router: OttRouter;
  log: Logger;
  dataDir: string;
  logLevel: string;
  /** The config being applied (which streams others read: they stay with their readers). */
  desired: () => DesiredState | undefined;
}

interface Pending {
  resolve: () => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
  /** The key of the stream a `close` closes. */
  closing?: string;
}

/** One forwarded request waiting for its worker's answer. */
interface Exchange {
  reply: OttReply;
  worker: StreamWorker;
}

class StreamWorker implements WorkerLink {
  worker!: Worker;
  readonly streams = new Map<string, RemoteStream>();
  private nextId = 1;
  private pending = new Map<number, Pending>();
  loop: LoopFigures = { p99Ms: 0, maxMs: 0, cpuMs: 0 };
  /** Its counters as last reported (since this worker thread started). */
  totals: WorkerTotals = { udp: [], recorded: [] };
  private exited = false;

  constructor(
    readonly index: number,
    private readonly pool: StreamWorkers,
  ) {
    this.start();
  }

  private start(): void {
    this.exited = false;
    const init: WorkerInit = this.pool.initFor(this.index);
    this.worker = new Worker(WORKER_BOOT, {
      eval: true,
      workerData: { ...init, entry: WORKER_ENTRY, tsx: TSX_API },
      name: `sluice-stream-${this.index}`,
    });
    this.worker.on('message', (m: FromWorker) => this.pool.onMessage(this, m));
    this.worker.on('error', (err) =>
      this.pool.log.error({ err, worker: this.index }, 'stream worker failed'),
    );
    this.worker.on('exit', (code) => this.onExit(code));
  }

  send(m: ToWorker, transfer?: ArrayBuffer[]): void {
    if (!this.exited) this.worker.postMessage(m, transfer ?? []);
  }

  request(m: ControlRequest): Promise<void> {
    // A stream closed while its worker is down is closed: the thread that ran it is gone, and
    // the restart must not bring it back.
    if (this.exited && m.t === 'close') {
      this.forget(m.key);
      return Promise.resolve();
    }
    if (this.exited)
      return Promise.reject(new DriverError(`stream worker ${this.index} is restarting`, true));
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new DriverError(
            `stream worker ${this.index} did not answer ${m.t} in ${REQUEST_DEADLINE_MS / 1000} s`,
            true,
          ),
        );
      }, REQUEST_DEADLINE_MS);
      this.pending.set(id, {
        resolve,
        reject,
        timer,
        ...(m.t === 'close' ? { closing: m.key } : {}),
      });
      this.send({ ...m, id } as ToWorker);
    });
  }

  rekey(before: string, s: RemoteStream): void {
    if (this.streams.get(before) === s) this.streams.delete(before);
    this.streams.set(s.key, s);
  }

  settle(id: number, error?: { message: string; retryable?: boolean; code?: string }): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (!error) p.resolve();
    else p.reject(new DriverError(error.message, error.retryable ?? true, error.code));
  }

  /** A stream closed with no worker to say so: its name leaves the router here. */
  private forget(key: string): void {
    const s = this.streams.get(key);
    this.streams.delete(key);
    if (s) this.pool.unroute(s.name);
  }

  private onExit(code: number): void {
    this.exited = true;
    for (const [id, p] of this.pending) {
      if (p.closing === undefined) {
        this.settle(id, {
          message: `stream worker ${this.index} exited (${code})`,
          retryable: true,
        });
        continue;
      }
      this.forget(p.closing);
      this.settle(id);
    }
    this.pool.workerExited(this, code);
  }

  /** Start again and run the same streams (their last records). */
  restart(): void {
    this.start();
    this.pool.sendStorages(this);
    for (const s of this.streams.values()) {
      s.moved(this);
      this.request({ t: 'create', res: s.resource() }).catch((err) =>
        this.pool.log.error(
          { err, stream: s.name },
          'stream not started again after its worker died',
        ),
      );
    }
  }

  terminate(): Promise<number> {
    this.exited = true;
    return this.worker.terminate();
  }
}

export class StreamWorkers implements StreamPlacement {
  readonly log: Logger;
  private list: StreamWorker[] = [];
  private count = 0;
  private exchanges = new Map<number, Exchange>();
  private nextRid = 1;
  private conns = new WeakMap<Socket, number>();
  private nextConn = 1;
  private routes = new Map<string, () => void>();
  /** Each routed name's stream (names are unique on a server). */
  private named = new Map<string, RemoteStream>();
  private closed = false;
  private watch: NodeJS.Timeout;
  private lastCache = '';
  private lastStorages = '';
  private lastCluster = '';
  private lastFfmpeg = ffmpegPath();
  /** What exited worker threads had counted. */
  private closedTotals: WorkerTotals = { udp: [], recorded: [] };

  constructor(private readonly o: StreamWorkersOptions) {
    this.log = o.log.child({ part: 'stream-workers' });
    // The cache policy and cluster identity follow the main thread's (set by their drivers).
    this.watch = setInterval(() => this.follow(), 1_000);
    this.watch.unref();
  }

  initFor(index: number): WorkerInit {
    const cluster = this.o.services.get(CLUSTER_SERVICE);
    const live = this.o.services.get(LIVE_DELIVERY_SERVICE);
    return {
      index,
      ...(live ? { liveShareId: live.shareId } : {}),
      dataDir: this.o.dataDir,
      logLevel: this.o.logLevel,
      segmentMaxAge: ottCachePolicy(this.o.services).segmentMaxAge,
      ffmpegPath: ffmpegPath(),
      ...(cluster ? { cluster: { domain: cluster.domain, nodeName: cluster.nodeName } } : {}),
    };
  }

  /** How many workers new streams are spread over (server `stream-workers`; 0: none). */
  setWorkers(n: number): void {
    this.setCount(n);
    // The server driver calls this with each change of its record, after it set the ffmpeg
    // path: the workers' next ffmpeg start runs the new one, as the main thread's does.
    this.sendFfmpeg();
  }

  private setCount(n: number): void {
    this.count = n;
    while (this.list.length < n) this.list.push(new StreamWorker(this.list.length, this));
    // Workers past the count keep the streams they run until those restart; an idle one stops.
    for (let i = this.list.length - 1; i >= n; i--) {
      const w = this.list[i]!;
      if (w.streams.size > 0) break;
      this.list.pop();
      void w.terminate();
    }
  }

  async place(res: Resource<StreamApplied>, host: Host): Promise<RemoteStream | string> {
    if (this.closed || this.count === 0) return '';
    const reason = mainThreadReason(res, this.o.desired());
    if (reason) return `${reason}: not run in a stream worker yet`;
    const w = this.list
      .slice(0, this.count)
      .reduce((a, b) => (b.streams.size < a.streams.size ? b : a));
    const proxy = new RemoteStream(res, w, host);
    w.streams.set(res.key, proxy);
    // Its storage (or the cluster identity) may have come up this moment: the stream must
    // find them at its start.
    this.sendStorages(w);
    this.sendCluster(w);
    try {
      await w.request({ t: 'create', res });
    } catch (err) {
      w.streams.delete(res.key);
      throw err;
    }
    // Listed once it runs, as a stream on this thread is (with its first snapshot).
    streamRegistry(host.services).add(proxy);
    return proxy;
  }

  // ---- messages from the workers ------------------------------------------------------------

  onMessage(w: StreamWorker, m: FromWorker): void {
    switch (m.t) {
      case 'ready':
        return;
      case 'done':
        if (m.snap) w.streams.get(m.snap.key)?.take(m.snap);
        w.settle(m.id, m.error);
        return;
      case 'snap':
        if (m.loop) w.loop = m.loop;
        if (m.totals) w.totals = m.totals;
        if (m.loopDelay) this.o.services.get(LOOP_DELAY_SINK)?.add(m.loopDelay);
        for (const s of m.streams) w.streams.get(s.key)?.take(s);
        return;
      case 'gone':
        w.streams.delete(m.key);
        this.maybeRetire(w);
        return;
      case 'route':
        this.route(w, m.name, m.on);
        return;
      case 'head': {
        const x = this.exchanges.get(m.rid);
        if (x && !x.reply.raw.headersSent) x.reply.raw.writeHead(m.status, m.headers);
        return;
      }
      case 'body':
        this.exchanges.get(m.rid)?.reply.raw.write(Buffer.from(m.data));
        return;
      case 'end': {
        const x = this.exchanges.get(m.rid);
        this.exchanges.delete(m.rid);
        if (x) x.reply.raw.end(m.data ? Buffer.from(m.data) : undefined);
        return;
      }
      case 'bus': {
        const s = w.streams.get(m.key);
        if (!s) return;
        if (m.packets) s.hub.packets(Buffer.from(m.packets));
        if (m.discontinuity !== undefined) s.hub.discontinuity(m.discontinuity);
        if (m.end) s.hub.end();
        return;
      }
      case 'live': {
        const s = this.named.get(m.key);
        if (!s) return;
        s.liveUris.clear();
        for (const u of m.uris) s.liveUris.add(u);
        return;
      }
      case 'st':
        this.storageOp(m.id, m.op);
        return;
      case 'st-ask':
        this.storageAsk(w, m);
        return;
      case 'eit':
        this.o.services
          .get(EIT_SINK_SERVICE)
          ?.section({ stream: m.stream, pid: m.pid }, Buffer.from(m.data));
        return;
    }
  }

  unroute(name: string): void {
    this.routes.get(name)?.();
    this.routes.delete(name);
    this.named.delete(name);
  }

  private route(w: StreamWorker, name: string, on: boolean): void {
    this.unroute(name);
    if (!on) return;
    // Looked up once, here: the worker announces a name as the stream takes it (at its create,
    // or an update that renames it, when the proxy already has the new record).
    const proxy = this.byName(w, name);
    if (proxy) this.named.set(name, proxy);
    try {
      this.routes.set(
        name,
        this.o.router.register(name, (req, reply, rest) =>
          this.forward(w, name, proxy, req, reply, rest),
        ),
      );
    } catch (err) {
      this.log.warn({ err, name }, 'a worker stream name is taken here');
    }
  }

  /** An OTT request for a worker's stream: HTTP-TS here, anything else answered there. */
  private forward(
    w: StreamWorker,
    name: string,
    proxy: RemoteStream | undefined,
    req: OttRequest,
    reply: OttReply,
    rest: string,
  ): unknown {
    if (rest === 'mpegts' && proxy) return proxy.serveHttpTs(reply, req.method === 'HEAD');
    const archived = proxy?.playArchive(req, reply, rest);
    if (archived !== undefined) return archived;
    reply.hijack();
    const rid = this.nextRid++;
    this.exchanges.set(rid, { reply, worker: w });
    const res = reply.raw;
    res.once('close', () => {
      if (this.exchanges.delete(rid)) w.send({ t: 'http-close', rid });
    });
    const q = viewerQuery(req.raw);
    w.send({
      t: 'http',
      rid,
      name,
      rest,
      req: {
        method: req.method,
        url: req.url,
        query: (req.query ?? {}) as Record<string, unknown>,
        headers: req.headers,
        ip: req.ip,
        conn: this.connOf(req.raw.socket, w),
        ...(q !== undefined ? { viewerQuery: q } : {}),
      },
    });
    return reply;
  }

  private byName(w: StreamWorker, name: string): RemoteStream | undefined {
    for (const s of w.streams.values()) if (s.name === name) return s;
    return undefined;
  }

  private connOf(socket: Socket, w: StreamWorker): number {
    let id = this.conns.get(socket);
    if (id === undefined) {
      id = this.nextConn++;
      this.conns.set(socket, id);
      const conn = id;
      socket.once('close', () => w.send({ t: 'conn-close', conn }));
    }
    return id;
  }

  // ---- the recorders of worker streams: the index on this thread ----------------------------

  private storageOp(id: number, op: StorageOp): void {
    const st = dvrStorages(this.o.services).get(id);
    if (!st) return;
    switch (op.op) {
      case 'attach': {
        const s = this.named.get(op.stream);
        st.attach(op.stream, { settings: op.settings, active: () => s?.state() === 'running' });
        return;
      }
      case 'detach':
        st.detach(op.stream);
        return;
      case 'commit':
        st.commit(op.row);
        return;
      case 'mark':
        st.mark(op.stream, op.kind, op.detail);
        return;
      case 'flush':
        st.flush();
        return;
    }
  }

  private storageAsk(w: StreamWorker, m: Extract<FromWorker, { t: 'st-ask' }>): void {
    const st = dvrStorages(this.o.services).get(m.id);
    const answer = (initId?: number, error?: string) =>
      w.send({
        t: 'st-answer',
        rid: m.rid,
        ...(initId !== undefined ? { initId } : {}),
        ...(error ? { error } : {}),
      });
    if (!st) {
      answer(undefined, `archive storage ${m.id} is not running`);
      return;
    }
    const found = st.initId(m.stream, m.track, m.hash);
    found
      .then(async (known) => {
        if (known !== undefined || !m.add) return answer(known);
        answer(await st.addInit(m.stream, m.track, m.hash, m.add.path, m.add.layout));
      })
      .catch((err: Error) => answer(undefined, err.message));
  }

  /** The storages as the recorders of the workers see them. */
  private storageViews(): StorageView[] {
    return [...dvrStorages(this.o.services).values()].map((st) => ({
      id: st.id,
      dir: st.dir,
      writable: st.writable,
    }));
  }

  /** Tell every worker of a change of the cluster identity (and `w` in any case). */
  private sendCluster(only?: StreamWorker): void {
    const c = this.o.services.get(CLUSTER_SERVICE);
    const cluster = c ? { domain: c.domain, nodeName: c.nodeName } : undefined;
    const key = JSON.stringify(cluster ?? null);
    const m = { t: 'cluster' as const, ...(cluster ? { cluster } : {}) };
    if (only) only.send(m);
    if (key === this.lastCluster) return;
    this.lastCluster = key;
    for (const x of this.list) if (x !== only) x.send(m);
  }

  /** Tell every worker of a change of the storages (and `w` in any case). */
  sendStorages(only?: StreamWorker): void {
    const list = this.storageViews();
    const key = JSON.stringify(list);
    if (only) only.send({ t: 'storages', list });
    if (key === this.lastStorages) return;
    this.lastStorages = key;
    for (const x of this.list) if (x !== only) x.send({ t: 'storages', list });
  }

  // ---- lifecycle ---------------------------------------------------------------------------

  /** UDP receive counters of the workers' streams, over every worker thread there has been. */
  udpTotals(): (UdpOwner & UdpTotals)[] {
    return summed(
      [this.closedTotals.udp, ...this.list.map((w) => w.totals.udp)],
      (r) => `${r.stream}\u0000${r.input}`,
    );
  }

  /** What the workers' recorders wrote, per storage and stream, over every worker thread. */
  recorderTotals(): RecorderTotalsRow[] {
    return summed(
      [this.closedTotals.recorded, ...this.list.map((w) => w.totals.recorded)],
      (r) => `${r.storage}\u0000${r.stream}`,
    );
  }

  workerExited(w: StreamWorker, code: number): void {
    // Counters never go back: what the dead thread counted stays in the totals.
    this.closedTotals = {
      udp: summed([this.closedTotals.udp, w.totals.udp], (r) => `${r.stream}\u0000${r.input}`),
      recorded: summed(
        [this.closedTotals.recorded, w.totals.recorded],
        (r) => `${r.storage}\u0000${r.stream}`,
      ),
    };
    w.totals = { udp: [], recorded: [] };
    for (const [rid, x] of this.exchanges) {
      if (x.worker !== w) continue;
      this.exchanges.delete(rid);
      if (!x.reply.raw.headersSent) {
        x.reply.raw.writeHead(502, { 'Content-Type': 'application/json' });
        x.reply.raw.end(JSON.stringify({ status: 502, message: 'the stream worker restarted' }));
      } else x.reply.raw.destroy();
    }
    for (const s of w.streams.values()) s.hub.reset();
    if (this.closed || !this.list.includes(w)) return;
    this.log.error(
      { worker: w.index, code, streams: w.streams.size },
      'stream worker exited: starting it again with its streams',
    );
    setTimeout(() => {
      if (!this.closed && this.list.includes(w)) w.restart();
    }, RESTART_MS).unref();
  }

  private maybeRetire(w: StreamWorker): void {
    if (w.index >= this.count && w.streams.size === 0) this.setCount(this.count);
  }

  private sendFfmpeg(): void {
    const path = ffmpegPath();
    if (path === this.lastFfmpeg) return;
    this.lastFfmpeg = path;
    for (const w of this.list) w.send({ t: 'ffmpeg', path });
  }

  private follow(): void {
    this.sendStorages();
    this.sendCluster();
    this.sendFfmpeg();
    const cache = ottCachePolicy(this.o.services).segmentMaxAge;
    const key = String(cache);
    if (key !== this.lastCache) {
      this.lastCache = key;
      for (const w of this.list) w.send({ t: 'cache', segmentMaxAge: cache });
    }
  }

  /** Each worker's loop as it last reported it (status, metrics). */
  workers(): WorkerLoop[] {
    return this.list.map((w) => ({
      index: w.index,
      streams: w.streams.size,
      loopP99Ms: round(w.loop.p99Ms),
      loopMaxMs: round(w.loop.maxMs),
      cpuMs: round(w.loop.cpuMs),
    }));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.watch);
    for (const off of this.routes.values()) off();
    this.routes.clear();
    await Promise.all(this.list.map((w) => w.terminate()));
    this.list = [];
  }
}

const round = (v: number) => Math.round(v * 10) / 10;

/** Rows of several lists with the same key added up (numbers only; the key fields kept). */
function summed<T extends object>(lists: T[][], key: (r: T) => string): T[] {
  const out = new Map<string, T>();
  for (const list of lists) {
    for (const r of list) {
      const k = key(r);
      const have = out.get(k) as Record<string, unknown> | undefined;
      if (!have) {
        out.set(k, { ...r });
        continue;
      }
      for (const [f, v] of Object.entries(r)) {
        if (typeof v === 'number' && typeof have[f] === 'number' && !KEY_FIELDS.has(f))
          have[f] = (have[f] as number) + v;
      }
    }
  }
  return [...out.values()];
}
/** Fields that name a row rather than count: never added. */
const KEY_FIELDS = new Set(['input', 'storage']);

/** The worker's source and the loader it runs TypeScript with. */
const WORKER_ENTRY = new URL('./worker.ts', import.meta.url).href;
const TSX_API = import.meta.resolve('tsx/esm/api');
/** Loads TypeScript in the worker (tsx, as bin/sluice.js does), then the worker itself. */
const WORKER_BOOT = `
const { workerData } = require('node:worker_threads');
import(workerData.tsx).then((m) => { m.register(); return import(workerData.entry); });
`;
