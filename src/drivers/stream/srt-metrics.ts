// Prometheus metrics of the SRT and RIST inputs (docs/transports.md, docs/api.md): libsrt's
// statistics of each running stream's `srt` inputs, and both kinds' receive-queue sheds, read
// from the input status at scrape time (so a stream in a worker thread is counted too),
// labelled by stream and input index. libsrt's counters restart with each connection.
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

/** One input's receive-queue counts, carried across the receivers it has had: a receiver
 *  (a restarted input, an SRT caller's new connection) counts from 0, and its count going
 *  down says so; the old one's last reading then stays in `base`. */
interface QueueRow {
  type: 'srt' | 'rist';
  stream: string;
  input: string;
  base: number;
  last: number;
  /** Batches waiting for the event loop now (0 while the input has no receiver). */
  queued: number;
}

const SNAPSHOT_REUSE_MS = 250;
const MBIT_TO_BYTES = 1e6 / 8;

/** The receive-queue figures of one input's transport status, if it is an SRT or RIST one. */
function queueFigures(
  type: unknown,
  tr: Status | undefined,
): { drops: number; queued: number } | undefined {
  const from =
    type === 'srt' ? (tr?.['srt'] as Status | undefined) : type === 'rist' ? tr : undefined;
  if (!from || typeof from['queueDrops'] !== 'number') return undefined;
  return {
    drops: from['queueDrops'],
    queued: typeof from['queued'] === 'number' ? from['queued'] : 0,
  };
}

export function registerSrtMetrics(registers: Registry[], services: Services): void {
  let taken = -Infinity;
  let rows: SrtRow[] = [];
  const queues = new Map<string, QueueRow>();
  const snapshot = (): SrtRow[] => {
    const now = performance.now();
    if (now - taken <= SNAPSHOT_REUSE_MS) return rows;
    taken = now;
    rows = [];
    const inputs = new Set<string>();
    for (const inst of streamRegistry(services).all()) {
      for (const inp of (inst.status()['inputs'] as Status[] | undefined) ?? []) {
        const input = String(inp['index']);
        const tr = inp['transport'] as Status | undefined;
        const key = `${input}\u0000${inst.name}`;
        inputs.add(key);
        carryQueue(key, inst.name, input, inp['type'], tr);
        if (inp['type'] !== 'srt' || !tr?.['srt']) continue;
        rows.push({
          stream: inst.name,
          input,
          connected: tr['connected'] === true,
          srt: tr['srt'] as Record<string, number>,
        });
      }
    }
    // A deleted stream or input loses its series; one between receivers keeps its count.
    for (const key of queues.keys()) if (!inputs.has(key)) queues.delete(key);
    return rows;
  };
  const carryQueue = (key: string, stream: string, input: string, type: unknown, tr?: Status) => {
    let q = queues.get(key);
    if (q && q.type !== type) q = undefined; // the input became another kind: a new count
    const f = queueFigures(type, tr);
    if (!f) {
      if (q) q.queued = 0;
      return;
    }
    if (!q) {
      q = { type: type as QueueRow['type'], stream, input, base: 0, last: 0, queued: 0 };
      queues.set(key, q);
    }
    if (f.drops < q.last) q.base += q.last;
    q.last = f.drops;
    q.queued = f.queued;
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
  for (const type of ['srt', 'rist'] as const) {
    const each = (set: (labels: { stream: string; input: string }, q: QueueRow) => void) => {
      snapshot();
      for (const q of queues.values())
        if (q.type === type) set({ stream: q.stream, input: q.input }, q);
    };
    new Counter({
      name: `sluice_stream_input_${type}_queue_drops_total`,
      help: `Batches shed at a ${type.toUpperCase()} input's receive queue because the event loop fell behind`,
      labelNames,
      registers,
      collect() {
        this.reset();
        each((labels, q) => this.inc(labels, q.base + q.last));
      },
    });
    new Gauge({
      name: `sluice_stream_input_${type}_queued_batches`,
      help: `Batches waiting at a ${type.toUpperCase()} input's receive queue for the event loop`,
      labelNames,
      registers,
      collect() {
        this.reset();
        each((labels, q) => this.set(labels, q.queued));
      },
    });
  }
}
