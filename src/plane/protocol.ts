// The messages between the main thread and a stream worker (docs/architecture.md, "Stream
// workers"). Control goes down (create, update, close, a forwarded HTTP request, a bus tap);
// what the main thread shows comes up (snapshots, answers, relayed packets, EIT sections).
// Media crosses only where a reader on the main thread asked for it (a bus tap, an answer).

import type { StreamApplied } from '../config/spec-types.generated.ts';
import type { Resource } from '../config/types.ts';
import type { StreamMetricsSnapshot } from '../drivers/stream/running.ts';
import type { MarkerKind, NewChunk } from '../dvr/index-db.ts';
import type { RecorderTotalsRow } from '../dvr/recorder-totals.ts';
import type { StreamDvrSettings } from '../dvr/settings.ts';
import type { Alert } from '../engine/alerts.ts';
import type { StreamState } from '../engine/stream.ts';
import type { StreamBinding } from '../epg/bindings.ts';
import type { UdpOwner, UdpTotals } from '../native/udp.ts';
import type { ResourceStatus } from '../reconciler/driver.ts';
import type { FieldChange } from '../reconciler/types.ts';
import type { LoopDelayCounts } from '../util/loop-delay-sampler.ts';
import type { StreamRow } from '../web/rows.ts';

/** What a worker is started with (`workerData`). */
export interface WorkerInit {
  index: number;
  dataDir: string;
  logLevel: string;
  /** The OTT cache policy's segment max-age (http-server `segment-cache-max-age`). */
  segmentMaxAge: number;
  /** The ffmpeg binary children run (server `ffmpeg-path`, src/util/ffmpeg.ts). */
  ffmpegPath: string;
  cluster?: { domain: string; nodeName: string };
  /** The main thread's native live engine (LiveDelivery.shareId): streams publish into it. */
  liveShareId?: number;
}

/** A driver error as it crosses: message, retryable, code (src/reconciler/driver.ts). */
export interface WireError {
  message: string;
  retryable?: boolean;
  code?: string;
}

/** The forwarded part of an OTT request (src/ott/request.ts). */
export interface WireRequest {
  method: 'GET' | 'HEAD';
  url: string;
  query: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  ip: string;
  /** The connection it came on (archive sessions and LL-HLS waits key on it). */
  conn: number;
  /** The viewer query a billing verdict gave (src/ott/access.ts, setViewerQuery). */
  viewerQuery?: string;
}

/** What the main thread asks and waits for (a `done` with the same id answers it). */
export type ControlRequest =
  | { t: 'create'; res: Resource<StreamApplied> }
  | { t: 'update'; res: Resource<StreamApplied>; changes: FieldChange[] }
  | { t: 'close'; key: string };

export type ToWorker =
  | (ControlRequest & { id: number })
  | { t: 'fault'; key: string; fault: string; present: boolean; message: string }
  | { t: 'http'; rid: number; name: string; rest: string; req: WireRequest }
  /** The client of a forwarded request went away (or its connection closed). */
  | { t: 'http-close'; rid: number }
  | { t: 'conn-close'; conn: number }
  | { t: 'tap'; key: string; on: boolean }
  | { t: 'cache'; segmentMaxAge: number }
  | { t: 'ffmpeg'; path: string }
  /** The main thread's archive storages as the recorders need them (sent when they change). */
  | { t: 'storages'; list: StorageView[] }
  /** The answer to an `st-ask`: the init row's id (undefined: none). */
  | { t: 'st-answer'; rid: number; initId?: number; error?: string }
  | { t: 'cluster'; cluster?: { domain: string; nodeName: string } };

/** One stream's figures, as the main thread's proxy answers them between snapshots. */
export interface StreamSnapshot {
  key: string;
  state: StreamState;
  running: boolean;
  status: ResourceStatus;
  row: StreamRow;
  metrics: StreamMetricsSnapshot;
  alerts: Alert[];
  epg: StreamBinding;
  adapterIds: number[];
  memoryBytes: number;
  /** Updates of the stream this worker has received: a snapshot with fewer predates the
   *  latest update the main thread sent. */
  updates: number;
}

export type FromWorker =
  | { t: 'ready' }
  /** A request answered; after a create or update, with the stream's snapshot as it is now. */
  | { t: 'done'; id: number; error?: WireError; snap?: StreamSnapshot }
  | {
      t: 'snap';
      streams: StreamSnapshot[];
      /** Once a second (the other snapshots carry a slice of the streams only). */
      loop?: LoopFigures;
      totals?: WorkerTotals;
      /** The loop's delay samples since the last snapshot (the /metrics histogram's). */
      loopDelay?: LoopDelayCounts;
    }
  | { t: 'gone'; key: string }
  | { t: 'route'; name: string; on: boolean }
  | { t: 'head'; rid: number; status: number; headers: Record<string, string | string[]> }
  | { t: 'body'; rid: number; data: ArrayBuffer }
  | { t: 'end'; rid: number; data?: ArrayBuffer }
  | { t: 'bus'; key: string; packets?: ArrayBuffer; discontinuity?: string; end?: boolean }
  | { t: 'eit'; stream: string; pid: number; data: ArrayBuffer }
  /** A recorder's call on its storage (src/dvr/recorder.ts, RecordingTarget). */
  | { t: 'st'; id: number; op: StorageOp }
  /** An init row looked up, or added when `add` is given; answered by `st-answer`. */
  | {
      t: 'st-ask';
      rid: number;
      id: number;
      stream: string;
      track: string;
      hash: string;
      add?: { path: string; layout: string };
    }
  /** The live HLS-TS segment names a worker stream holds now (archive requests for any other
   *  name go to the archive: the live memory comes first). */
  | { t: 'live'; key: string; uris: string[] };

export interface StorageView {
  id: number;
  dir: string;
  writable: boolean;
}

export type StorageOp =
  | { op: 'attach'; stream: string; settings: StreamDvrSettings }
  | { op: 'detach'; stream: string }
  | { op: 'commit'; row: NewChunk }
  | { op: 'mark'; stream: string; kind: MarkerKind; detail: string }
  | { op: 'flush' };

/** The counters a worker's streams grew since the worker started (`/metrics` adds them to the
 *  main thread's own: src/native/udp.ts owners, src/dvr/recorder-totals.ts). */
export interface WorkerTotals {
  udp: (UdpOwner & UdpTotals)[];
  recorded: RecorderTotalsRow[];
}

/** A worker's event loop as it measured it since the last snapshot. */
export interface LoopFigures {
  /** Event-loop delay p99 and max over the interval, ms. */
  p99Ms: number;
  maxMs: number;
  /** CPU of the worker thread over the interval, ms. */
  cpuMs: number;
}
