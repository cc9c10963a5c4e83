// The stream bus: how a running stream hands its output transport stream to consumers
// (HTTP-TS clients, the OTT packager, the DVR recorder) and its PSI sections to the EPG importer.
import { ServiceKey } from '../util/services.ts';

export interface BusSink {
  /** Aligned TS packets (N × 188 bytes) of the stream's output, in order. The bytes are valid
   *  during the call only (they may be a view of an input's reused receive block): a sink that
   *  keeps them (a socket write queue, a pacing queue) copies first. */
  packets(buf: Buffer): void;
  /** The next packets follow a splice (input switch) or a restart: timestamps may jump. */
  discontinuity?(reason: string): void;
  /** The stream stopped delivering (paused, no signal, closed). */
  end?(): void;
  /** The programme numbers this sink reads, now; absent (or null) = the whole TS. A tuner
   *  adapter sets per-PID demux filters from it (docs/dvb.md, "Demux filters"). */
  programmes?(): readonly number[] | null;
  /** True: this sink takes packets in bursts of up to COARSE_TICK_MS (src/mpegts/pcr-pacer.ts)
   *  as well as evenly spread: it buffers or re-times them itself (HTTP clients, the packager,
   *  an encoder). A stream whose every sink says so lets an input that paces bytes read faster
   *  than real time (a file, HLS segments) wake five times less often. Absent: the sink passes
   *  packets on as they come (a UDP output, another stream reading this one) and wants them
   *  spread as the source's clock says. */
  readonly acceptsBursts?: boolean;
}

export interface StreamBus {
  /** Add a consumer; returns the function that removes it. */
  subscribe(sink: BusSink): () => void;
  /** A tuner adapter's bus: its `mpegts-filter-ca-clear` (the demuxers reading it strip CA
   *  from programmes confirmed clear, docs/multiplex.md). Absent on a stream's bus. */
  readonly filterCaClear?: boolean;
}

/** Service name under which the EPG importer receives EIT/TDT/TOT sections from streams. */
export const EIT_SINK_SERVICE = new ServiceKey<EitSink>('eit-sink');

export interface EitSink {
  /** One complete PSI/SI section (CRC already checked) from a stream with `epg-export`. */
  section(source: { stream: string; pid: number }, data: Buffer): void;
}
