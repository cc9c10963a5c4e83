// The EPG runtime shared by the EPG drivers, the admin routes and the EPG server: one database
// and one JSON response cache per source, the XMLTV update counter, stream bindings, channel
// sets and EPG logins. Created on first use and kept in Host.services under EPG_SERVICE.
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock, Timer } from '../util/clock.ts';
import { ServiceKey, type Services } from '../util/services.ts';
import type { StreamBinding } from './bindings.ts';
import { EpgDatabase } from './database.ts';
import { languageByCode } from './languages.ts';
import { Lru } from './lru.ts';

export const EPG_SERVICE = new ServiceKey<EpgRuntime>('epg');
/** JSON endpoint cache capacity per source (spec 2). */
export const CHANNEL_CACHE_ENTRIES = 1024;
export const SECONDS_PER_DAY = 86400;
/** Source id of the EIT database. */
export const EIT_SOURCE = 0;

export interface EpgSettings {
  retentionDaysBack: number;
  retentionDaysAhead: number;
  /** ISO 639 code of the system default language. */
  defaultLanguage: string;
}

export const DEFAULT_SETTINGS: EpgSettings = {
  retentionDaysBack: 7,
  retentionDaysAhead: 14,
  defaultLanguage: 'eng',
};

export interface EpgLogin {
  id: number;
  login: string;
  password: string;
  channelSet: number;
  pause: boolean;
  /** Unix seconds; 0 = no limit. */
  limitDay: number;
  limitIp: string;
}

export interface ChannelRef {
  source: number;
  channel: string;
}

/** One source's database and its JSON cache. */
export class SourceStore {
  db: EpgDatabase;
  readonly cache = new Lru<string, string>(CHANNEL_CACHE_ENTRIES);
  /** Successful imports (or EIT batches) since start. */
  updates = 0;

  constructor(
    readonly id: number,
    readonly path: string,
  ) {
    this.db = new EpgDatabase(path);
  }

  /** Replace the database by a finished staging file, atomically (rename over the old one). */
  swapIn(stagingPath: string): void {
    this.db.close();
    for (const ext of ['-wal', '-shm']) rmSync(this.path + ext, { force: true });
    renameSync(stagingPath, this.path);
    this.db = new EpgDatabase(this.path);
    this.cache.clear();
    this.updates++;
  }

  close(): void {
    this.db.close();
  }
}

export interface RuntimeHost {
  log: Logger;
  clock: Clock;
  dataDir: string;
}

export class EpgRuntime {
  settings: EpgSettings = { ...DEFAULT_SETTINGS };
  readonly sources = new Map<number, SourceStore>();
  /** XMLTV update counter: any EPG change bumps it; cached XMLTV bodies carry the value. */
  counter = 1;
  readonly bindings = new Map<string, StreamBinding>();
  readonly logins = new Map<number, EpgLogin>();
  readonly channelSets = new Map<number, { id: number; name: string }>();
  /** Callbacks run when the XMLTV cache must be dropped (POST /xmltv/reset-cache). */
  readonly resetListeners = new Set<() => void>();
  /** Forced-refresh handlers of external sources, by source id. */
  readonly refreshers = new Map<number, () => { queued: boolean; state: string }>();
  /** Status of each source for /data/epg/source. */
  readonly sourceStatus = new Map<number, () => object>();
  /** Extra binding providers (e.g. the running streams' specs), read on every use. */
  readonly bindingProviders = new Set<() => StreamBinding[]>();
  private refs = 0;
  private dayTimer: Timer | undefined;
  readonly dir: string;

  constructor(readonly host: RuntimeHost) {
    this.dir = join(host.dataDir, 'epg');
    mkdirSync(this.dir, { recursive: true });
    this.scheduleDayChange();
  }

  get log(): Logger {
    return this.host.log;
  }

  get clock(): Clock {
    return this.host.clock;
  }

  /** Now in Unix seconds. */
  nowSec(): number {
    return Math.floor(this.host.clock.now() / 1000);
  }

  defaultLanguageId(): number {
    return languageByCode(this.settings.defaultLanguage)?.id ?? 1;
  }

  sourcePath(id: number): string {
    return join(this.dir, `src-${id}.sqlite`);
  }

  /** The store of a source, opening its database file on first use. */
  openSource(id: number): SourceStore {
    let s = this.sources.get(id);
    if (!s) {
      s = new SourceStore(id, this.sourcePath(id));
      this.sources.set(id, s);
    }
    return s;
  }

  source(id: number): SourceStore | undefined {
    return this.sources.get(id);
  }

  closeSource(id: number): void {
    this.sources.get(id)?.close();
    this.sources.delete(id);
    this.refreshers.delete(id);
    this.sourceStatus.delete(id);
    this.bump();
  }

  /** Any EPG change: the XMLTV bodies are rebuilt on their next request. */
  bump(): void {
    this.counter++;
  }

  /** New data in a source: flush its JSON cache and bump the XMLTV counter. */
  sourceChanged(id: number): void {
    this.sources.get(id)?.cache.clear();
    this.bump();
  }

  resetXmltvCache(): void {
    for (const fn of this.resetListeners) fn();
  }

  /** Retention window [from, to) in Unix seconds, whole UTC days. */
  retentionWindow(nowSec = this.nowSec()): { from: number; to: number } {
    const today = Math.floor(nowSec / SECONDS_PER_DAY) * SECONDS_PER_DAY;
    return {
      from: today - this.settings.retentionDaysBack * SECONDS_PER_DAY,
      to: today + (this.settings.retentionDaysAhead + 1) * SECONDS_PER_DAY,
    };
  }

  /** Prune every source to the retention window; a day leaving it flushes the JSON caches. */
  prune(): void {
    const { from, to } = this.retentionWindow();
    for (const s of this.sources.values()) {
      try {
        const n = s.db.prune(from, to);
        if (n > 0) this.log.info({ source: s.id, removed: n }, 'EPG retention pruned events');
      } catch (err) {
        this.log.warn({ source: s.id, err }, 'EPG retention prune failed');
      }
      s.cache.clear();
    }
    this.bump();
  }

  private scheduleDayChange(): void {
    const nowMs = this.host.clock.now();
    const next = (Math.floor(nowMs / 86_400_000) + 1) * 86_400_000;
    this.dayTimer = this.host.clock.setTimeout(() => {
      this.prune();
      this.scheduleDayChange();
    }, next - nowMs);
  }

  setBinding(key: string, binding: StreamBinding | undefined): void {
    if (binding) this.bindings.set(key, binding);
    else this.bindings.delete(key);
    this.bump();
  }

  /** Every stream binding: those set explicitly and those the providers report. */
  allBindings(): StreamBinding[] {
    const out = [...this.bindings.values()];
    const seen = new Set(out.map((b) => b.stream));
    for (const provide of this.bindingProviders) {
      try {
        for (const b of provide()) if (!seen.has(b.stream)) out.push(b);
      } catch (err) {
        this.log.warn({ err }, 'EPG binding provider failed');
      }
    }
    return out;
  }

  bindingForStream(stream: string): StreamBinding | undefined {
    const direct = this.bindings.get(stream);
    if (direct) return direct;
    return this.allBindings().find((b) => b.stream === stream);
  }

  /** Channels of a channel set, one per channel_id (the first source wins, others are warned). */
  channelsOfSet(setId: number): ChannelRef[] {
    const refs: ChannelRef[] = [];
    for (const b of this.allBindings()) {
      if (b.channel && b.channelSets.includes(setId))
        refs.push({ source: b.source, channel: b.channel });
    }
    return this.dedupe(refs);
  }

  /** Every channel of every open database (what an anonymous loopback client sees). */
  allChannels(): ChannelRef[] {
    const refs: ChannelRef[] = [];
    const ids = [...this.sources.keys()].sort((a, b) => a - b);
    for (const id of ids) {
      const s = this.sources.get(id)!;
      try {
        for (const c of s.db.channels()) refs.push({ source: id, channel: c.channel_id });
      } catch (err) {
        this.log.warn({ source: id, err }, 'EPG database read failed');
      }
    }
    return this.dedupe(refs);
  }

  private dedupe(refs: ChannelRef[]): ChannelRef[] {
    const byId = new Map<string, ChannelRef>();
    refs.sort((a, b) => a.source - b.source || a.channel.localeCompare(b.channel));
    for (const r of refs) {
      const first = byId.get(r.channel);
      if (!first) byId.set(r.channel, r);
      else if (first.source !== r.source) {
        this.log.warn(
          { channel: r.channel, used: first.source, skipped: r.source },
          'EPG channel_id comes from several sources; listed once',
        );
      }
    }
    return [...byId.values()];
  }

  acquire(): void {
    this.refs++;
  }

  /** Drop one user; the last one closes the databases and timers. Returns true when closed. */
  release(): boolean {
    this.refs = Math.max(0, this.refs - 1);
    if (this.refs > 0) return false;
    this.dayTimer?.cancel();
    for (const s of this.sources.values()) s.close();
    this.sources.clear();
    return true;
  }
}

/** The runtime of this server, created on first use. Every EPG driver acquires it. */
export function epgRuntime(host: RuntimeHost & { services: Services }): EpgRuntime {
  let rt = host.services.get(EPG_SERVICE);
  if (!rt) {
    rt = new EpgRuntime(host);
    host.services.set(EPG_SERVICE, rt);
  }
  return rt;
}

/** Acquire and return the runtime; pair with releaseEpgRuntime. */
export function acquireEpgRuntime(host: RuntimeHost & { services: Services }): EpgRuntime {
  const rt = epgRuntime(host);
  rt.acquire();
  return rt;
}

export function releaseEpgRuntime(host: { services: Services }, rt: EpgRuntime): void {
  if (rt.release() && host.services.get(EPG_SERVICE) === rt) host.services.delete(EPG_SERVICE);
}
