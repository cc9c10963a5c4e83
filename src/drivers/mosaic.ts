// Driver of the `mosaic` settings object (docs/mosaic.md): while `enable` is on, one Mosaic
// (src/ott/mosaic.ts) over the running streams whose `enable-mosaic` is on, shared as the
// `mosaic` service for `GET /data/mosaic.jpg` and each stream's `/{name}/preview.jpg`; its
// counters in /metrics.
import { Counter, type Registry } from 'prom-client';
import type { Resource } from '../config/types.ts';
import { Mosaic, type MosaicSettings, type MosaicSource } from '../ott/mosaic.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import { ServiceKey, type Services } from '../util/services.ts';
import { metricsRegistry } from './stream/metrics.ts';
import { streamRegistry } from './stream/registry.ts';

type Spec = SpecOf<'mosaic'>;

export const MOSAIC_SERVICE = new ServiceKey<Mosaic>('mosaic');
/** ffmpeg children the mosaic runs at once (thumbnails and grid). */
export const MOSAIC_WORKERS = 2;
/** Streams one thumbnail child decodes (its start-up is most of a lone thumbnail's cost). */
export const MOSAIC_BATCH = 10;

export function mosaicSettings(spec: Spec): MosaicSettings {
  return {
    columns: spec.columns,
    thumbnailWidth: spec['thumbnail-width'],
    refreshMs: spec['refresh-sec'] * 1000,
    workers: MOSAIC_WORKERS,
    batch: MOSAIC_BATCH,
  };
}

/** The running streams in the mosaic, in the streams' order. */
export function mosaicSources(services: Services): MosaicSource[] {
  return streamRegistry(services)
    .all()
    .filter((s) => s.inMosaic)
    .map((s) => ({
      name: s.name,
      live: () => s.running && s.state() === 'running',
      keyFrame: () => s.keyFrame(),
    }));
}

const withMetrics = new WeakSet<Registry>();

function ensureMosaicMetrics(services: Services): void {
  const reg = metricsRegistry(services);
  if (withMetrics.has(reg)) return;
  withMetrics.add(reg);
  const counter = (name: string, help: string, pick: (m: Mosaic) => number) =>
    new Counter({
      name,
      help,
      registers: [reg],
      collect() {
        this.reset();
        const m = services.get(MOSAIC_SERVICE);
        if (m) this.inc(pick(m));
      },
    });
  counter('sluice_mosaic_thumbnails_total', 'Mosaic thumbnails decoded', (m) => m.stats.thumbnails);
  counter(
    'sluice_mosaic_thumbnail_failures_total',
    'Mosaic thumbnail decodes that failed',
    (m) => m.stats.failures,
  );
  counter(
    'sluice_mosaic_decoder_cpu_seconds_total',
    'CPU time of the mosaic ffmpeg children (thumbnails, card, grids)',
    (m) => m.stats.cpuSec,
  );
}

class MosaicInstance implements Instance<Spec> {
  private mosaic: Mosaic | null = null;

  constructor(
    private spec: Spec,
    private readonly host: Host,
  ) {
    ensureMosaicMetrics(host.services);
    this.sync();
  }

  private sync(): void {
    if (this.spec.enable && !this.mosaic) {
      this.mosaic = new Mosaic(mosaicSettings(this.spec), {
        clock: this.host.clock,
        log: this.host.log.child({ mosaic: true }),
        streams: () => mosaicSources(this.host.services),
      });
      this.host.services.set(MOSAIC_SERVICE, this.mosaic);
      this.mosaic.start();
    } else if (!this.spec.enable && this.mosaic) {
      this.stop();
    } else {
      this.mosaic?.update(mosaicSettings(this.spec));
    }
  }

  private stop(): void {
    this.mosaic?.close();
    if (this.mosaic && this.host.services.get(MOSAIC_SERVICE) === this.mosaic) {
      this.host.services.delete(MOSAIC_SERVICE);
    }
    this.mosaic = null;
  }

  async update(next: Resource<Spec>): Promise<void> {
    this.spec = next.spec;
    this.sync();
  }

  async close(): Promise<void> {
    this.stop();
  }

  status(): ResourceStatus {
    if (!this.mosaic) return { state: 'running', enabled: false };
    return {
      state: 'running',
      enabled: true,
      ...this.mosaic.stats,
      streams: this.mosaic.status(),
    };
  }
}

export const mosaicDriver: KindDriver<'mosaic'> = {
  kind: 'mosaic',
  async create(res, host) {
    return new MosaicInstance(res.spec, host);
  },
};
