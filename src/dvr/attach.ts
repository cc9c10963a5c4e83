// The DVR hook of a stream: wraps the stream's OTT service so that archive requests (t, epg,
// utc, catch-up alias paths, archived chunks) are answered from the archive, and attaches a
// recorder to the packager while the stream's `dvr-storage` names a running storage.

import type { Logger } from 'pino';
import { OTT_ACCESS_SERVICE } from '../ott/access.ts';
import { ottCachePolicy } from '../ott/cache-policy.ts';
import type { Packager } from '../ott/packager.ts';
import type { OttReply, OttRequest } from '../ott/request.ts';
import type { OttService } from '../ott/types.ts';
import type { Clock, Timer } from '../util/clock.ts';
import { ServiceKey, type Services } from '../util/services.ts';
import { epgLookupFrom } from './epg.ts';
import { ArchivePlayer, archiveClientKey } from './playback.ts';
import { type RecordingTarget, StreamRecorder } from './recorder.ts';
import { ArchiveSessions } from './sessions.ts';
import { readStreamDvr } from './settings.ts';
import type { ArchiveStorage } from './storage.ts';

/** How often the binding is re-checked (a storage created, replaced or gone). */
const SYNC_MS = 1_000;

export interface ArchiveHookOptions {
  /** The running storage with this id, if any (the storage driver's instance). */
  storage: (id: number) => ArchiveStorage | undefined;
  /** The server's shared services (the EPG lookup, the OTT cache policy). */
  services: Services;
  clock: Clock;
  log: Logger;
  name: string;
  spec: () => Record<string, unknown>;
  state: () => string;
  /** PIDs the active input delivers scrambled (from its analyzer); feeds `scrambling` markers. */
  scrambled?: () => number[];
  /** Where the recorder writes, when not to `storage` itself: in a stream worker, the link to
   *  the main thread's storage (src/plane/storage-link.ts). */
  recordTo?: (id: number) => RecordingTarget | undefined;
  /** Archive requests are answered here (default); false: by the main thread, which holds
   *  the index (a stream worker's stream: src/plane/). */
  playback?: boolean;
}

/** In host.services of a stream worker: where its streams record (the main thread's
 *  storages, through messages) and that their archive is played back there. */
export const ARCHIVE_LINK_SERVICE = new ServiceKey<(id: number) => RecordingTarget | undefined>(
  'archive-link',
);

export class ArchivedOttService implements OttService {
  readonly player: ArchivePlayer;
  readonly sessions: ArchiveSessions;
  recorder?: StreamRecorder;
  private packager?: Packager;
  private timer: Timer;
  private closed = false;
  /** Whether the stream was Running at the last sync (source start/stop markers). */
  private wasRunning?: boolean;
  private offViewers?: () => void;

  constructor(
    readonly inner: OttService,
    private o: ArchiveHookOptions,
  ) {
    this.packager = (inner as { packager?: Packager }).packager;
    this.sessions = new ArchiveSessions(o.clock);
    this.player = new ArchivePlayer({
      name: o.name,
      spec: o.spec,
      state: o.state,
      packager: this.packager,
      storage: o.storage,
      sessions: this.sessions,
      epg: epgLookupFrom(o.services),
      clock: o.clock,
      log: o.log,
      cache: () => ottCachePolicy(o.services),
    });
    this.timer = o.clock.setInterval(() => this.sync(), SYNC_MS);
    // Behind viewer authorisation an archive session lives as long as its viewer session
    // (spec 3's protection slot; docs/billing.md): the end of one ends the other.
    this.offViewers = o.services.get(OTT_ACCESS_SERVICE)?.onSessionEnd((stream, ip) => {
      if (stream === o.name) this.sessions.close(archiveClientKey(ip, stream));
    });
    this.sync();
  }

  handle(req: OttRequest, reply: OttReply, rest: string): unknown {
    const answered = this.o.playback === false ? undefined : this.player.handle(req, reply, rest);
    if (answered !== undefined) return answered;
    return this.inner.handle(req, reply, rest);
  }

  update(spec: Record<string, unknown>): void {
    this.inner.update(spec);
    this.sync();
  }

  /** Attach, move or detach the recorder to match `dvr-storage` (spec 3 binding rules). */
  sync(): void {
    if (this.closed || !this.packager) return;
    const settings = readStreamDvr(this.o.spec());
    const storage = this.o.recordTo
      ? this.o.recordTo(settings.storage)
      : this.o.storage(settings.storage);
    const cur = this.recorder;
    const state = this.o.state();
    const running = state === 'running';
    const changed = this.wasRunning !== undefined && running !== this.wasRunning;
    this.wasRunning = running;
    if (cur && cur.storage === storage) {
      storage.attach(this.o.name, this.attachment(settings));
      if (this.o.scrambled) cur.scrambling(this.o.scrambled());
      // A paused or failed stream keeps its recorder: the marker shows where the source went.
      if (changed)
        storage.mark(
          this.o.name,
          running ? 'source-start' : 'source-stop',
          running ? 'stream running' : `stream ${state}`,
        );
      return;
    }
    if (cur) {
      this.recorder = undefined;
      cur.storage.detach(this.o.name);
      void cur.close();
    }
    if (!storage) return;
    storage.attach(this.o.name, this.attachment(settings));
    this.recorder = new StreamRecorder(this.o.name, this.packager, storage, this.o.log);
  }

  private attachment(settings: ReturnType<typeof readStreamDvr>) {
    return { settings, active: () => this.o.state() === 'running' };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.timer.cancel();
    this.offViewers?.();
    this.sessions.closeAll();
    const r = this.recorder;
    this.recorder = undefined;
    if (r) {
      r.storage.detach(this.o.name);
      void r.close();
    }
    this.inner.close();
  }

  status(): Record<string, unknown> {
    const r = this.recorder;
    return {
      ...this.inner.status(),
      dvr: r
        ? {
            storage: readStreamDvr(this.o.spec()).storage,
            recording: r.storage.writable,
            ...r.stats,
          }
        : { storage: 0, recording: false },
    };
  }
}

/** Wrap a stream's OTT service with archive recording and playback. */
export function withArchive(inner: OttService, o: ArchiveHookOptions): OttService {
  return new ArchivedOttService(inner, o);
}
