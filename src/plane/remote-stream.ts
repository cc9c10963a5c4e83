// A stream that runs in a stream worker, as the main thread holds it: the reconciler's
// instance (create, update and close go to the worker) and the registry's RunningStream (its
// figures come from the worker's snapshots). HTTP-TS is served here, from a tap of the
// worker's bus that is open only while a reader on this thread needs it.
import type { StreamApplied } from '../config/spec-types.generated.ts';
import type { Resource } from '../config/types.ts';
import { storageById } from '../drivers/storage.ts';
import { PAUSED_MESSAGE } from '../drivers/stream/instance.ts';
import { streamRegistry } from '../drivers/stream/registry.ts';
import {
  type RunningStream,
  type StreamMetricsSnapshot,
  StreamRecordView,
} from '../drivers/stream/running.ts';
import { epgLookupFrom } from '../dvr/epg.ts';
import { ArchivePlayer } from '../dvr/playback.ts';
import { ArchiveSessions } from '../dvr/sessions.ts';
import type { Alert } from '../engine/alerts.ts';
import type { BusSink, StreamBus } from '../engine/bus.ts';
import type { StreamState } from '../engine/stream.ts';
import { bindingFromStreamSpec, type StreamBinding } from '../epg/bindings.ts';
import { ottCachePolicy } from '../ott/cache-policy.ts';
import { HttpTsFanout } from '../ott/http-ts.ts';
import { readSettings } from '../ott/options.ts';
import type { Packager } from '../ott/packager.ts';
import type { OttReply, OttRequest } from '../ott/request.ts';
import type { Host, Instance, ResourceStatus } from '../reconciler/driver.ts';
import type { FieldChange } from '../reconciler/types.ts';
import type { StreamRow } from '../web/rows.ts';
import type { StreamSnapshot } from './protocol.ts';

/** Truthy for the player's "is it live" test; never sent. */
const LIVE_MARK = Buffer.alloc(0);

/** What the proxy needs of the worker it lives in (./pool.ts). */
export interface WorkerLink {
  readonly index: number;
  request(m: { t: 'update'; res: Resource<StreamApplied>; changes: FieldChange[] }): Promise<void>;
  request(m: { t: 'close'; key: string }): Promise<void>;
  send(m: { t: 'tap'; key: string; on: boolean }): void;
  send(m: { t: 'fault'; key: string; fault: string; present: boolean; message: string }): void;
  /** The stream's key changed (its id or name): filed under the new one. */
  rekey(before: string, s: RemoteStream): void;
}

/** The worker's bus as seen from this thread: packets arrive while someone subscribes. */
class RemoteBus implements StreamBus {
  private sinks = new Set<BusSink>();

  constructor(private readonly tap: (on: boolean) => void) {}

  subscribe(sink: BusSink): () => void {
    this.sinks.add(sink);
    if (this.sinks.size === 1) this.tap(true);
    return () => {
      if (!this.sinks.delete(sink)) return;
      if (this.sinks.size === 0) this.tap(false);
    };
  }

  packets(buf: Buffer): void {
    for (const s of this.sinks) s.packets(buf);
  }
  discontinuity(reason: string): void {
    for (const s of this.sinks) s.discontinuity?.(reason);
  }
  end(): void {
    for (const s of this.sinks) s.end?.();
  }
  /** The worker is gone: readers get the end, the tap is to be opened again by the next. */
  reset(): void {
    this.end();
  }
  get tapped(): boolean {
    return this.sinks.size > 0;
  }
}

export class RemoteStream
  extends StreamRecordView
  implements Instance<StreamApplied>, RunningStream
{
  readonly hub: RemoteBus;
  readonly httpTs = new HttpTsFanout();
  /** The live HLS-TS names the worker's store holds now (its `live` messages). */
  readonly liveUris = new Set<string>();
  private snap?: StreamSnapshot;
  /** Archive playback, here where the index is (made at the first request). */
  private archive?: { player: ArchivePlayer; sessions: ArchiveSessions };
  private offHttpTs?: () => void;
  private closed = false;
  /** Updates sent to the worker that runs the stream now. */
  private updates = 0;

  constructor(
    private res: Resource<StreamApplied>,
    public link: WorkerLink,
    private readonly host: Host,
  ) {
    super();
    this.hub = new RemoteBus((on) => this.link.send({ t: 'tap', key: this.key, on }));
  }

  get key(): string {
    return this.res.key;
  }
  get spec(): StreamApplied {
    return this.res.spec;
  }
  /** The record the stream runs with now (a new worker starts it from this). */
  resource(): Resource<StreamApplied> {
    return this.res;
  }

  /** A snapshot from the worker (one taken before the worker had the latest update is
   *  older than what this proxy shows). */
  take(s: StreamSnapshot): void {
    if (s.updates < this.updates) return;
    this.snap = s;
  }

  /** The worker died and a new one runs the stream: taps open again there. */
  moved(link: WorkerLink): void {
    this.link = link;
    this.snap = undefined;
    this.updates = 0;
    if (this.hub.tapped) link.send({ t: 'tap', key: this.key, on: true });
  }

  // ---- RunningStream -----------------------------------------------------------------------

  protected record(): StreamApplied {
    return this.res.spec;
  }
  get running(): boolean {
    return this.snap?.running ?? !this.spec.pause;
  }
  get inputCount(): number {
    return this.spec.input?.length ?? 0;
  }
  epgBinding(): StreamBinding {
    return this.snap?.epg ?? bindingFromStreamSpec(this.spec as unknown as Record<string, unknown>);
  }
  state(): StreamState {
    return this.snap?.state ?? (this.spec.pause ? 'paused' : 'starting');
  }
  status(): ResourceStatus {
    const thread = `stream worker ${this.link.index}`;
    const http = this.httpTs.stats();
    if (!this.snap) {
      return {
        state: this.state(),
        ...(this.spec.pause ? { message: PAUSED_MESSAGE } : {}),
        id: this.id,
        name: this.name,
        displayName: this.spec['display-name'],
        thread,
      };
    }
    const st = this.snap.status;
    const worker = (st['httpTs'] ?? {}) as Record<string, unknown>;
    return {
      ...st,
      thread,
      httpTs: { ...worker, ...http, enabled: this.spec['ott-http'] === 1 },
    };
  }
  dashboardRow(): StreamRow {
    return (
      this.snap?.row ?? {
        key: this.key,
        id: this.id,
        name: this.name,
        title: this.spec['display-name'],
        state: this.state(),
        active: -1,
        inputs: this.inputCount,
        in: 0,
        out: 0,
        p1: 0,
        p2: 0,
        cc: 0,
        switches: 0,
        tags: this.spec.tag ?? [],
      }
    );
  }
  metricsSnapshot(): StreamMetricsSnapshot {
    const clients = this.httpTs.stats().clients;
    if (this.snap) return { ...this.snap.metrics, httpClients: clients };
    return {
      state: this.state(),
      activeInput: -1,
      bitrateIn: 0,
      bitrateOut: 0,
      bytesIn: 0,
      bytesOut: 0,
      switchCount: 0,
      inputs: [],
      httpClients: clients,
    } as unknown as StreamMetricsSnapshot;
  }
  alertList(): Alert[] {
    return this.snap?.alerts ?? [];
  }
  reportFault(fault: string, present: boolean, message: string): void {
    this.link.send({ t: 'fault', key: this.key, fault, present, message });
  }
  keyFrame() {
    return this.httpTs.keyFrame();
  }
  adapterIds(): number[] {
    return this.snap?.adapterIds ?? [];
  }
  memoryBytes(): number {
    return this.snap?.memoryBytes ?? 0;
  }

  // ---- the archive, played back on this thread -------------------------------------------------

  /** An archive request answered here, as a stream on this thread answers it (with or
   *  without a dvr-storage); undefined: a live one, for the worker. */
  playArchive(req: OttRequest, reply: OttReply, rest: string): unknown {
    this.archive ??= this.makePlayer();
    return this.archive.player.handle(req, reply, rest);
  }

  private makePlayer() {
    const services = this.host.services;
    const sessions = new ArchiveSessions(this.host.clock);
    const live = this.liveUris;
    const spec = () => this.spec as unknown as Record<string, unknown>;
    // What the player reads of the packager: its settings and whether a name is live.
    const packager = {
      get settings() {
        return readSettings(spec());
      },
      tsStore: { get: (uri: string) => (live.has(uri) ? LIVE_MARK : undefined) },
    } as unknown as Packager;
    const player = new ArchivePlayer({
      name: this.name,
      spec,
      state: () => this.state(),
      packager,
      storage: (id) => storageById(this.host, id),
      sessions,
      epg: epgLookupFrom(services),
      clock: this.host.clock,
      log: this.host.log,
      cache: () => ottCachePolicy(services),
    });
    return { player, sessions };
  }

  // ---- HTTP-TS, served on this thread --------------------------------------------------------

  /** `/{name}/mpegts`: as the stream's own handler answers it (src/drivers/stream/instance.ts). */
  serveHttpTs(reply: OttReply, head: boolean): unknown {
    if (this.spec['ott-http'] !== 1) {
      return reply
        .code(404)
        .send({ status: 404, message: `HTTP-TS is off for ${this.name} (ott-http 0)` });
    }
    if (!this.running) {
      return reply.code(503).send({ status: 503, message: `stream ${this.name} is paused` });
    }
    // The tap opens with the first client and closes after the last: with no client, no packet
    // of this stream crosses to this thread.
    this.offHttpTs ??= this.hub.subscribe(this.httpTs);
    this.httpTs.serve(reply, head);
    reply.raw.once('close', () => this.releaseHttpTs());
    return reply;
  }

  private releaseHttpTs(): void {
    if (this.httpTs.stats().clients > 0 || !this.offHttpTs) return;
    this.offHttpTs();
    this.offHttpTs = undefined;
    this.httpTs.end();
  }

  // ---- reconciler contract -----------------------------------------------------------------

  async update(next: Resource<StreamApplied>, changes: FieldChange[]): Promise<void> {
    // A new name ends the old one's HTTP-TS clients, as on the main thread.
    const renamed = next.spec['stream-name'] !== this.name;
    if (this.key !== next.key) {
      // Re-filed under the new key (the old entry would outlive the stream).
      const reg = streamRegistry(this.host.services);
      const before = this.key;
      reg.remove(this);
      this.res = next;
      reg.add(this);
      this.link.rekey(before, this);
    }
    this.res = next;
    if (renamed || next.spec.pause || next.spec['ott-http'] !== 1) this.httpTs.closeAll();
    // A stream on the main thread is paused or starting the moment its update runs: shown so
    // here too while the worker carries it out (a page that reads after the write sees it).
    if (this.snap && this.snap.running === Boolean(next.spec.pause))
      this.snap = pausedOrStarting(this.snap, next.spec.pause);
    this.updates++;
    try {
      await this.link.request({ t: 'update', res: next, changes });
    } catch (err) {
      // One the worker did not take (the stream not there yet, the worker gone) is not counted
      // there: its count is the last snapshot's (one it did take answered with its snapshot).
      this.updates = this.snap?.updates ?? 0;
      throw err;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.archive?.sessions.closeAll();
    this.archive = undefined;
    this.httpTs.closeAll();
    this.offHttpTs?.();
    this.offHttpTs = undefined;
    streamRegistry(this.host.services).remove(this);
    await this.link.request({ t: 'close', key: this.key });
  }
}

/** A snapshot as the stream shows itself at once after a pause (or a resume): its figures
 *  kept, its state and message those of the stream's first moment. */
function pausedOrStarting(s: StreamSnapshot, pause: boolean): StreamSnapshot {
  const state: StreamState = pause ? 'paused' : 'starting';
  const message = pause ? { message: PAUSED_MESSAGE } : {};
  const { message: _s, ...status } = s.status;
  const { message: _r, ...row } = s.row;
  return {
    ...s,
    state,
    running: !pause,
    status: { ...status, state, ...message },
    row: { ...row, state, ...message },
    metrics: { ...s.metrics, state },
  };
}
