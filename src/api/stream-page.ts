// Which streams one GET /data/stream answers: filters (`name`, `ids`) and cursor pages (`limit`,
// `after`) picked before any status is built, so a small page of many streams costs little.

/** A stream as the selection sees it: its resource key, id and names. */
export interface PageableStream {
  key: string;
  id: number;
  name: string;
}

export interface StreamQuery {
  /** Case-insensitive part of the stream-name. */
  name?: string;
  /** Comma-separated stream ids. */
  ids?: string;
  limit?: number;
  /** The `next` of the previous page: the resource key of its last stream. */
  after?: string;
}

export const MAX_PAGE = 1000;

/** The key's place in the walk: numeric keys (ids) by number, then `name:` keys by text. */
function rank(key: string): [number, string] {
  return /^\d+$/.test(key) ? [Number(key), ''] : [Number.POSITIVE_INFINITY, key];
}

/** The order pages walk in: by resource key, which never moves while the stream exists, so a
 *  stream added or removed between two requests shifts no other stream across a page. */
export function pageOrder(a: string, b: string): number {
  const [an, as] = rank(a);
  const [bn, bs] = rank(b);
  if (an !== bn) return an < bn ? -1 : 1;
  return as < bs ? -1 : as > bs ? 1 : 0;
}

/** Whether the query asks for a page (`{streams, next}`) rather than the plain list. */
export function isPaged(q: StreamQuery): boolean {
  return q.limit !== undefined || q.after !== undefined;
}

/** The ids of `?ids=` as numbers (the schema allows digits and commas only). */
function idSet(ids: string): Set<number> {
  return new Set(
    ids
      .split(',')
      .filter((x) => x !== '')
      .map(Number),
  );
}

/** The streams `q` selects out of `all` (in their listed order), and the page's cursor. */
export function selectStreams<S extends PageableStream>(
  all: S[],
  q: StreamQuery,
): { streams: S[]; next: string | null } {
  let out = all;
  if (q.name !== undefined) {
    const part = q.name.toLowerCase();
    out = out.filter((s) => s.name.toLowerCase().includes(part));
  }
  if (q.ids !== undefined) {
    const ids = idSet(q.ids);
    out = out.filter((s) => ids.has(s.id));
  }
  if (!isPaged(q)) return { streams: out, next: null };
  const after = q.after;
  out = out.filter((s) => after === undefined || pageOrder(s.key, after) > 0);
  out.sort((a, b) => pageOrder(a.key, b.key));
  const limit = q.limit ?? MAX_PAGE;
  const page = out.slice(0, limit);
  return { streams: page, next: out.length > limit ? page[page.length - 1]!.key : null };
}
