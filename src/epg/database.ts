// One EPG database (better-sqlite3, WAL) per source: channels, their names, events with their
// texts per language and their ratings. Table and column names follow spec 2.
import Database from 'better-sqlite3';

type Db = Database.Database;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- time_zone: the channel's offset from UTC in seconds (east positive).
CREATE TABLE IF NOT EXISTS channel (
  channel_id TEXT PRIMARY KEY,
  time_zone INTEGER NOT NULL DEFAULT 0,
  icon TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS channel_name (
  channel_id TEXT NOT NULL,
  lang_id INTEGER NOT NULL,
  name TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS channel_name_ch ON channel_name (channel_id);
-- start_time / stop_time: Unix seconds, UTC. eit_event_id: the DVB event_id (EIT only).
CREATE TABLE IF NOT EXISTS event (
  id INTEGER PRIMARY KEY,
  channel_id TEXT NOT NULL,
  start_time INTEGER NOT NULL,
  stop_time INTEGER NOT NULL,
  eit_event_id INTEGER
);
CREATE INDEX IF NOT EXISTS event_ch_start ON event (channel_id, start_time);
CREATE INDEX IF NOT EXISTS event_stop ON event (stop_time);
CREATE TABLE IF NOT EXISTS event_text (
  event_id INTEGER NOT NULL,
  lang_id INTEGER NOT NULL,
  title TEXT NOT NULL,
  desc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS event_text_ev ON event_text (event_id);
CREATE TABLE IF NOT EXISTS event_rating (
  event_id INTEGER NOT NULL,
  system TEXT NOT NULL,
  value TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS event_rating_ev ON event_rating (event_id);
`;

export interface DayRow {
  id: number;
  start_time: number;
  stop_time: number;
  lang_id: number;
  title: string;
  desc: string;
}

export interface ChannelRow {
  channel_id: string;
  time_zone: number;
  icon: string;
}

export interface ExportRow {
  id: number;
  start_time: number;
  stop_time: number;
  lang_id: number | null;
  title: string | null;
  desc: string | null;
}

/** [id, start_time, stop_time, lang_id, title, desc]; the text columns are null for an event
 *  without any event_text row. */
export type RawExportRow = [number, number, number, number | null, string | null, string | null];

export interface EventText {
  lang: number;
  title: string;
  desc: string;
}

export interface EventRating {
  system: string;
  value: string;
}

export interface OpenOptions {
  readonly?: boolean;
  /** Bulk-load mode for a staging file: no journal, no fsync (the file is thrown away on
   *  failure and renamed into place on success). */
  staging?: boolean;
}

export class EpgDatabase {
  readonly db: Db;
  private stmts: ReturnType<typeof prepare> | undefined;

  constructor(
    readonly path: string,
    opts: OpenOptions = {},
  ) {
    this.db = new Database(path, {
      readonly: opts.readonly ?? false,
      fileMustExist: !!opts.readonly,
    });
    if (opts.readonly) return;
    if (opts.staging) {
      this.db.pragma('journal_mode = OFF');
      this.db.pragma('synchronous = OFF');
    } else {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
    }
    this.db.exec(SCHEMA);
  }

  private get s(): ReturnType<typeof prepare> {
    this.stmts ??= prepare(this.db);
    return this.stmts;
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  upsertChannel(channelId: string, timeZone: number, icon = ''): void {
    this.s.upsertChannel.run(channelId, timeZone, icon);
  }

  setChannelTimeZone(channelId: string, timeZone: number): void {
    this.s.setTz.run(timeZone, channelId);
  }

  addChannelName(channelId: string, lang: number, name: string): void {
    this.s.addName.run(channelId, lang, name);
  }

  addEvent(
    channelId: string,
    start: number,
    stop: number,
    texts: EventText[],
    ratings: EventRating[] = [],
    eitEventId: number | null = null,
  ): number {
    const id = Number(this.s.addEvent.run(channelId, start, stop, eitEventId).lastInsertRowid);
    for (const t of texts) this.s.addText.run(id, t.lang, t.title, t.desc);
    for (const r of ratings) this.s.addRating.run(id, r.system, r.value);
    return id;
  }

  /** Remove the events of a channel that carry this EIT event_id or overlap [start, stop):
   *  a newer EIT version replaces them. Returns how many were removed. */
  removeReplacedEvents(channelId: string, eitEventId: number, start: number, stop: number): number {
    const ids = this.s.replaced.all(channelId, eitEventId, stop, start) as { id: number }[];
    for (const { id } of ids) this.removeEvent(id);
    return ids.length;
  }

  /** Remove the events of a channel with this EIT event_id that have not ended by `now`: an
   *  event a new version of its schedule section no longer carries was cancelled or moved. */
  removeUnendedEitEvent(channelId: string, eitEventId: number, now: number): number {
    const ids = this.s.unended.all(channelId, eitEventId, now) as { id: number }[];
    for (const { id } of ids) this.removeEvent(id);
    return ids.length;
  }

  private removeEvent(id: number): void {
    this.s.delText.run(id);
    this.s.delRating.run(id);
    this.s.delEvent.run(id);
  }

  /** Events of a channel starting in [from, to), one row per text language. */
  dayRows(channelId: string, from: number, to: number): DayRow[] {
    return this.s.day.all(channelId, from, to) as DayRow[];
  }

  channels(): ChannelRow[] {
    return this.s.channels.all() as ChannelRow[];
  }

  channel(channelId: string): ChannelRow | undefined {
    return this.s.channel.get(channelId) as ChannelRow | undefined;
  }

  channelNames(channelId: string): { lang_id: number; name: string }[] {
    return this.s.names.all(channelId) as { lang_id: number; name: string }[];
  }

  /** Events of a channel with stop_time >= now, ordered by start, one row per text. */
  exportRows(channelId: string, now: number): IterableIterator<ExportRow> {
    return this.s.exportRows.iterate(channelId, now) as IterableIterator<ExportRow>;
  }

  /** The same rows as exportRows as arrays `[id, start, stop, lang_id, title, desc]` (the
   *  XMLTV export walks 200k+ rows: no object per row). */
  exportRowsRaw(channelId: string, now: number): IterableIterator<RawExportRow> {
    return this.s.exportRowsRaw.iterate(channelId, now) as IterableIterator<RawExportRow>;
  }

  /** Ratings of the channel's events with stop_time >= now as `[event_id, system, value]`,
   *  in event order (the export merges them with exportRowsRaw). */
  ratingsRaw(channelId: string, now: number): [number, string, string][] {
    return this.s.ratingsRaw.all(channelId, now) as [number, string, string][];
  }

  ratings(channelId: string, now: number): Map<number, EventRating[]> {
    const out = new Map<number, EventRating[]>();
    for (const r of this.s.ratings.iterate(channelId, now) as IterableIterator<
      EventRating & { event_id: number }
    >) {
      let list = out.get(r.event_id);
      if (!list) {
        list = [];
        out.set(r.event_id, list);
      }
      list.push({ system: r.system, value: r.value });
    }
    return out;
  }

  /** Delete events ending before `from` or starting at or after `to`. Returns the count. */
  prune(from: number, to: number): number {
    return this.transaction(() => {
      const where = 'stop_time < ? OR start_time >= ?';
      this.db
        .prepare(`DELETE FROM event_text WHERE event_id IN (SELECT id FROM event WHERE ${where})`)
        .run(from, to);
      this.db
        .prepare(`DELETE FROM event_rating WHERE event_id IN (SELECT id FROM event WHERE ${where})`)
        .run(from, to);
      return this.db.prepare(`DELETE FROM event WHERE ${where}`).run(from, to).changes;
    });
  }

  counts(): { channels: number; events: number } {
    const c = this.db.prepare('SELECT count(*) AS n FROM channel').get() as { n: number };
    const e = this.db.prepare('SELECT count(*) AS n FROM event').get() as { n: number };
    return { channels: c.n, events: e.n };
  }

  getMeta(key: string): string | undefined {
    const row = this.db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as
      | { value: string }
      | undefined;
    return row?.value;
  }

  setMeta(key: string, value: string): void {
    this.db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(key, value);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

function prepare(db: Db) {
  return {
    upsertChannel: db.prepare(
      `INSERT INTO channel (channel_id, time_zone, icon) VALUES (?, ?, ?)
       ON CONFLICT (channel_id) DO UPDATE SET time_zone = excluded.time_zone,
         icon = CASE WHEN excluded.icon <> '' THEN excluded.icon ELSE channel.icon END`,
    ),
    setTz: db.prepare('UPDATE channel SET time_zone = ? WHERE channel_id = ?'),
    addName: db.prepare('INSERT INTO channel_name (channel_id, lang_id, name) VALUES (?, ?, ?)'),
    addEvent: db.prepare(
      'INSERT INTO event (channel_id, start_time, stop_time, eit_event_id) VALUES (?, ?, ?, ?)',
    ),
    addText: db.prepare(
      'INSERT INTO event_text (event_id, lang_id, title, desc) VALUES (?, ?, ?, ?)',
    ),
    addRating: db.prepare('INSERT INTO event_rating (event_id, system, value) VALUES (?, ?, ?)'),
    replaced: db.prepare(
      `SELECT id FROM event WHERE channel_id = ?
         AND (eit_event_id = ? OR (start_time < ? AND stop_time > ?))`,
    ),
    unended: db.prepare(
      'SELECT id FROM event WHERE channel_id = ? AND eit_event_id = ? AND stop_time > ?',
    ),
    delText: db.prepare('DELETE FROM event_text WHERE event_id = ?'),
    delRating: db.prepare('DELETE FROM event_rating WHERE event_id = ?'),
    delEvent: db.prepare('DELETE FROM event WHERE id = ?'),
    day: db.prepare(
      `SELECT e.id, e.start_time, e.stop_time, t.lang_id, t.title, t.desc
         FROM event e JOIN event_text t ON t.event_id = e.id
        WHERE e.channel_id = ? AND e.start_time >= ? AND e.start_time < ?`,
    ),
    channels: db.prepare('SELECT channel_id, time_zone, icon FROM channel ORDER BY channel_id'),
    channel: db.prepare('SELECT channel_id, time_zone, icon FROM channel WHERE channel_id = ?'),
    names: db.prepare('SELECT lang_id, name FROM channel_name WHERE channel_id = ? ORDER BY rowid'),
    exportRows: db.prepare(
      `SELECT e.id, e.start_time, e.stop_time, t.lang_id, t.title, t.desc
         FROM event e LEFT JOIN event_text t ON t.event_id = e.id
        WHERE e.channel_id = ? AND e.stop_time >= ?
        ORDER BY e.start_time, e.id, t.rowid`,
    ),
    exportRowsRaw: db
      .prepare(
        `SELECT e.id, e.start_time, e.stop_time, t.lang_id, t.title, t.desc
           FROM event e LEFT JOIN event_text t ON t.event_id = e.id
          WHERE e.channel_id = ? AND e.stop_time >= ?
          ORDER BY e.start_time, e.id, t.rowid`,
      )
      .raw(true),
    ratingsRaw: db
      .prepare(
        `SELECT r.event_id, r.system, r.value FROM event_rating r JOIN event e ON e.id = r.event_id
          WHERE e.channel_id = ? AND e.stop_time >= ? ORDER BY r.rowid`,
      )
      .raw(true),
    ratings: db.prepare(
      `SELECT r.event_id, r.system, r.value FROM event_rating r JOIN event e ON e.id = r.event_id
        WHERE e.channel_id = ? AND e.stop_time >= ? ORDER BY r.rowid`,
    ),
  };
}
