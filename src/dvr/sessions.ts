// Archive sessions: one per client address and stream, opened by an archive playlist request
// and kept alive by its segment requests. Each holds a protection slot on its storage (spec 3:
// rolling and size cleanup skip the window) until it times out or its connection closes.
import type { Clock, Timer } from '../util/clock.ts';
import { SESSION_IDLE_MS } from './settings.ts';
import type { ArchiveStorage } from './storage.ts';

/** The connection a session was last seen on: its close ends the session. */
export interface SessionSocket {
  once(event: 'close', fn: () => void): unknown;
}

interface Session {
  socket?: SessionSocket;
  storageId: number;
  storage: ArchiveStorage;
  slot: number;
  from: number;
  to: number;
  timer: Timer;
}

export class ArchiveSessions {
  private byKey = new Map<string, Session>();
  /** Storage each client last played from, kept for the idle time even after its connection
   *  closed, so a detach between two requests is told apart from "no archive". */
  private lastStorage = new Map<string, { id: number; at: number }>();

  constructor(
    private clock: Clock,
    private idleMs = SESSION_IDLE_MS,
  ) {}

  get size(): number {
    return this.byKey.size;
  }

  /** The storage the client played from within the idle time, if any. */
  storageOf(key: string): number | undefined {
    const open = this.byKey.get(key)?.storageId;
    if (open !== undefined) return open;
    const last = this.lastStorage.get(key);
    if (last && this.clock.monotonic() - last.at < this.idleMs) return last.id;
    this.lastStorage.delete(key);
    return undefined;
  }

  /** Forget the client's last storage (after telling it about the detach). */
  forget(key: string): void {
    this.lastStorage.delete(key);
    this.close(key);
  }

  open(
    key: string,
    storageId: number,
    storage: ArchiveStorage,
    stream: string,
    w: { from: number; to: number },
    socket?: SessionSocket,
  ): void {
    const { from, to } = w;
    this.lastStorage.set(key, { id: storageId, at: this.clock.monotonic() });
    const cur = this.byKey.get(key);
    if (cur && cur.storage === storage && cur.from === from && cur.to === to) {
      this.touch(key, socket);
      return;
    }
    this.close(key);
    const s: Session = {
      storageId,
      storage,
      slot: storage.protect(stream, from, to),
      from,
      to,
      timer: this.clock.setTimeout(() => this.close(key), this.idleMs),
    };
    this.byKey.set(key, s);
    this.bind(key, s, socket);
  }

  touch(key: string, socket?: SessionSocket): void {
    const s = this.byKey.get(key);
    if (!s) return;
    this.bind(key, s, socket);
    const last = this.lastStorage.get(key);
    if (last) last.at = this.clock.monotonic();
    s.timer.cancel();
    s.timer = this.clock.setTimeout(() => this.close(key), this.idleMs);
  }

  private bind(key: string, s: Session, socket?: SessionSocket): void {
    if (!socket || s.socket === socket) return;
    s.socket = socket;
    socket.once('close', () => {
      if (this.byKey.get(key) === s && s.socket === socket) this.close(key);
    });
  }

  close(key: string): void {
    const s = this.byKey.get(key);
    if (!s) return;
    s.timer.cancel();
    s.storage.release(s.slot);
    this.byKey.delete(key);
  }

  closeAll(): void {
    for (const k of [...this.byKey.keys()]) this.close(k);
  }
}
