// What the rest of the server reads of a running stream (the registry's entries): the same
// whether the stream runs on this thread (./instance.ts) or in a stream worker (src/plane/),
// so the API, metrics, alerter, dashboard and EPG never reach into a stream's engine.

import type { StreamApplied } from '../../config/spec-types.generated.ts';
import type { Alert } from '../../engine/alerts.ts';
import type { StreamBus } from '../../engine/bus.ts';
import type { StreamMetrics, StreamState } from '../../engine/stream.ts';
import type { StreamBinding } from '../../epg/bindings.ts';
import type { ResourceStatus } from '../../reconciler/driver.ts';
import type { StreamRow } from '../../web/rows.ts';

export type StreamMetricsSnapshot = StreamMetrics & { httpClients: number };

export interface RunningStream {
  readonly key: string;
  readonly id: number;
  readonly name: string;
  /** The `display-name` (empty when none). */
  readonly displayName: string;
  readonly order: number;
  /** In the mosaic (`enable-mosaic`). */
  readonly inMosaic: boolean;
  /** `ott-http-trace`: a log line per playback request. */
  readonly httpTrace: boolean;
  /** The engine runs (not paused, not stopped). */
  readonly running: boolean;
  /** How many inputs the stream's record lists. */
  readonly inputCount: number;
  /** The stream's output bus (HTTP-TS, the packager, other streams and the EPG read it). */
  readonly hub: StreamBus;
  epgBinding(): StreamBinding;
  state(): StreamState;
  status(): ResourceStatus;
  dashboardRow(): StreamRow;
  metricsSnapshot(): StreamMetricsSnapshot;
  /** The tuner adapters this stream's inputs read. */
  adapterIds(): number[];
  /** The stream's alerts as the engine holds them (the alerter's rules read them). */
  alertList(): Alert[];
  /** The alerter raises or clears a fault it judged from the figures. */
  reportFault(key: string, present: boolean, message: string): void;
  /** The newest key frame HTTP-TS holds (the mosaic's thumbnails), if any. */
  keyFrame(): { ts: Buffer; count: number } | null;
  /** Bytes of media the stream's live segment stores hold, when known here (a stream worker's
   *  figure comes with its snapshot); undefined: ask the OTT registry. */
  memoryBytes?(): number | undefined;
}

/** The members a stream reads off its record, the same wherever it runs. */
export abstract class StreamRecordView {
  /** The stream's record as the reconciler gave it last. */
  protected abstract record(): StreamApplied;

  get id(): number {
    return this.record().id;
  }
  get name(): string {
    return this.record()['stream-name'];
  }
  /** The `display-name` (empty when none). */
  get displayName(): string {
    return this.record()['display-name'] ?? '';
  }
  get order(): number {
    return this.record().order;
  }
  /** `ott-http-trace`: a log line per playback request. */
  get httpTrace(): boolean {
    return this.record()['ott-http-trace'] === true;
  }
  /** In the mosaic (`enable-mosaic`, read at each refresh). */
  get inMosaic(): boolean {
    return this.record()['enable-mosaic'];
  }
}
