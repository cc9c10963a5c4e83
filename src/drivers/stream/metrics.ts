// Prometheus metrics of the streams (prom-client), computed from the running instances at
// scrape time. The registry lives in host.services 'metrics-registry'; when absent, prom-client's
// default registry is used and put there (the API's /metrics falls back to the same one).
// Names follow Prometheus' conventions (`promtool check metrics` passes, test/api/metrics-
// promtool.test.ts): base units (bytes, seconds), `_total` only on counters.
import { Counter, Gauge, type Registry, register } from 'prom-client';
import type { EncoderMetrics, TransportMetrics } from '../../engine/input.ts';
import { PRIORITY_1, PRIORITY_2 } from '../../native/ts.ts';
import { ensureOcrMetrics } from '../../ott/webvtt/ocr-metrics.ts';
import { ServiceKey, type Services } from '../../util/services.ts';
import type { StreamMetricsSnapshot } from './instance.ts';
import { streamRegistry } from './registry.ts';
import { registerSrtMetrics } from './srt-metrics.ts';

export const METRICS_REGISTRY_SERVICE = new ServiceKey<Registry>('metrics-registry');
const done = new WeakSet<Registry>();

export function metricsRegistry(services: Services): Registry {
  let r = services.get(METRICS_REGISTRY_SERVICE);
  if (!r) {
    r = register;
    services.set(METRICS_REGISTRY_SERVICE, r);
  }
  return r;
}

const BITS_PER_BYTE = 8;
const STATE_VALUES = ['paused', 'starting', 'running', 'no-signal', 'error'] as const;
/** Every collector of one scrape reads the same snapshots (taken once, not once per metric). */
const SNAPSHOT_REUSE_MS = 250;

export function ensureStreamMetrics(services: Services): void {
  const reg = metricsRegistry(services);
  if (done.has(reg)) return;
  done.add(reg);
  let taken = -Infinity;
  let snaps: { name: string; m: StreamMetricsSnapshot }[] = [];
  const streams = () => {
    const now = performance.now();
    if (now - taken > SNAPSHOT_REUSE_MS) {
      snaps = streamRegistry(services)
        .all()
        .map((s) => ({ name: s.name, m: s.metricsSnapshot() }));
      taken = now;
    }
    return snaps;
  };
  const registers = [reg];
  new Gauge({
    name: 'sluice_stream_state',
    help: 'Stream state: 1 for the current state of each stream',
    labelNames: ['stream', 'state'],
    registers,
    collect() {
      this.reset();
      for (const s of streams()) {
        for (const st of STATE_VALUES)
          this.set({ stream: s.name, state: st }, st === s.m.state ? 1 : 0);
      }
    },
  });
  const simple = (name: string, help: string, pick: (m: StreamMetricsSnapshot) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['stream'],
      registers,
      collect() {
        this.reset();
        for (const s of streams()) this.set({ stream: s.name }, pick(s.m));
      },
    });
  // What the stream delivers is a counter (rate() it); the input's transport rate is a gauge
  // because it is the stream's own figure (from its PCR when it has one), not a byte count.
  const total = (name: string, help: string, pick: (m: StreamMetricsSnapshot) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['stream'],
      registers,
      collect() {
        this.reset();
        for (const s of streams()) this.inc({ stream: s.name }, pick(s.m));
      },
    });
  total(
    'sluice_stream_input_bytes_total',
    'Bytes of transport stream the stream received on its inputs (backups being probed included)',
    (m) => m.bytesIn,
  );
  total(
    'sluice_stream_output_bytes_total',
    'Bytes of transport stream the stream delivered to its consumers',
    (m) => m.bytesOut,
  );
  simple(
    'sluice_stream_input_rate_bytes_per_second',
    'Transport rate of the active input in bytes per second (from PCR when present, else arrival)',
    (m) => m.bitrateIn / BITS_PER_BYTE,
  );
  simple('sluice_stream_active_input', 'Index of the active input (-1 none)', (m) => m.activeInput);
  // A `_total` name is a counter in Prometheus' conventions (rate() and promtool expect it).
  new Counter({
    name: 'sluice_stream_switches_total',
    help: 'Input switches since the stream started',
    labelNames: ['stream'],
    registers,
    collect() {
      this.reset();
      for (const s of streams()) this.inc({ stream: s.name }, s.m.switchCount);
    },
  });
  simple('sluice_stream_http_clients', 'HTTP-TS clients connected', (m) => m.httpClients);
  // Recovering transports (RIST, SRT): packet counters by kind, and the RTT — of the active
  // input, and of each output that has one (labelled with its position in the record).
  type Link = { labels: Record<string, number>; tm: TransportMetrics };
  const links = (
    side: 'input' | 'output',
    whose: string,
    rows: (m: StreamMetricsSnapshot) => Link[],
  ) => {
    const labelNames = ['stream', ...(side === 'output' ? ['output'] : []), 'protocol'];
    new Counter({
      name: `sluice_stream_${side}_transport_packets_total`,
      help: `Packets of ${whose} recovering transport (RIST, SRT) since it opened, by kind (received, missing, recovered, lost, sent, retransmitted, …)`,
      labelNames: [...labelNames, 'kind'],
      registers,
      collect() {
        this.reset();
        for (const s of streams()) {
          for (const { labels, tm } of rows(s.m)) {
            for (const [kind, n] of Object.entries(tm.packets))
              this.inc({ stream: s.name, ...labels, protocol: tm.protocol, kind }, n);
          }
        }
      },
    });
    new Gauge({
      name: `sluice_stream_${side}_transport_rtt_seconds`,
      help: `Round-trip time of ${whose} recovering transport (RIST, SRT; for several SRT callers the slowest)`,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const s of streams()) {
          for (const { labels, tm } of rows(s.m))
            this.set({ stream: s.name, ...labels, protocol: tm.protocol }, tm.rttSeconds);
        }
      },
    });
  };
  links('input', "the active input's", (m) =>
    m.transport ? [{ labels: {}, tm: m.transport }] : [],
  );
  links('output', "an output's", (m) =>
    m.outputTransports.map(({ output, ...tm }) => ({ labels: { output }, tm })),
  );
  // The encoder of a transcoder input (the active input): its last progress report.
  const encoder = (name: string, help: string, pick: (e: EncoderMetrics) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['stream'],
      registers,
      collect() {
        this.reset();
        for (const s of streams()) if (s.m.encoder) this.set({ stream: s.name }, pick(s.m.encoder));
      },
    });
  encoder(
    'sluice_stream_encoder_fps',
    "Frames per second the active input's encoder makes",
    (e) => e.fps,
  );
  encoder(
    'sluice_stream_encoder_speed_ratio',
    'Encoding speed against real time (1 = real time)',
    (e) => e.speed,
  );
  encoder(
    'sluice_stream_encoder_output_rate_bytes_per_second',
    'Output rate the encoder reports, bytes per second',
    (e) => e.bitrate / BITS_PER_BYTE,
  );
  encoder(
    'sluice_stream_encoder_frames',
    'Frames encoded by the current encoder run',
    (e) => e.frames,
  );
  encoder(
    'sluice_stream_encoder_dropped_frames',
    'Frames the current encoder run dropped',
    (e) => e.droppedFrames,
  );
  encoder(
    'sluice_stream_encoder_duplicated_frames',
    'Frames the current encoder run duplicated',
    (e) => e.duplicatedFrames,
  );
  encoder(
    'sluice_stream_encoder_restarts',
    'Times the encoder was restarted since the input opened',
    (e) => e.restarts,
  );
  new Gauge({
    name: 'sluice_stream_tr101290_errors',
    help: 'TR 101 290 indicator counts on the active input since it was opened',
    labelNames: ['stream', 'indicator', 'priority'],
    registers,
    collect() {
      this.reset();
      for (const s of streams()) {
        const tr = s.m.tr101290;
        if (!tr) continue;
        for (const k of PRIORITY_1)
          this.set({ stream: s.name, indicator: k, priority: '1' }, tr[k] ?? 0);
        for (const k of PRIORITY_2)
          this.set({ stream: s.name, indicator: k, priority: '2' }, tr[k] ?? 0);
      }
    },
  });
  registerSrtMetrics(registers, services);
  // The OCR of DVB subtitles (a server-wide tesseract runner the streams' packagers share).
  ensureOcrMetrics(reg);
}
