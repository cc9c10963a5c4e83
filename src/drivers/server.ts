// Driver of the `server` settings object: `ffmpeg-path` (the binary every ffmpeg child runs,
// src/util/ffmpeg.ts) and `stream-workers` (the data plane's worker threads, src/plane/) are
// acted on; the others are listed as not used yet.
import type { Resource } from '../config/types.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import { DEFAULT_FFMPEG_PATH, ffmpegPath, setFfmpegPath } from '../util/ffmpeg.ts';
import { STREAM_PLACEMENT_SERVICE } from './stream/placement.ts';

type Spec = SpecOf<'server'>;

class ServerInstance implements Instance<Spec> {
  private workers = 0;

  constructor(
    spec: Spec,
    private readonly host: Host,
  ) {
    this.apply(spec);
  }

  private apply(spec: Spec): void {
    setFfmpegPath(spec['ffmpeg-path']);
    this.workers = spec['stream-workers'];
    this.host.services.get(STREAM_PLACEMENT_SERVICE)?.setWorkers(this.workers);
  }

  async update(next: Resource<Spec>): Promise<void> {
    this.apply(next.spec);
  }

  async close(): Promise<void> {
    setFfmpegPath(DEFAULT_FFMPEG_PATH);
    this.host.services.get(STREAM_PLACEMENT_SERVICE)?.setWorkers(0);
  }

  status(): ResourceStatus {
    const placement = this.host.services.get(STREAM_PLACEMENT_SERVICE);
    return {
      state: 'running',
      ffmpegPath: ffmpegPath(),
      streamWorkers: this.workers,
      ...(this.workers > 0 && placement ? { workers: placement.workers() } : {}),
    };
  }
}

export const serverDriver: KindDriver<'server'> = {
  kind: 'server',
  async create(res, host) {
    return new ServerInstance(res.spec, host);
  },
};
