// /metrics of the archive: what the recorders wrote, dropped and failed per storage and stream
// (counters over every recorder since start: src/dvr/recorder-totals.ts), and how far each
// recording stream's index lags behind the clock, and which path the writes took (O_DIRECT or
// the page cache: process-wide, native/fs/durable_write.cc).
import { Counter, Gauge, type Registry } from 'prom-client';
import { STREAM_PLACEMENT_SERVICE } from '../drivers/stream/placement.ts';
import {
  type RecorderTotals,
  type RecorderTotalsRow,
  recorderTotals,
} from '../dvr/recorder-totals.ts';
import { dvrStorages } from '../dvr/registry.ts';
import { indexLag } from '../dvr/status.ts';
import { writeDurableStats } from '../native/fs.ts';
import type { Clock } from '../util/clock.ts';
import type { Services } from '../util/services.ts';

const MARK = 'sluice_dvr_written_bytes_total';
const SNAPSHOT_REUSE_MS = 250;

/** One series per storage and stream recorded there; a deleted storage's go with it. */
export function installArchiveMetrics(registry: Registry, services: Services, clock: Clock): void {
  if (registry.getSingleMetric(MARK)) return;
  let taken = -Infinity;
  let rows: RecorderTotalsRow[] = [];
  const snapshot = () => {
    const now = performance.now();
    if (now - taken <= SNAPSHOT_REUSE_MS) return rows;
    taken = now;
    const storages = dvrStorages(services);
    // The recorders of streams in stream workers count there (src/plane/): added here.
    const elsewhere = (services.get(STREAM_PLACEMENT_SERVICE)?.recorderTotals() ?? []).filter((r) =>
      storages.has(r.storage),
    );
    rows = [...recorderTotals((id) => storages.has(id)), ...elsewhere];
    return rows;
  };
  const labelNames = ['storage', 'stream'];
  const counter = (name: string, help: string, key: keyof RecorderTotals) =>
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const r of snapshot())
          this.inc({ storage: String(r.storage), stream: r.stream }, r[key]);
      },
    });
  counter(MARK, 'Bytes of chunks a stream wrote into an archive storage', 'bytes');
  counter(
    'sluice_dvr_written_chunks_total',
    'Chunks a stream wrote into an archive storage',
    'chunks',
  );
  counter(
    'sluice_dvr_dropped_chunks_total',
    'Chunks not written: the storage was not writable or the disk was too slow (backlog full)',
    'dropped',
  );
  counter('sluice_dvr_failed_chunks_total', 'Chunks whose write to the storage failed', 'failed');
  new Counter({
    name: 'sluice_dvr_writes_total',
    help: 'Archive file writes by path: direct (O_DIRECT, tail buffered), buffered, fallback (buffered: the filesystem refuses O_DIRECT)',
    labelNames: ['path'],
    registers: [registry],
    collect() {
      const s = writeDurableStats();
      this.reset();
      this.inc({ path: 'direct' }, s.direct);
      this.inc({ path: 'buffered' }, s.buffered - s.fallbacks);
      this.inc({ path: 'fallback' }, s.fallbacks);
    },
  });
  new Gauge({
    name: 'sluice_dvr_index_lag_seconds',
    help: "Seconds from the end of a recording stream's newest indexed chunk to now",
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      const now = clock.now();
      for (const [id, s] of dvrStorages(services)) {
        for (const l of indexLag(s, now))
          this.set({ storage: String(id), stream: l.stream }, l.seconds);
      }
    },
  });
}
