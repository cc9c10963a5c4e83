// /metrics of the streams' UDP inputs: what each input's receive sockets counted since the
// server started (src/native/udp.ts keeps it across reopened sockets), by stream and input.
import { Counter, type Registry } from 'prom-client';
import { STREAM_PLACEMENT_SERVICE } from '../drivers/stream/placement.ts';
import { streamRegistry } from '../drivers/stream/registry.ts';
import { type UdpOwner, type UdpTotals, udpOwnerTotals } from '../native/udp.ts';
import type { Services } from '../util/services.ts';

const MARK = 'sluice_stream_input_udp_datagrams_total';
/** Every counter of one scrape reads the same totals (taken once, not once per metric). */
const SNAPSHOT_REUSE_MS = 250;

/** One series per configured input of a running stream; a deleted one goes at the next scrape. */
export function installUdpInputMetrics(registry: Registry, services: Services): void {
  if (registry.getSingleMetric(MARK)) return;
  let taken = -Infinity;
  let rows: (UdpOwner & UdpTotals)[] = [];
  const snapshot = () => {
    const now = performance.now();
    if (now - taken <= SNAPSHOT_REUSE_MS) return rows;
    taken = now;
    const inputs = new Map<string, number>();
    for (const s of streamRegistry(services).all()) inputs.set(s.name, s.inputCount);
    // Streams in stream workers count in their own threads (src/plane/): added here.
    const elsewhere = services.get(STREAM_PLACEMENT_SERVICE)?.udpTotals() ?? [];
    rows = [...udpOwnerTotals((o) => o.input < (inputs.get(o.stream) ?? 0)), ...elsewhere];
    return rows;
  };
  const counter = (name: string, help: string, key: keyof UdpTotals) =>
    new Counter({
      name,
      help,
      labelNames: ['stream', 'input'],
      registers: [registry],
      collect() {
        this.reset();
        for (const r of snapshot()) this.inc({ stream: r.stream, input: String(r.input) }, r[key]);
      },
    });
  counter(MARK, 'Datagrams a UDP input received (every socket it opened)', 'datagrams');
  counter(
    'sluice_stream_input_udp_kernel_drops_total',
    "Datagrams the kernel dropped at a UDP input's full socket buffer (SO_MEMINFO)",
    'drops',
  );
  counter(
    'sluice_stream_input_udp_queue_drops_total',
    "Batches of datagrams shed at a UDP input's receive queue because the event loop fell behind",
    'queueDrops',
  );
  counter(
    'sluice_stream_input_udp_shed_batches_total',
    'Batches of a UDP input dropped while the server shed its whole stream (it could not carry every stream: docs/stream.md, "Under overload")',
    'shedBatches',
  );
  counter(
    'sluice_stream_input_udp_shed_bytes_total',
    'Payload bytes of a UDP input dropped while its whole stream was shed',
    'shedBytes',
  );
  counter(
    'sluice_stream_input_udp_truncated_total',
    "Datagrams longer than a UDP input's largest datagram, cut",
    'truncated',
  );
}
