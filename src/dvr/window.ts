// Archive request parsing: the t/d window table and epg of spec 3, the catch-up aliases
// players already speak (Flussonic-style paths, Kodi/TiviMate utc/lutc), and resolving a
// request to an absolute half-open interval [from, to) of wall-clock milliseconds.

export type ArchiveAsk = { kind: 'window'; t: number; d: number } | { kind: 'epg'; at: number };

export interface ArchiveRequest {
  /** The path the request means (`index.m3u8`, `index.mpd`, a segment …). */
  path: string;
  ask: ArchiveAsk;
}

/** `archive-{from}-{duration}.m3u8`, `index-{from}-{duration}.m3u8`, `…-now.m3u8`, `.mpd`. */
const ALIAS = /^(?:(.*)\/)?(archive|index)-(\d+)-(\d+|now)\.(m3u8|mpd)$/;

function number(v: string | undefined): number | undefined {
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * The archive request a URL makes, or undefined for a live one. `t` (even 0), `epg`, `utc`
 * or an alias path select archive mode; a malformed `t`/`d` counts as 0, a malformed or
 * empty `epg` as an instant with no event.
 */
export function parseArchive(
  path: string,
  query: Record<string, string | undefined>,
): ArchiveRequest | undefined {
  const m = ALIAS.exec(path);
  if (m) {
    const dir = m[1] ? `${m[1]}/` : '';
    const file = m[5] === 'mpd' ? 'index.mpd' : 'index.m3u8';
    const from = Number(m[3]);
    const d = m[4] === 'now' ? 0 : Number(m[4]);
    if (query.epg !== undefined)
      return { path: dir + file, ask: { kind: 'epg', at: number(query.epg) ?? Number.NaN } };
    return { path: dir + file, ask: { kind: 'window', t: from, d } };
  }
  // epg present selects archive mode even when malformed or empty (no instant: no event).
  if (query.epg !== undefined)
    return { path, ask: { kind: 'epg', at: number(query.epg) ?? Number.NaN } };
  if (query.t !== undefined)
    return { path, ask: { kind: 'window', t: number(query.t) ?? 0, d: number(query.d) ?? 0 } };
  const utc = number(query.utc);
  if (utc !== undefined) {
    // Kodi/TiviMate: utc = programme start, lutc = the player's "now": the window runs to now.
    return { path, ask: { kind: 'window', t: utc, d: 0 } };
  }
  return undefined;
}

export interface Interval {
  from: number;
  to: number;
}

/**
 * The t/d table of spec 3 in milliseconds. `archiveStart` is the first chunk's start (absent
 * = empty archive). t before the archive start moves to it (rule 2); the end stays t + d.
 */
export function resolveWindow(
  t: number,
  d: number,
  now: number,
  archiveStart: number | undefined,
): Interval {
  const start = archiveStart ?? now;
  let from = t === 0 ? start : t * 1000;
  const to = d > 0 ? from + d * 1000 : now;
  if (from < start) from = Math.min(start, to);
  return { from: Math.round(from), to: Math.round(to) };
}

/** `t=…&d=…` naming an absolute window, for URLs inside an archive master playlist. */
export function windowQuery(w: Interval): string {
  const fmt = (ms: number) => String(Math.round(ms) / 1000);
  return `t=${fmt(w.from)}&d=${fmt(Math.max(0.001, w.to - w.from))}`;
}

/**
 * Whether an archive document for `window` answers the same bytes for as long as the archive
 * keeps them (a shared cache may then keep it: src/ott/cache-policy.ts): asked by absolute
 * times or an EPG event (not "from the archive's start", not "to now"), not cut at the
 * archive's start, and wholly recorded (`recordedTo`, ms: the end of the newest chunk).
 */
export function closedWindow(ask: ArchiveAsk, window: Interval, recordedTo?: number): boolean {
  if (recordedTo === undefined || window.to > recordedTo) return false;
  if (ask.kind === 'epg') return true;
  return ask.t > 0 && ask.d > 0 && window.from === Math.round(ask.t * 1000);
}
