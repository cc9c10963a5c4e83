// The dashboard's live state, fed by the one events stream (/data/events): the stream rows with
// their bit-rate history, the tuner adapter rows, the active alerts and the connection; pages
// read these signals.
import { batch, signal } from '@preact/signals';
import type { AdapterRow, StreamRow } from '../rows.ts';
import { api } from './api.ts';

// The rows the server sends (src/web/rows.ts): one definition, erased from the bundle.
export type { AdapterRow, StreamRow } from '../rows.ts';

export interface Alert {
  id: string;
  rule: string;
  severity: string;
  kind: string;
  subject: string;
  key: string;
  message: string;
  since: string;
  raisedAt: string;
  event?: string;
  at?: string;
}

export interface Me {
  login: string | null;
  role: 'admin' | 'viewer';
  uiPath: string | null;
  /** Whether the server makes stream thumbnails (`mosaic.enable`). */
  mosaic: boolean;
}

/** Samples of history kept per stream on this side. */
const HISTORY = 60;

/** Rows by key; mutated in place, `version` says when (1,000 signals would cost more). */
export const rows = new Map<string, StreamRow>();
export const history = new Map<string, [number[], number[]]>();
export const version = signal(0);
/** Bumped for each stream whose switch count or state changed: the stream page refetches. */
export const touched = signal<{ key: string; n: number }>({ key: '', n: 0 });
/** The tuner adapters by key, by id; a new map on every change, where a row that did not
 *  change keeps its object (the adapter page refetches when its row is a new one). */
export const adapters = signal<Map<string, AdapterRow>>(new Map());
export const alerts = signal<Alert[]>([]);
/** Raise / clear events seen since the page opened, newest first. */
export const alertLog = signal<Alert[]>([]);
export const connected = signal<'connecting' | 'live' | 'lost'>('connecting');
export const loaded = signal(false);
export const me = signal<Me | null>(null);

function push(key: string, inKbps: number, outKbps: number): void {
  let h = history.get(key);
  if (!h) {
    h = [[], []];
    history.set(key, h);
  }
  h[0].push(inKbps);
  h[1].push(outKbps);
  if (h[0].length > HISTORY) {
    h[0].shift();
    h[1].shift();
  }
}

interface Snapshot {
  rows: StreamRow[];
  history: Record<string, [number[], number[]]>;
  adapters?: AdapterRow[];
}
interface Delta {
  changed: (Partial<StreamRow> & { key: string })[];
  removed: string[];
  adapters?: { changed: (Partial<AdapterRow> & { key: string })[]; removed: string[] };
}

/** The adapters after a delta: changed fields merged, the removed dropped, sorted by id. */
function mergeAdapters(d: NonNullable<Delta['adapters']>): Map<string, AdapterRow> {
  const next = new Map(adapters.value);
  for (const c of d.changed) {
    const row = { ...(next.get(c.key) ?? {}), ...c } as AdapterRow;
    if (c.message === '') delete row.message;
    next.set(c.key, row);
  }
  for (const k of d.removed) next.delete(k);
  return new Map([...next.entries()].sort((a, b) => a[1].id - b[1].id));
}

function onSnapshot(s: Snapshot): void {
  rows.clear();
  history.clear();
  for (const r of s.rows) rows.set(r.key, r);
  for (const [k, h] of Object.entries(s.history)) history.set(k, [[...h[0]], [...h[1]]]);
  batch(() => {
    adapters.value = new Map((s.adapters ?? []).map((a) => [a.key, a]));
    version.value++;
    loaded.value = true;
  });
}

function onDelta(d: Delta): void {
  let touchedKey = '';
  for (const c of d.changed) {
    const prev = rows.get(c.key);
    const next = { ...(prev ?? {}), ...c } as StreamRow;
    if (c.message === '') delete next.message;
    rows.set(c.key, next);
    if (c.switches !== undefined || c.state !== undefined || c.active !== undefined) {
      touchedKey = c.key;
    }
  }
  for (const k of d.removed) {
    rows.delete(k);
    history.delete(k);
  }
  // Every stream gets a sample per sweep (unchanged rows repeat their last figures).
  for (const r of rows.values()) push(r.key, r.in, r.out);
  const a = d.adapters;
  batch(() => {
    version.value++;
    if (touchedKey) touched.value = { key: touchedKey, n: touched.value.n + 1 };
    if (a) adapters.value = mergeAdapters(a);
  });
}

function onAlert(ev: Alert): void {
  const rest = alerts.value.filter((a) => a.key !== ev.key);
  batch(() => {
    alerts.value = ev.event === 'clear' ? rest : [ev, ...rest];
    alertLog.value = [ev, ...alertLog.value].slice(0, 200);
  });
}

let source: EventSource | null = null;

/** Open the events stream (once); EventSource reconnects by itself and starts again from a
 *  snapshot. */
export function connect(): void {
  if (source) return;
  source = new EventSource('/data/events');
  source.addEventListener('open', () => {
    connected.value = 'live';
  });
  source.addEventListener('error', () => {
    connected.value = 'lost';
  });
  source.addEventListener('snapshot', (e) => onSnapshot(JSON.parse((e as MessageEvent).data)));
  source.addEventListener('delta', (e) => onDelta(JSON.parse((e as MessageEvent).data)));
  source.addEventListener('alerts', (e) => {
    alerts.value = (JSON.parse((e as MessageEvent).data) as { active: Alert[] }).active;
  });
  for (const ev of ['raise', 'repeat', 'clear']) {
    source.addEventListener(ev, (e) => onAlert(JSON.parse((e as MessageEvent).data)));
  }
}

export async function loadMe(): Promise<void> {
  me.value = (await api<Me>('/data/me')).body;
}

/** Active alerts about one stream (by stream-name). */
export function streamAlerts(name: string, list: Alert[]): Alert[] {
  return list.filter((a) => a.kind === 'stream' && a.subject === name);
}
