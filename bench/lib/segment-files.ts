// A segment store's output written as files, as a file-based segmenter leaves it: each
// segment (and a new init) once, when it is committed, and a playlist rewritten after each.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SegmentStore } from '../../src/ott/store.ts';

export class SegmentFiles {
  private lastSeq = -1;
  private initUri = '';

  /** Files go to `dir`, named `prefix` + the store's URI; `playlist` (when given) is written
   *  to `<prefix>index.m3u8` after each new segment. */
  constructor(
    private readonly store: SegmentStore,
    private readonly dir: string,
    private readonly prefix: string,
    private readonly playlist?: () => string,
  ) {}

  /** Write what the store committed since the last call. */
  sync(): void {
    const last = this.store.last();
    if (!last || last.seq <= this.lastSeq) return;
    if (this.store.init && this.store.initUri !== this.initUri) {
      this.initUri = this.store.initUri;
      writeFileSync(join(this.dir, this.prefix + this.initUri), this.store.init);
    }
    for (const seg of this.store.all()) {
      if (seg.seq <= this.lastSeq) continue;
      const data = this.store.get(seg.uri);
      if (data) writeFileSync(join(this.dir, this.prefix + seg.uri), data);
      this.lastSeq = seg.seq;
    }
    if (this.playlist) writeFileSync(join(this.dir, `${this.prefix}index.m3u8`), this.playlist());
  }
}
