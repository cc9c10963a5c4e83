// Archive sessions: one per client address, stream and window, opened by an archive playlist
// request and kept alive by segment requests. Each holds a protection slot on its storage (spec
// 3: rolling and size cleanup skip it) until it times out or every connection it was seen on closed.
import type { Clock, Timer } from '../util/clock.ts';
import { SESSION_IDLE_MS } from './settings.ts';
import type { ArchiveStorage } from './storage.ts';

/** A connection a session was seen on: once all of them closed, the session ends. */
export interface SessionSocket {
  once(event: 'close', fn: () => void): unknown;
}

interface Session {
  sockets: Set<SessionSocket>;
  storageId: number;
  storage: ArchiveStorage;
  slot: number;
  timer: Timer;
}

export class ArchiveSessions {
  /** Sessions of each client (address and stream), by window: two viewers behind one address
   *  watching different windows hold two sessions, and one leaving never ends the other's. */
  private byClient = new Map<string, Map<string, Session>>();
  /** Storage each client last played from, kept for the idle time even after its connection
   *  closed, so a detach between two requests is told apart from "no archive". */
  private lastStorage = new Map<string, { id: number; at: number }>();

  constructor(
    private clock: Clock,
    private idleMs = SESSION_IDLE_MS,
  ) {}

  get size(): number {
    let n = 0;
    for (const m of this.byClient.values()) n += m.size;
    return n;
  }

  /** The storage the client played from within the idle time, if any. */
  storageOf(key: string): number | undefined {
    for (const s of this.byClient.get(key)?.values() ?? []) return s.storageId;
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

  /** Open (or keep) the client's session for the protected range `w` (`to` may be Infinity:
   *  a window running to now protects what is recorded while it is open). */
  open(
    key: string,
    storageId: number,
    storage: ArchiveStorage,
    stream: string,
    w: { from: number; to: number },
    socket?: SessionSocket,
  ): void {
    this.lastStorage.set(key, { id: storageId, at: this.clock.monotonic() });
    const windowKey = `${storageId}|${w.from}|${w.to}`;
    let sessions = this.byClient.get(key);
    const cur = sessions?.get(windowKey);
    if (cur && cur.storage === storage) {
      this.keep(key, windowKey, cur, socket);
      return;
    }
    if (cur) this.end(key, windowKey);
    const s: Session = {
      sockets: new Set(),
      storageId,
      storage,
      slot: storage.protect(stream, w.from, w.to),
      timer: this.clock.setTimeout(() => this.end(key, windowKey), this.idleMs),
    };
    if (!sessions) {
      sessions = new Map();
      this.byClient.set(key, sessions);
    }
    sessions.set(windowKey, s);
    this.bind(key, windowKey, s, socket);
  }

  /** A segment request: keeps alive the client's sessions seen on its connection, or all of
   *  the client's sessions when the connection is new to them (a player's second connection). */
  touch(key: string, socket?: SessionSocket): void {
    const sessions = this.byClient.get(key);
    if (!sessions) return;
    const last = this.lastStorage.get(key);
    if (last) last.at = this.clock.monotonic();
    const mine = socket ? [...sessions].filter(([, s]) => s.sockets.has(socket)) : [];
    for (const [w, s] of mine.length > 0 ? mine : [...sessions]) this.keep(key, w, s, socket);
  }

  private keep(key: string, windowKey: string, s: Session, socket?: SessionSocket): void {
    this.bind(key, windowKey, s, socket);
    s.timer.cancel();
    s.timer = this.clock.setTimeout(() => this.end(key, windowKey), this.idleMs);
  }

  private bind(key: string, windowKey: string, s: Session, socket?: SessionSocket): void {
    if (!socket || s.sockets.has(socket)) return;
    s.sockets.add(socket);
    socket.once('close', () => {
      s.sockets.delete(socket);
      if (s.sockets.size === 0 && this.byClient.get(key)?.get(windowKey) === s)
        this.end(key, windowKey);
    });
  }

  private end(key: string, windowKey: string): void {
    const sessions = this.byClient.get(key);
    const s = sessions?.get(windowKey);
    if (!sessions || !s) return;
    s.timer.cancel();
    s.storage.release(s.slot);
    sessions.delete(windowKey);
    if (sessions.size === 0) this.byClient.delete(key);
  }

  /** End every session of the client. */
  close(key: string): void {
    for (const w of [...(this.byClient.get(key)?.keys() ?? [])]) this.end(key, w);
  }

  closeAll(): void {
    for (const k of [...this.byClient.keys()]) this.close(k);
  }
}
