// A stream worker's view of the main thread's archive storages: what a recorder writes through
// (src/dvr/recorder.ts, RecordingTarget). The chunk files are written here, on this thread's
// side of the thread pool; the index rows, markers and attachments go to the storage on the
// main thread, the only writer of its index.
import type { MarkerKind, NewChunk } from '../dvr/index-db.ts';
import type { RecordingTarget } from '../dvr/recorder.ts';
import type { Attachment } from '../dvr/storage.ts';
import type { FromWorker, StorageView } from './protocol.ts';

/** An init lookup the main thread has not answered by then failed (the chunk is counted as
 *  failed and the recorder goes on). */
const ASK_DEADLINE_MS = 10_000;

type Post = (m: FromWorker) => void;

class StorageLink implements RecordingTarget {
  constructor(
    private view: StorageView,
    private readonly links: StorageLinks,
  ) {}

  set(view: StorageView): void {
    this.view = view;
  }
  get id(): number {
    return this.view.id;
  }
  get dir(): string {
    return this.view.dir;
  }
  get writable(): boolean {
    return this.view.writable;
  }
  initId(stream: string, track: string, hash: string): Promise<number | undefined> {
    return this.links.ask(this.id, stream, track, hash);
  }
  async addInit(
    stream: string,
    track: string,
    hash: string,
    path: string,
    layout: string,
  ): Promise<number> {
    const id = await this.links.ask(this.id, stream, track, hash, { path, layout });
    if (id === undefined) throw new Error(`archive storage ${this.id}: init row not added`);
    return id;
  }
  commit(row: NewChunk): void {
    this.links.post({ t: 'st', id: this.id, op: { op: 'commit', row } });
  }
  mark(stream: string, kind: MarkerKind, detail = ''): void {
    this.links.post({ t: 'st', id: this.id, op: { op: 'mark', stream, kind, detail } });
  }
  flush(): void {
    this.links.post({ t: 'st', id: this.id, op: { op: 'flush' } });
  }
  attach(stream: string, a: Attachment): void {
    this.links.post({ t: 'st', id: this.id, op: { op: 'attach', stream, settings: a.settings } });
  }
  detach(stream: string): void {
    this.links.post({ t: 'st', id: this.id, op: { op: 'detach', stream } });
  }
}

export class StorageLinks {
  private byId = new Map<number, StorageLink>();
  private asks = new Map<number, { resolve: (id?: number) => void; reject: (e: Error) => void }>();
  private nextRid = 1;

  constructor(readonly post: Post) {}

  /** The storages as the main thread has them now (a storage gone: its link goes too, and
   *  the recorders bound to it stop at the next binding check). */
  update(list: StorageView[]): void {
    const seen = new Set<number>();
    for (const v of list) {
      seen.add(v.id);
      const l = this.byId.get(v.id);
      if (l) l.set(v);
      else this.byId.set(v.id, new StorageLink(v, this));
    }
    for (const id of this.byId.keys()) if (!seen.has(id)) this.byId.delete(id);
  }

  /** The link of storage `id`, the same object while the storage exists. */
  readonly get = (id: number): RecordingTarget | undefined => this.byId.get(id);

  ask(
    id: number,
    stream: string,
    track: string,
    hash: string,
    add?: { path: string; layout: string },
  ): Promise<number | undefined> {
    const rid = this.nextRid++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.asks.delete(rid);
        reject(new Error(`archive storage ${id}: the main thread did not answer in time`));
      }, ASK_DEADLINE_MS);
      this.asks.set(rid, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.post({ t: 'st-ask', rid, id, stream, track, hash, ...(add ? { add } : {}) });
    });
  }

  answer(rid: number, initId?: number, error?: string): void {
    const a = this.asks.get(rid);
    if (!a) return;
    this.asks.delete(rid);
    if (error) a.reject(new Error(error));
    else a.resolve(initId);
  }
}
