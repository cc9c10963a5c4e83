// EIT → src-0 database: the EIT sink that streams with `epg-export` feed. Skips sections whose
// version was already seen, maps services to channel ids, takes time zones from the TOT, and
// after a quiet moment flushes the src-0 JSON cache and bumps the XMLTV counter.
import type { EitSink } from '../engine/bus.ts';
import { EIT_PF_OTHER_TABLE_ID, TOT_TABLE_ID } from '../mpegts/psi.ts';
import type { Timer } from '../util/clock.ts';
import { type EitSection, isEitTable, parseEitSection } from './eit.ts';
import { languageId } from './languages.ts';
import { EIT_SOURCE, type EpgRuntime } from './runtime.ts';
import { parseTimeSection } from './tot.ts';

/** New events are published (cache flush, counter bump) this long after the last change. */
export const EIT_PUBLISH_DELAY_MS = 1000;

export interface EitStats {
  sections: number;
  unchanged: number;
  events: number;
  errors: number;
  lastError?: string;
}

/** channel_id of a DVB service: `<original_network_id>.<transport_stream_id>.<service_id>`. */
export function serviceChannelId(onid: number, tsid: number, sid: number): string {
  return `${onid}.${tsid}.${sid}`;
}

export class EitImporter implements EitSink {
  readonly stats: EitStats = { sections: 0, unchanged: 0, events: 0, errors: 0 };
  private versions = new Map<string, number>();
  /** Event ids the last version of each schedule section carried (key as `versions`). */
  private sectionEvents = new Map<string, number[]>();
  /** The EIT-actual service a bound single-programme stream is locked to. */
  private lockedService = new Map<string, number>();
  /** Latest TOT offset per stream, and the channels seen on each stream. */
  private streamTz = new Map<string, number>();
  private streamChannels = new Map<string, Set<string>>();
  private publishTimer: Timer | undefined;

  constructor(private rt: EpgRuntime) {}

  section(source: { stream: string; pid: number }, data: Buffer): void {
    const tableId = data[0];
    if (tableId === undefined) return;
    try {
      if (isEitTable(tableId)) this.eit(source.stream, parseEitSection(data));
      else if (tableId === TOT_TABLE_ID) this.tot(source.stream, data);
    } catch (err) {
      this.stats.errors++;
      this.stats.lastError = (err as Error).message;
    }
  }

  private channelFor(stream: string, sec: EitSection): string {
    const b = this.rt.bindingForStream(stream);
    if (b && b.source === EIT_SOURCE && b.channel && !b.mpts && sec.actual) {
      const locked = this.lockedService.get(stream);
      if (locked === undefined) this.lockedService.set(stream, sec.serviceId);
      if (locked === undefined || locked === sec.serviceId) return b.channel;
    }
    return serviceChannelId(sec.onid, sec.tsid, sec.serviceId);
  }

  private eit(stream: string, sec: EitSection): void {
    if (!sec.currentNext) return;
    this.stats.sections++;
    const key = `${stream}|${sec.tableId}|${sec.onid}|${sec.tsid}|${sec.serviceId}|${sec.sectionNumber}`;
    if (this.versions.get(key) === sec.version) {
      this.stats.unchanged++;
      return;
    }
    this.versions.set(key, sec.version);
    const channel = this.channelFor(stream, sec);
    let seen = this.streamChannels.get(stream);
    if (!seen) {
      seen = new Set();
      this.streamChannels.set(stream, seen);
    }
    const store = this.rt.openSource(EIT_SOURCE);
    const { from, to } = this.rt.retentionWindow();
    let changed = 0;
    // A schedule section's new version is the whole truth about its events: one it no longer
    // carries was cancelled or moved (a moved one comes back from its new section). Events
    // that have ended stay (broadcasters drop the past from the schedule). p/f sections are
    // exempt: their roll-over drops the event that just ended, which is history, not a cancel.
    const schedule = sec.tableId > EIT_PF_OTHER_TABLE_ID;
    const carried = sec.events.map((e) => e.eventId);
    const dropped = schedule
      ? (this.sectionEvents.get(key) ?? []).filter((id) => !carried.includes(id))
      : [];
    if (schedule) this.sectionEvents.set(key, carried);
    const now = this.rt.nowSec();
    store.db.transaction(() => {
      for (const id of dropped) changed += store.db.removeUnendedEitEvent(channel, id, now);
      if (!seen.has(channel)) {
        seen.add(channel);
        const existing = store.db.channel(channel);
        store.db.upsertChannel(channel, this.streamTz.get(stream) ?? existing?.time_zone ?? 0);
      }
      for (const ev of sec.events) {
        if (ev.start === undefined || ev.duration === undefined || ev.duration === 0) continue;
        const stop = ev.start + ev.duration;
        if (stop < from || ev.start >= to) continue;
        store.db.removeReplacedEvents(channel, ev.eventId, ev.start, stop);
        const texts = ev.texts.map((t) => ({
          lang: languageId(t.lang),
          title: t.title,
          desc: t.desc,
        }));
        const ratings = ev.ratings.map((r) => ({
          system: `DVB:${r.country}`,
          value: String(r.age),
        }));
        store.db.addEvent(channel, ev.start, stop, texts, ratings, ev.eventId);
        changed++;
      }
    });
    if (changed > 0) {
      this.stats.events += changed;
      this.schedulePublish();
    }
  }

  private tot(stream: string, data: Buffer): void {
    const t = parseTimeSection(data);
    const first = t.offsets[0];
    if (!first || this.streamTz.get(stream) === first.offset) return;
    this.streamTz.set(stream, first.offset);
    const store = this.rt.openSource(EIT_SOURCE);
    for (const ch of this.streamChannels.get(stream) ?? []) {
      store.db.setChannelTimeZone(ch, first.offset);
    }
    this.schedulePublish();
  }

  private schedulePublish(): void {
    if (this.publishTimer) return;
    this.publishTimer = this.rt.clock.setTimeout(() => this.publish(), EIT_PUBLISH_DELAY_MS);
  }

  /** Make new events visible now: flush the src-0 JSON cache, bump the XMLTV counter. */
  publish(): void {
    this.publishTimer?.cancel();
    this.publishTimer = undefined;
    const store = this.rt.source(EIT_SOURCE);
    if (store) store.updates++;
    this.rt.sourceChanged(EIT_SOURCE);
  }

  close(): void {
    this.publishTimer?.cancel();
    this.publishTimer = undefined;
  }
}
