// Viewer access as the OTT layer sees it: whether playback is gated (billing servers are
// configured), and the viewer's credentials a playlist or manifest carries on to every URI it
// names, so that the player's follow-up requests present them too (docs/billing.md).
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { PassUse } from '../native/live-http.ts';
import type { Endpoints } from '../util/loopback.ts';
import { ServiceKey } from '../util/services.ts';

/** What the OTT layer asks of the viewer gate (src/billing/ implements it). */
export interface OttAccess {
  /** True while playback needs a verdict: the native engine then answers only viewers holding
   *  a pass, the fast path only anonymous loopback requests. */
  readonly active: boolean;
  /** A request on `conn` without credentials may play without a verdict (loopback, no proxy
   *  forwarded it and sluice did not send it itself: src/util/loopback.ts). */
  anonymous(conn: Endpoints, headers: IncomingHttpHeaders): boolean;
  /** Runs when `active` may have changed; returns the function that stops it. */
  onChange(fn: () => void): () => void;
  /** Runs when a viewer session of `stream` from `ip` closes (idle, ended by the operator, or
   *  billing switched off): the archive releases that client's protection slot then. */
  onSessionEnd(fn: (stream: string, ip: string) => void): () => void;
}

export type { PassUse };

/**
 * Where the gate hands out viewer passes (the native live engine, src/native/live-http.ts):
 * while gated, a request is answered there only when its query, client address and stream
 * hold a live pass; everything else goes to the app and the gate.
 */
export interface ViewerPasses {
  setGated(on: boolean): void;
  grant(query: string, ip: string, stream: string, ttlMs: number): void;
  revoke(query: string, ip: string, stream: string): void;
  revokeAll(): void;
  /** What each pass was used for since the last call. */
  takePassUse(): PassUse[];
}

export const OTT_ACCESS_SERVICE = new ServiceKey<OttAccess>('ott-access');

/** Query text (`token=…`) each request's documents append to their URIs, set by the gate. */
const viewerQueries = new WeakMap<IncomingMessage, string>();

export function setViewerQuery(req: IncomingMessage, query: string): void {
  if (query) viewerQueries.set(req, query);
}

export function viewerQuery(req: IncomingMessage): string | undefined {
  return viewerQueries.get(req);
}

/** `uri` with `query` appended (`?` or `&`); a fragment stays last. */
export function appendQuery(uri: string, query: string): string {
  const hash = uri.indexOf('#');
  const base = hash < 0 ? uri : uri.slice(0, hash);
  const frag = hash < 0 ? '' : uri.slice(hash);
  return `${base}${base.includes('?') ? '&' : '?'}${query}${frag}`;
}

/** `URI="…"` attributes of HLS tags (EXT-X-MAP, -PART, -PRELOAD-HINT, -MEDIA, -KEY, …). */
const HLS_URI_ATTRIBUTE = /URI="([^"]*)"/g;
/** The attributes of an MPD that name a segment or init URL (SegmentTemplate, SegmentURL). */
const MPD_URL_ATTRIBUTE = /\b(media|initialization|sourceURL)="([^"]*)"/g;

/** An HLS playlist with `query` on every URI line and every `URI="…"` attribute. */
export function playlistWithQuery(text: string, query: string): string {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '' || line === '\r') continue;
    if (line.charCodeAt(0) === 0x23 /* # */) {
      if (line.includes('URI="'))
        lines[i] = line.replace(HLS_URI_ATTRIBUTE, (_m, uri: string) => {
          return `URI="${appendQuery(uri, query)}"`;
        });
      continue;
    }
    const cr = line.endsWith('\r');
    const uri = cr ? line.slice(0, -1) : line;
    lines[i] = appendQuery(uri, query) + (cr ? '\r' : '');
  }
  return lines.join('\n');
}

/** An MPD with `query` on every segment and init URL (`&` escaped for XML). */
export function manifestWithQuery(text: string, query: string): string {
  const escaped = query.replace(/&/g, '&amp;');
  return text.replace(MPD_URL_ATTRIBUTE, (_m, name: string, uri: string) => {
    const sep = uri.includes('?') ? '&amp;' : '?';
    return `${name}="${uri}${sep}${escaped}"`;
  });
}

/** `body` (a playlist, or an MPD when `mpd`) as the viewer of `req` gets it: unchanged unless
 *  the gate set a query for the request. */
export function documentFor(req: IncomingMessage, body: Buffer, mpd: boolean): Buffer {
  const query = viewerQueries.get(req);
  if (!query) return body;
  const text = body.toString();
  return Buffer.from(mpd ? manifestWithQuery(text, query) : playlistWithQuery(text, query));
}
