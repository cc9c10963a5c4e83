// The EPG pages' data: channel days from GET /data/epg/channel (one UTC day each: an event
// belongs to the UTC day of its start, docs/epg.md), fetched only for the channels in view, a
// few at a time, and kept; and the viewer's local time as the pages show it.
import { api } from './api.ts';

export interface Channel {
  key: string;
  name: string;
  title: string;
  source: number;
  channel: string;
}
export interface Ev {
  start: number;
  end: number;
  title: string;
  desc: string;
}

export const HOUR = 3600;
export const DAY = 86_400;
/** Channel days fetched at once. */
const PARALLEL = 6;
/** A programme that started this long before a window is still found (it is listed on the UTC
 *  day of its start, which may be the day before the window's first). */
const LOOKBACK = 12 * HOUR;

const pad = (n: number) => String(n).padStart(2, '0');
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Local `HH:MM` of epoch seconds. */
export function hm(sec: number): string {
  const d = new Date(sec * 1000);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** Local `YYYY-MM-DD`. */
export function ymd(sec: number): string {
  const d = new Date(sec * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** Local `Sat 28 Nov`. */
export function dayName(sec: number): string {
  const d = new Date(sec * 1000);
  return `${WEEKDAYS[d.getDay()]} ${d.getDate()} ${MONTHS[d.getMonth()]}`;
}

/** The local midnight at or before `sec`. */
export function localMidnight(sec: number): number {
  const d = new Date(sec * 1000);
  d.setHours(0, 0, 0, 0);
  return Math.floor(d.getTime() / 1000);
}

/** The viewer's zone as the pages name it: `Asia/Kolkata (UTC+05:30)`. */
export function zoneLabel(at: number): string {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const off = -new Date(at * 1000).getTimezoneOffset();
  const sign = off < 0 ? '−' : '+';
  const abs = Math.abs(off);
  return `${zone} (UTC${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)})`;
}

/** The UTC days whose events can overlap [from, to). */
export function daysOf(from: number, to: number): number[] {
  const out: number[] = [];
  const first = from - LOOKBACK;
  for (let d = first - (first % DAY); d < to; d += DAY) out.push(d);
  return out;
}

type Day = Ev[] | { error: string };

/** Channel days by source, channel and UTC day; loads what it is asked for, newest wish first. */
export class GuideCache {
  private readonly days = new Map<string, Day>();
  private readonly loading = new Set<string>();
  private queue: { c: Channel; day: number }[] = [];
  private active = 0;
  private closed = false;

  /** `changed` is called after each day that arrives. */
  constructor(private readonly changed: () => void) {}

  close(): void {
    this.closed = true;
    this.queue = [];
  }

  private static id(c: Channel, day: number): string {
    return `${c.source}\t${c.channel}\t${day}`;
  }

  /** Load these channels' days; what was asked before and has not started is dropped (the
   *  viewer has moved on). */
  load(channels: Channel[], days: number[]): void {
    this.queue = [];
    for (const c of channels) {
      for (const day of days) {
        const id = GuideCache.id(c, day);
        if (!this.days.has(id) && !this.loading.has(id)) this.queue.push({ c, day });
      }
    }
    while (this.active < PARALLEL && this.queue.length) this.next();
  }

  private next(): void {
    const job = this.queue.shift();
    if (!job || this.closed) return;
    const id = GuideCache.id(job.c, job.day);
    if (this.days.has(id) || this.loading.has(id)) {
      this.next();
      return;
    }
    this.loading.add(id);
    this.active++;
    const q = `src=${job.c.source}&ch=${encodeURIComponent(job.c.channel)}&t=${job.day + DAY / 2}`;
    api<{ event?: Ev[] } | null>(`/data/epg/channel?${q}`)
      .then((r) => this.days.set(id, r.body?.event ?? []))
      .catch((e: Error) => this.days.set(id, { error: e.message }))
      .finally(() => {
        this.loading.delete(id);
        this.active--;
        if (this.closed) return;
        this.changed();
        this.next();
      });
  }

  /** The channel's events that overlap [from, to), by start; null while a day is missing. */
  events(c: Channel, from: number, to: number): Ev[] | { error: string } | null {
    const out: Ev[] = [];
    for (const day of daysOf(from, to)) {
      const d = this.days.get(GuideCache.id(c, day));
      if (!d) return null;
      if (!Array.isArray(d)) return d;
      for (const e of d) if (e.end > from && e.start < to) out.push(e);
    }
    // The order of the events is not guaranteed (spec 2).
    return out.sort((a, b) => a.start - b.start);
  }
}
