// Driver of the `server` settings object: of its members only `ffmpeg-path` is acted on (the
// binary every ffmpeg child runs, src/util/ffmpeg.ts); the others are listed as not used yet.
import type { Resource } from '../config/types.ts';
import type { Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import { DEFAULT_FFMPEG_PATH, ffmpegPath, setFfmpegPath } from '../util/ffmpeg.ts';

type Spec = SpecOf<'server'>;

class ServerInstance implements Instance<Spec> {
  constructor(spec: Spec) {
    setFfmpegPath(spec['ffmpeg-path']);
  }

  async update(next: Resource<Spec>): Promise<void> {
    setFfmpegPath(next.spec['ffmpeg-path']);
  }

  async close(): Promise<void> {
    setFfmpegPath(DEFAULT_FFMPEG_PATH);
  }

  status(): ResourceStatus {
    return { state: 'running', ffmpegPath: ffmpegPath() };
  }
}

export const serverDriver: KindDriver<'server'> = {
  kind: 'server',
  async create(res) {
    return new ServerInstance(res.spec);
  },
};
