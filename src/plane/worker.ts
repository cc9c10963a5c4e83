// A stream worker: one event loop of the data plane (docs/architecture.md, "Stream workers").
// It runs whole streams (inputs, failover, splicer, outputs, the OTT packager and its live
// store) with the same code the main thread runs them with, and talks to the main thread only
// through ./protocol.ts: the main thread keeps the config, the reconciler, the API, the HTTP
// listeners and every read model.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { streamDriver } from '../drivers/stream/driver.ts';
import type { StreamInstance } from '../drivers/stream/instance.ts';
import { IN_STREAM_WORKER } from '../drivers/stream/placement.ts';
import { ARCHIVE_LINK_SERVICE } from '../dvr/attach.ts';
import { recorderTotals } from '../dvr/recorder-totals.ts';
import type { StreamBus } from '../engine/bus.ts';
import { EIT_SINK_SERVICE } from '../engine/bus.ts';
import { CLUSTER_SERVICE } from '../engine/cluster.ts';
import { createLogger } from '../log.ts';
import { LiveDelivery } from '../native/live-http.ts';
import { nameThisThread } from '../native/thread.ts';
import { udpOwnerTotals } from '../native/udp.ts';
import { ottCachePolicy } from '../ott/cache-policy.ts';
import { createOttService, OTT_FACTORY_SERVICE } from '../ott/index.ts';
import { LIVE_PUBLISHING_SERVICE } from '../ott/live-publish.ts';
import { OTT_ROUTER_SERVICE, OttRouter } from '../ott/router.ts';
import type { SegmentStore } from '../ott/store.ts';
import { DriverError, type Host } from '../reconciler/driver.ts';
import { systemClock } from '../util/clock.ts';
import { setFfmpegPath } from '../util/ffmpeg.ts';
import { loopDelaySampler } from '../util/loop-delay-sampler.ts';
import { Services } from '../util/services.ts';
import type {
  FromWorker,
  StreamSnapshot,
  ToWorker,
  WireError,
  WorkerInit,
  WorkerTotals,
} from './protocol.ts';
import { StorageLinks } from './storage-link.ts';
import { ownBytes, WireSocket, wireExchange } from './wire-http.ts';

/** Snapshots go up this often (the main thread's status, rows and metrics read them). */
const SNAPSHOT_MS = 1_000;

const port = parentPort;
if (!port) throw new Error('src/plane/worker.ts runs only as a worker thread');
const init = workerData as WorkerInit;
const post = (m: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer ?? []);

nameThisThread(`sluice-js-${init.index}`);
const log = createLogger({ level: init.logLevel }).child({ worker: init.index });
const services = new Services();
const streams = new Map<string, StreamInstance>();
/** Updates received per stream (its snapshots say how many). */
const updates = new WeakMap<StreamInstance, number>();

// OTT names: registered here (the worker's handlers) and announced to the main thread, whose
// router forwards their requests.
class AnnouncingRouter extends OttRouter {
  override register(name: string, handler: Parameters<OttRouter['register']>[1]): () => void {
    const off = super.register(name, handler);
    post({ t: 'route', name, on: true });
    return () => {
      off();
      post({ t: 'route', name, on: false });
    };
  }
}
const router = new AnnouncingRouter();
services.set(IN_STREAM_WORKER, true);
services.set(OTT_ROUTER_SERVICE, router);
// Each stream's live HLS-TS names go up as its store changes, before any playlist naming
// them is answered: the main thread plays the archive and must leave live names to us.
services.set(OTT_FACTORY_SERVICE, (opts) => {
  const svc = createOttService(opts);
  const store = (svc as { packager?: { tsStore?: SegmentStore } }).packager?.tsStore;
  if (store) {
    const send = () => post({ t: 'live', key: opts.name, uris: store.all().map((d) => d.uri) });
    const off = store.onChange(send);
    const close = svc.close.bind(svc);
    svc.close = () => {
      off();
      post({ t: 'live', key: opts.name, uris: [] });
      close();
    };
  }
  return svc;
});
// Recorders write the chunk files here and index them through the main thread's storages.
const storages = new StorageLinks(post);
services.set(ARCHIVE_LINK_SERVICE, storages.get);
ottCachePolicy(services).setSegmentMaxAge(init.segmentMaxAge);
setFfmpegPath(init.ffmpegPath);
if (init.cluster) services.set(CLUSTER_SERVICE, init.cluster);
// Live HLS-TS is published into the main thread's native engine, which answers it with no
// JavaScript on any thread (docs/ott.md, "Native live delivery").
if (init.liveShareId) {
  services.set(
    LIVE_PUBLISHING_SERVICE,
    LiveDelivery.attach(init.liveShareId, {
      onError: (err) => log.warn({ err, part: 'live-delivery' }, 'native live delivery'),
    }),
  );
}
// EIT sections of streams with epg-export go to the main thread's importer.
services.set(EIT_SINK_SERVICE, {
  section(source, data) {
    const copy = ownBytes(data);
    post({ t: 'eit', stream: source.stream, pid: source.pid, data: copy }, [copy]);
  },
});

const host: Host = {
  log,
  clock: systemClock,
  dataDir: init.dataDir,
  services,
  // A stream reads only streams of its own worker (placement keeps dependents together).
  lookup: ((kind: string, key: string) =>
    kind === 'stream' ? streams.get(key) : undefined) as Host['lookup'],
};

function wireError(e: unknown): WireError {
  const err = e as Partial<DriverError> & Error;
  return {
    message: err?.message ?? String(e),
    ...(err instanceof DriverError ? { retryable: err.retryable, code: err.code } : {}),
  };
}

function snapshot(s: StreamInstance): StreamSnapshot {
  return {
    key: s.key,
    state: s.state(),
    running: s.running,
    status: s.status(),
    row: s.dashboardRow(),
    metrics: s.metricsSnapshot(),
    alerts: s.alertList(),
    epg: s.epgBinding(),
    adapterIds: s.adapterIds(),
    memoryBytes: s.memoryBytes(),
    updates: updates.get(s) ?? 0,
  };
}

// ---- the loop's own figures --------------------------------------------------------------
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
let cpuMark = process.cpuUsage();
function loopFigures() {
  const cpu = process.cpuUsage(cpuMark);
  cpuMark = process.cpuUsage();
  const f = {
    p99Ms: delay.count > 0 ? delay.percentile(99) / 1e6 : 0,
    maxMs: delay.count > 0 ? delay.max / 1e6 : 0,
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
  delay.reset();
  return f;
}

function totals(): WorkerTotals {
  const inputs = new Map([...streams.values()].map((s) => [s.name, s.inputCount]));
  return {
    udp: udpOwnerTotals((o) => o.input < (inputs.get(o.stream) ?? 0)),
    recorded: recorderTotals(() => true),
  };
}

/** The loop's delay for /metrics (`sluice_eventloop_delay_seconds{loop="stream-worker-N"}`). */
const delaySamples = loopDelaySampler(`stream-worker-${init.index}`);

/** Snapshots are taken a slice of the streams at a time, SNAPSHOT_SLICES times a second: each
 *  stream's still once a second, but no one task of the loop builds all of them (at 40 streams
 *  one whole round was the loop's longest task, tens of ms). */
const SNAPSHOT_SLICES = 10;
let tick = 0;
let cursor = 0;

function sendSnapshots(): void {
  const all = [...streams.values()];
  const n = Math.ceil(all.length / SNAPSHOT_SLICES);
  const slice: StreamSnapshot[] = [];
  for (let i = 0; i < n && all.length > 0; i++)
    slice.push(snapshot(all[(cursor + i) % all.length]!));
  cursor = all.length > 0 ? (cursor + n) % all.length : 0;
  // The loop's own figures and the counters once a second, with the round's first slice.
  const whole = tick++ % SNAPSHOT_SLICES === 0;
  if (!whole && slice.length === 0) return;
  post({
    t: 'snap',
    streams: slice,
    ...(whole ? { loop: loopFigures(), totals: totals(), loopDelay: delaySamples.take() } : {}),
  });
}
setInterval(sendSnapshots, SNAPSHOT_MS / SNAPSHOT_SLICES);

// ---- forwarded requests -------------------------------------------------------------------
const exchanges = new Map<number, () => void>();
const sockets = new Map<number, WireSocket>();

function socketFor(conn: number, ip: string): WireSocket {
  let s = sockets.get(conn);
  if (!s) {
    s = new WireSocket(ip);
    sockets.set(conn, s);
  }
  return s;
}

function onHttp(m: Extract<ToWorker, { t: 'http' }>): void {
  const handler = router.lookup(m.name);
  const { req, reply, abort } = wireExchange(m.rid, m.req, socketFor(m.req.conn, m.req.ip), post);
  exchanges.set(m.rid, abort);
  (reply.raw as unknown as NodeJS.EventEmitter).once('close', () => exchanges.delete(m.rid));
  if (!handler) {
    reply.code(404).send({ status: 404, message: `No stream ${m.name}` });
    return;
  }
  Promise.resolve()
    .then(() => handler(req, reply, m.rest))
    .catch((err) => {
      log.error({ err, stream: m.name }, 'forwarded request failed');
      if (!reply.raw.headersSent) reply.code(500).send({ status: 500, message: String(err) });
      else abort();
    });
}

// ---- bus taps: the main thread's readers of a worker stream's output --------------------------
/** By stream, not key: a renamed stream keeps its tap, and each message names its key as it
 *  is then (the main thread files the proxy under the new key at the same update). */
const taps = new Map<StreamInstance, () => void>();

function setTap(key: string, on: boolean): void {
  const s = streams.get(key);
  if (!s) return;
  const off = taps.get(s);
  if (!on) {
    off?.();
    taps.delete(s);
    return;
  }
  if (off) return;
  const bus: StreamBus = s.hub;
  taps.set(
    s,
    bus.subscribe({
      acceptsBursts: true,
      packets(buf) {
        const packets = ownBytes(buf);
        post({ t: 'bus', key: s.key, packets }, [packets]);
      },
      discontinuity(reason) {
        post({ t: 'bus', key: s.key, discontinuity: reason });
      },
      end() {
        post({ t: 'bus', key: s.key, end: true });
      },
    }),
  );
}

// ---- control -------------------------------------------------------------------------------
async function onControl(m: ToWorker): Promise<void> {
  switch (m.t) {
    case 'create': {
      try {
        const inst = (await streamDriver.create(m.res, host)) as StreamInstance;
        streams.set(inst.key, inst);
        post({ t: 'done', id: m.id, snap: snapshot(inst) });
      } catch (e) {
        post({ t: 'done', id: m.id, error: wireError(e) });
      }
      return;
    }
    case 'update': {
      const inst =
        streams.get(m.res.key) ?? [...streams.values()].find((s) => s.id === m.res.spec.id);
      if (!inst) {
        post({ t: 'done', id: m.id, error: { message: `no stream ${m.res.key} in this worker` } });
        return;
      }
      updates.set(inst, (updates.get(inst) ?? 0) + 1);
      // Filed under the new key at once: a tap for it may come while the update runs.
      if (m.res.key !== inst.key) {
        streams.delete(inst.key);
        streams.set(m.res.key, inst);
      }
      let error: WireError | undefined;
      try {
        await inst.update(m.res, m.changes);
      } catch (e) {
        error = wireError(e);
      }
      post({ t: 'done', id: m.id, snap: snapshot(inst), ...(error ? { error } : {}) });
      return;
    }
    case 'close': {
      const inst = streams.get(m.key);
      setTap(m.key, false);
      streams.delete(m.key);
      try {
        await inst?.close();
        post({ t: 'done', id: m.id });
      } catch (e) {
        post({ t: 'done', id: m.id, error: wireError(e) });
      }
      post({ t: 'gone', key: m.key });
      return;
    }
    case 'fault':
      streams.get(m.key)?.reportFault(m.fault, m.present, m.message);
      return;
    case 'http':
      onHttp(m);
      return;
    case 'http-close':
      exchanges.get(m.rid)?.();
      exchanges.delete(m.rid);
      return;
    case 'conn-close':
      sockets.get(m.conn)?.emit('close');
      sockets.delete(m.conn);
      return;
    case 'tap':
      setTap(m.key, m.on);
      return;
    case 'cache':
      ottCachePolicy(services).setSegmentMaxAge(m.segmentMaxAge);
      return;
    case 'ffmpeg':
      setFfmpegPath(m.path);
      return;
    case 'storages':
      storages.update(m.list);
      return;
    case 'st-answer':
      storages.answer(m.rid, m.initId, m.error);
      return;
    case 'cluster':
      if (m.cluster) services.set(CLUSTER_SERVICE, m.cluster);
      else services.delete(CLUSTER_SERVICE);
      return;
  }
}

port.on('message', (m: ToWorker) => {
  onControl(m).catch((err) => log.error({ err }, 'stream worker: message failed'));
});
post({ t: 'ready' });
