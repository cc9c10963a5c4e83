// StreamInstance: the stream driver's glue for one stream record. The running part (inputs,
// failover, splicer, outputs, alerts) is the engine's (src/engine/stream.ts); this file reads
// the record into the engine's settings, carries out the reconciler's plan, and wires the
// stream to the HTTP router, HTTP-TS, OTT packaging, the archive and the EPG binding.

import type { Logger } from 'pino';
import type { StreamApplied } from '../../config/spec-types.generated.ts';
import { int } from '../../config/spec-values.ts';
import type { Resource } from '../../config/types.ts';
import { ARCHIVE_LINK_SERVICE, withArchive } from '../../dvr/attach.ts';
import { EIT_SINK_SERVICE, type StreamBus } from '../../engine/bus.ts';
import { CLUSTER_SERVICE } from '../../engine/cluster.ts';
import type { BusHub } from '../../engine/hub.ts';
import { StreamEngine, type StreamSettings, type StreamState } from '../../engine/stream.ts';
import { bindingFromStreamSpec, type StreamBinding } from '../../epg/bindings.ts';
import { INPUT_FACTORIES } from '../../inputs/registry.ts';
import { PRIORITY_1, PRIORITY_2, type Tr101290Counters } from '../../native/ts.ts';
import { streamMemoryBytes } from '../../ott/held-bytes.ts';
import { HttpTsFanout } from '../../ott/http-ts.ts';
import type { OttReply, OttRequest } from '../../ott/request.ts';
import { OTT_ROUTER_SERVICE } from '../../ott/router.ts';
import { OTT_FACTORY_SERVICE, type OttService } from '../../ott/types.ts';
import { OUTPUT_FACTORIES } from '../../outputs/registry.ts';
import type { Host, Instance, ResourceStatus } from '../../reconciler/driver.ts';
import type { FieldChange } from '../../reconciler/types.ts';
import { kbps, type StreamRow } from '../../web/rows.ts';
import { MOSAIC_SERVICE } from '../mosaic.ts';
import { storageById } from '../storage.ts';
import { readUpdate } from './hot.ts';
import { IN_STREAM_WORKER } from './placement.ts';
import { streamRegistry } from './registry.ts';
import { type RunningStream, type StreamMetricsSnapshot, StreamRecordView } from './running.ts';

export type { StreamState };
/** A stream record as the reconciler hands it over: every default applied. */
export type StreamRecord = StreamApplied;
type Rec = Record<string, unknown>;
/** Where a stream's mosaic thumbnail is served, under `/{stream-name}/`. */
export const PREVIEW_PATH = 'preview.jpg';

/** A multiplex stream's BISS targets: biss-pnr and biss-key pairwise (validated: equal
 *  lengths, keys of 12 or 16 hex digits, programme numbers 1..65535). */
function bissTargets(spec: StreamRecord): { pnr: number; key: string }[] {
  if (!spec.mpts) return [];
  const keys = spec['biss-key'] ?? [];
  return (spec['biss-pnr'] ?? []).map((pnr, i) => ({ pnr, key: keys[i] ?? '' }));
}

/** A demuxer's `src` when its multiplex is a tuner adapter's TS (src/inputs/demuxer/). */
const DEMUX_SRC_ADAPTER = 1;
/** A paused stream's message: what is wrong and what to do about it. */
export const PAUSED_MESSAGE = 'paused: set pause to false to start it';

/** The engine's settings from a stream record (µs and s of the config → ms). */
export function engineSettings(spec: StreamRecord): StreamSettings {
  return {
    name: spec['stream-name'],
    order: spec.order,
    inputs: (spec.input ?? []) as unknown as Rec[],
    outputs: (spec.output ?? []) as unknown as Rec[],
    streamTimeoutMs: spec['stream-timeout'] / 1000,
    errorRate: spec['failover-error-rate'],
    errorWindowMs: spec['failover-error-window'] * 1000,
    checkIntervalMs: spec['check-interval'] / 1000,
    fallbackCheck: spec['fallback-check'],
    bitrateMode: spec['bitrate-mode'],
    fixedRateKbps: spec['mpegts-bitrate'],
    epgExport: spec['epg-export'],
    scrambledChannel: spec['scrambled-channel'],
    biss: bissTargets(spec),
    enableAlert: spec['enable-alert'],
    alertDelayMs: spec['alert-delay'] * 1000,
    trace: spec.trace,
    mpegtsTrace: spec['mpegts-trace'],
    streamType: spec['stream-type'],
  };
}

export class StreamInstance
  extends StreamRecordView
  implements Instance<StreamRecord>, RunningStream
{
  readonly engine: StreamEngine;
  readonly httpTs = new HttpTsFanout();
  key: string;
  private spec: StreamRecord;
  private log: Logger;
  private ott: OttService | null = null;
  private unregisterName: (() => void) | null = null;
  private closed = false;
  private message = '';

  constructor(
    res: Resource<StreamRecord>,
    private readonly host: Host,
    /** Why the stream runs on this thread though stream workers are on ('' otherwise). */
    private readonly mainThreadReason = '',
  ) {
    super();
    this.key = res.key;
    this.spec = res.spec;
    this.log = host.log.child({ stream: this.name });
    this.engine = new StreamEngine(engineSettings(this.spec), {
      log: this.log,
      clock: host.clock,
      dataDir: host.dataDir,
      inputFactories: INPUT_FACTORIES,
      outputFactories: OUTPUT_FACTORIES,
      bus: (ref) =>
        ref.kind === 'stream'
          ? host.lookup<StreamInstance>('stream', ref.key)?.hub
          : host.lookup<Instance & { readonly hub?: StreamBus }>('dvb-adapter', ref.key)?.hub,
      eitSink: () => host.services.get(EIT_SINK_SERVICE),
      cluster: () => host.services.get(CLUSTER_SERVICE),
    });
    // In a stream worker HTTP-TS is the main thread's (src/plane/remote-stream.ts).
    if (!host.services.get(IN_STREAM_WORKER)) this.hub.subscribe(this.httpTs);
  }

  /** The stream's output bus (what HTTP-TS, OTT and the outputs read). */
  get hub(): BusHub {
    return this.engine.hub;
  }
  protected record(): StreamRecord {
    return this.spec;
  }

  /** The stream's EPG binding (epg-source, epg-channel, epg-channel-set) from its current
   *  record; the EPG drivers read it through the stream registry. */
  epgBinding(): StreamBinding {
    return bindingFromStreamSpec(this.spec as unknown as Rec);
  }

  state(): StreamState {
    return this.engine.state();
  }

  get running(): boolean {
    return this.engine.running;
  }
  get inputCount(): number {
    return this.engine.settings.inputs.length;
  }
  alertList() {
    return this.engine.alertList();
  }
  reportFault(key: string, present: boolean, message: string): void {
    this.engine.reportFault(key, present, message);
  }
  keyFrame() {
    return this.httpTs.keyFrame();
  }
  /** What the stream's live stores hold (0 without OTT packaging). */
  memoryBytes(): number {
    return streamMemoryBytes(this.host.services, this.name);
  }

  /** Why a stream stopped by `pause` is not running (spec 1's default is paused, so a record
   *  without `"pause": false` comes up this way); '' otherwise. */
  private pausedMessage(): string {
    return this.spec.pause && this.engine.state() === 'paused' ? PAUSED_MESSAGE : '';
  }

  async start(): Promise<void> {
    this.registerName();
    this.applyAll();
    streamRegistry(this.host.services).add(this);
    if (!this.spec.pause) await this.engine.start();
  }

  // ---- HTTP, OTT --------------------------------------------------------------------------

  private registerName(): void {
    const router = this.host.services.get(OTT_ROUTER_SERVICE);
    if (!router || !this.name) return;
    try {
      this.unregisterName = router.register(this.name, (req, reply, rest) =>
        this.handleHttp(req, reply, rest),
      );
    } catch (err) {
      this.message = (err as Error).message;
    }
  }

  private handleHttp(req: OttRequest, reply: OttReply, rest: string): unknown {
    if (rest === 'mpegts') {
      if (this.spec['ott-http'] !== 1) {
        return reply
          .code(404)
          .send({ status: 404, message: `HTTP-TS is off for ${this.name} (ott-http 0)` });
      }
      if (!this.engine.running) {
        // A paused stream sends nothing: say so instead of holding the client open forever.
        return reply.code(503).send({ status: 503, message: `stream ${this.name} is paused` });
      }
      this.httpTs.serve(reply, req.method === 'HEAD');
      return reply;
    }
    if (rest === PREVIEW_PATH) return this.preview(reply);
    if (this.ott) return this.ott.handle(req, reply, rest);
    return reply.code(404).send({ status: 404, message: `no ${rest} for stream ${this.name}` });
  }

  /** The stream's thumbnail in the mosaic (docs/mosaic.md), when it is in it. */
  private mosaicStatus(): { mosaic?: { lastThumbnail: string | null; noSignal: boolean } } {
    const st = this.host.services.get(MOSAIC_SERVICE)?.statusOf(this.name);
    return st ? { mosaic: { lastThumbnail: st.lastThumbnail, noSignal: st.noSignal } } : {};
  }

  /** `GET /{name}/preview.jpg`: the stream's mosaic thumbnail (or its "no signal" card). */
  private async preview(reply: OttReply): Promise<OttReply> {
    const mosaic = this.host.services.get(MOSAIC_SERVICE);
    const jpeg = mosaic ? await mosaic.preview(this.name).catch(() => undefined) : null;
    if (jpeg === undefined) {
      return reply.code(503).send({ status: 503, message: 'the thumbnail could not be made' });
    }
    if (!jpeg) {
      return reply.code(404).send({
        status: 404,
        message: `${this.name} is not in the mosaic (mosaic.enable, enable-mosaic)`,
      });
    }
    return reply.type('image/jpeg').header('Cache-Control', 'no-cache').send(jpeg);
  }

  private syncOtt(): void {
    const want = this.spec['ott-hls'] > 0;
    const factory = this.host.services.get(OTT_FACTORY_SERVICE);
    if (want && factory && !this.ott) {
      const ott = factory({
        name: this.name,
        spec: this.spec as unknown as Rec,
        bus: this.hub,
        clock: this.host.clock,
        log: this.log.child({ ott: true }),
        services: this.host.services,
      });
      // DVR hook (src/dvr/attach.ts): archive playback on the live URLs and the recorder.
      this.ott = withArchive(ott, {
        storage: (id) => storageById(this.host, id),
        services: this.host.services,
        clock: this.host.clock,
        log: this.host.log,
        name: this.name,
        spec: () => this.spec as unknown as Rec,
        state: () => this.engine.state(),
        scrambled: () => this.engine.scrambledPids(),
        // In a stream worker: record through the main thread's storages, which also play the
        // archive back (src/plane/).
        ...this.archiveLink(),
      });
    } else if (!want && this.ott) {
      this.ott.close();
      this.ott = null;
    } else {
      this.ott?.update(this.spec as unknown as Rec);
    }
  }

  private archiveLink() {
    const link = this.host.services.get(ARCHIVE_LINK_SERVICE);
    return link ? { recordTo: link, playback: false } : {};
  }

  /** Settings the stream takes from its record at start and at every whole restart. */
  private applyAll(): void {
    this.engine.applyAlerts();
    if (this.spec['ott-http'] !== 1) this.httpTs.closeAll();
    this.syncOtt();
  }

  // ---- reconciler contract ----------------------------------------------------------------

  /** Carry out what the plan says, and only that: hot fields through their effects
   *  (./hot.ts), restarts scoped to one input or output where the plan scopes them. */
  async update(next: Resource<StreamRecord>, changes: FieldChange[]): Promise<void> {
    const prevName = this.name;
    this.spec = next.spec;
    this.key = next.key;
    this.engine.settings = engineSettings(this.spec);
    const u = readUpdate(changes);
    if (u.unknownHot.length) {
      this.log.warn({ fields: u.unknownHot }, 'hot fields without a setter: restarting the stream');
    }
    if (this.name !== prevName) {
      this.unregisterName?.();
      this.unregisterName = null;
      this.ott?.close();
      this.ott = null;
      this.httpTs.closeAll();
      this.registerName();
      this.log = this.host.log.child({ stream: this.name });
      this.engine.relabel(this.log);
    }
    if (u.whole) this.applyAll();
    else {
      if (u.effects.has('alerts')) this.engine.applyAlerts();
      if (u.effects.has('archive')) this.ott?.update(this.spec as unknown as Rec);
      if (u.effects.has('check-timer')) this.engine.scheduleCheck();
    }
    if (this.spec.pause) {
      await this.engine.stop();
      this.httpTs.closeAll(); // clients get the end of the stream, not a silent connection
      return;
    }
    if (!this.engine.running) return this.engine.start();
    if (u.whole) {
      await this.engine.stop();
      return this.engine.start();
    }
    // An input that cannot move keeps its old listener (engine.restartInput): the others
    // still restart, then the update fails with its words and the reconciler retries it.
    const failed: string[] = [];
    for (const i of u.inputs) {
      await this.engine.restartInput(i).catch((err: Error) => failed.push(err.message));
    }
    for (const j of u.outputs) await this.engine.restartOutput(j);
    if (failed.length) throw new Error(failed.join('; '));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.engine.stop();
    this.unregisterName?.();
    this.unregisterName = null;
    this.ott?.close();
    this.ott = null;
    this.httpTs.closeAll();
    streamRegistry(this.host.services).remove(this);
  }

  /** The figures `/metrics` exports, without the rest of status() (programs, OTT, archive):
   *  a scrape of a hundred streams must not hold the event loop. */
  metricsSnapshot(): StreamMetricsSnapshot {
    return { ...this.engine.metrics(), httpClients: this.httpTs.stats().clients };
  }

  /** The ids of the tuner adapters this stream's inputs read: `dvb` inputs (`adapter-id`) and
   *  demuxers of an adapter's multiplex (`src` 1, `mpts-id`). */
  adapterIds(): number[] {
    const ids = new Set<number>();
    for (const i of this.engine.settings.inputs) {
      if (i['type'] === 'dvb') ids.add(int(i, 'adapter-id', 0));
      else if (i['type'] === 'demuxer' && int(i, 'src', 0) === DEMUX_SRC_ADAPTER) {
        ids.add(int(i, 'mpts-id', 0));
      }
    }
    ids.delete(0);
    return [...ids];
  }

  /** The stream's line on the dashboard (src/web/rows.ts): the metrics' figures, no more. */
  dashboardRow(): StreamRow {
    const m = this.engine.metrics();
    const tr = m.tr101290;
    const sum = (keys: readonly (keyof Tr101290Counters)[]) =>
      tr ? keys.reduce((n, k) => n + tr[k], 0) : 0;
    const message = this.message || this.pausedMessage();
    return {
      key: this.key,
      id: this.id,
      name: this.name,
      title: this.spec['display-name'],
      state: m.state,
      ...(message ? { message } : {}),
      active: m.activeInput,
      inputs: this.engine.settings.inputs.length,
      in: kbps(m.bitrateIn),
      out: kbps(m.bitrateOut),
      p1: sum(PRIORITY_1),
      p2: sum(PRIORITY_2),
      cc: tr?.continuityCountError ?? 0,
      switches: m.switchCount,
      tags: this.spec.tag ?? [],
    };
  }

  status(): ResourceStatus {
    const { state, message, ...engine } = this.engine.status();
    const msg = message ?? (this.message || this.pausedMessage());
    return {
      state,
      ...(msg ? { message: msg } : {}),
      id: this.id,
      name: this.name,
      displayName: this.spec['display-name'],
      ...engine,
      // `enabled`: whether /{name}/mpegts answers (ott-http 1), so the dashboard links it only then.
      httpTs: { enabled: this.spec['ott-http'] === 1, ...this.httpTs.stats() },
      ...(this.ott ? { ott: this.ott.status() } : {}),
      ...this.mosaicStatus(),
      ...(this.mainThreadReason ? { thread: `main (${this.mainThreadReason})` } : {}),
    };
  }
}

export type { StreamMetricsSnapshot };
