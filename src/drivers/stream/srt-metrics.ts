// Prometheus metrics of the SRT inputs (docs/transports.md, "SRT"): libsrt's statistics of each
// running stream's `srt` inputs, read from the input status at scrape time, labelled by stream
// and input index. Counters restart with each connection (Prometheus' rate() handles resets).
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Services } from '../../util/services.ts';
import { streamRegistry } from './registry.ts';

type Status = Record<string, unknown>;
interface SrtRow {
  stream: string;
  input: string;
  connected: boolean;
  srt: Record<string, number>;
}

const SNAPSHOT_REUSE_MS = 250;
const MBIT_TO_BYTES = 1e6 / 8;

export function registerSrtMetrics(registers: Registry[], services: Services): void {
  let taken = -Infinity;
  let rows: SrtRow[] = [];
  const snapshot = (): SrtRow[] => {
    const now = performance.now();
    if (now - taken <= SNAPSHOT_REUSE_MS) return rows;
    taken = now;
    rows = [];
    for (const inst of streamRegistry(services).all()) {
      const inputs = (inst.status()['inputs'] as Status[] | undefined) ?? [];
      for (const inp of inputs) {
        const tr = inp['transport'] as Status | undefined;
        if (inp['type'] !== 'srt' || !tr?.['srt']) continue;
        rows.push({
          stream: inst.name,
          input: String(inp['index']),
          connected: tr['connected'] === true,
          srt: tr['srt'] as Record<string, number>,
        });
      }
    }
    return rows;
  };
  const labelNames = ['stream', 'input'];
  const gauge = (name: string, help: string, pick: (r: SrtRow) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const r of snapshot()) {
          const v = pick(r);
          if (v !== undefined) this.set({ stream: r.stream, input: r.input }, v);
        }
      },
    });
  const counter = (name: string, help: string, key: string) =>
    new Counter({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const r of snapshot()) {
          const v = r.srt[key];
          if (typeof v === 'number') this.inc({ stream: r.stream, input: r.input }, v);
        }
      },
    });
  const num = (v: unknown, scale = 1) => (typeof v === 'number' ? v * scale : undefined);
  gauge('sluice_srt_input_connected', 'SRT input connected to its peer (1) or not (0)', (r) =>
    r.connected ? 1 : 0,
  );
  gauge('sluice_srt_input_rtt_seconds', 'SRT round-trip time', (r) => num(r.srt['rttMs'], 1e-3));
  gauge('sluice_srt_input_receive_rate_bytes_per_second', 'SRT receive rate', (r) =>
    num(r.srt['recvRateMbps'], MBIT_TO_BYTES),
  );
  gauge('sluice_srt_input_buffer_seconds', 'Stream time held in the SRT receive buffer', (r) =>
    num(r.srt['bufferMs'], 1e-3),
  );
  gauge('sluice_srt_input_latency_seconds', 'SRT latency negotiated with the peer', (r) =>
    num(r.srt['latencyMs'], 1e-3),
  );
  counter('sluice_srt_input_packets_received_total', 'SRT packets received', 'packetsReceived');
  counter('sluice_srt_input_packets_lost_total', 'SRT packets detected missing', 'packetsLost');
  counter(
    'sluice_srt_input_packets_retransmitted_total',
    'SRT retransmitted packets received',
    'packetsRetransmitted',
  );
  counter(
    'sluice_srt_input_packets_dropped_total',
    'SRT packets given up because their time had come',
    'packetsDropped',
  );
  counter(
    'sluice_srt_input_packets_belated_total',
    'SRT packets that arrived too late and were discarded',
    'packetsBelated',
  );
}
