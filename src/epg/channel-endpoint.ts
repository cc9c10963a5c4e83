// GET /data/epg/channel (spec 2): the events of one channel for one UTC day, one language
// chosen per event by priority (requested → system default → any), cached per source.
import { HttpError } from '../errors.ts';
import type { DayRow } from './database.ts';
import { languageByCode, languageById } from './languages.ts';
import { type EpgRuntime, SECONDS_PER_DAY } from './runtime.ts';

/** The query as the HTTP layer parses it: a parameter given twice arrives as an array. */
export interface ChannelQuery {
  src?: string | string[];
  ch?: string | string[];
  lang?: string | string[];
  t?: string | string[];
}

/** One value per parameter: a repeated one is refused (which of two `t` was meant?). */
export function singleValues(q: ChannelQuery): {
  src?: string;
  ch?: string;
  lang?: string;
  t?: string;
} {
  const out: Record<string, string> = {};
  for (const k of ['src', 'ch', 'lang', 't'] as const) {
    const v = q[k];
    if (Array.isArray(v)) throw new HttpError('BAD_REQUEST', `${k} is given more than once`);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

interface EventOut {
  start: number;
  end: number;
  title: string;
  desc: string;
}

const UNSIGNED = /^\d+$/;
/** A lang value that is a number (signed, decimal): an id, never an ISO 639 code. */
const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)$/;
/** Rank of a text language: lower is better. */
const RANK_REQUESTED = 0;
const RANK_DEFAULT = 1;
const RANK_OTHER = 2;
/** Body of an empty answer (unknown source, channel or day). */
export const EMPTY_BODY = '{"event":[]}';

function parseUnsigned(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!UNSIGNED.test(v)) throw new HttpError('BAD_REQUEST', `${name} must be an unsigned integer`);
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new HttpError('BAD_REQUEST', `${name} is out of range`);
  return n;
}

/** Requested language id: 0 = system default; -1 = a code not in the dictionary. */
function parseLang(v: string | undefined): number {
  if (v === undefined || v === '') return 0;
  if (UNSIGNED.test(v)) {
    const id = Number(v);
    if (id === 0) return 0;
    if (!languageById(id)) throw new HttpError('BAD_REQUEST', `unknown language id ${v}`);
    return id;
  }
  // -1, 2.5, +3: numeric, and no language has such an id (spec 2's 400 for a numeric lang
  // naming no language), rather than an "unknown ISO code" that silently falls back.
  if (NUMERIC.test(v)) throw new HttpError('BAD_REQUEST', `unknown language id ${v}`);
  return languageByCode(v)?.id ?? -1;
}

/** Answer a query: the JSON body text (throws HttpError 400 on bad parameters). */
export function channelDay(rt: EpgRuntime, query: ChannelQuery): string {
  const q = singleValues(query);
  const ch = q.ch;
  if (ch === undefined || ch === '') throw new HttpError('BAD_REQUEST', 'ch is required');
  const src = parseUnsigned('src', q.src, 0);
  const t = parseUnsigned('t', q.t, rt.nowSec());
  const lang = parseLang(q.lang);
  const store = rt.source(src);
  if (!store) return EMPTY_BODY;
  const day = Math.floor(t / SECONDS_PER_DAY) * SECONDS_PER_DAY;
  const key = `${ch}\u0000${day}\u0000${lang}`;
  const hit = store.cache.get(key);
  if (hit !== undefined) return hit;
  const deflt = rt.defaultLanguageId();
  const wanted = lang > 0 ? lang : lang === 0 ? deflt : -1;
  let rows: DayRow[];
  try {
    rows = store.db.dayRows(ch, day, day + SECONDS_PER_DAY);
  } catch (err) {
    rt.log.warn({ source: src, err }, 'EPG day query failed');
    return EMPTY_BODY;
  }
  const body = JSON.stringify({ event: pickEvents(rows, wanted, deflt) });
  store.cache.set(key, body);
  return body;
}

function rankOf(langId: number, wanted: number, deflt: number): number {
  if (langId === wanted) return RANK_REQUESTED;
  if (langId === deflt) return RANK_DEFAULT;
  return RANK_OTHER;
}

/** Reduce the rows (one per event and text language) to one record per start time. */
export function pickEvents(rows: DayRow[], wanted: number, deflt: number): EventOut[] {
  const byEvent = new Map<number, DayRow[]>();
  for (const r of rows) {
    let list = byEvent.get(r.id);
    if (!list) {
      list = [];
      byEvent.set(r.id, list);
    }
    list.push(r);
  }
  const byStart = new Map<number, { rank: number; id: number; ev: EventOut }>();
  for (const [id, texts] of byEvent) {
    const first = texts[0]!;
    const { start_time: start, stop_time: end } = first;
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end <= start) {
      continue;
    }
    // One pass, no closures or sorts per event (this runs for every event of an uncached
    // day): the best-ranked text with a title and with a description; the first wins a tie.
    let titled: DayRow | undefined;
    let titledRank = Number.POSITIVE_INFINITY;
    let describedAny: DayRow | undefined;
    let describedRank = Number.POSITIVE_INFINITY;
    for (const r of texts) {
      const k = rankOf(r.lang_id, wanted, deflt);
      if (r.title !== '' && k < titledRank) {
        titled = r;
        titledRank = k;
      }
      if (r.desc !== '' && k < describedRank) {
        describedAny = r;
        describedRank = k;
      }
    }
    const described = titled && titled.desc !== '' ? titled : describedAny;
    const title = titled?.title ?? '';
    const desc = described?.desc ?? '';
    if (title === '' && desc === '') continue;
    const chosen = titled ?? described!;
    const cand = {
      rank: rankOf(chosen.lang_id, wanted, deflt),
      id,
      ev: { start, end, title, desc },
    };
    const prev = byStart.get(start);
    if (!prev || cand.rank < prev.rank || (cand.rank === prev.rank && id < prev.id)) {
      byStart.set(start, cand);
    }
  }
  return [...byStart.values()].sort((a, b) => a.ev.start - b.ev.start).map((c) => c.ev);
}
