// Cross-record checks the schema cannot express: every id a record refers to exists (and is
// of the right sort), ids and names are unique per kind, and demuxer chains have no cycle.
// Defensive about types: it also runs on documents that failed the schema.
import type { PositionIndex } from './json.ts';
import { isPlainObject } from './schema.ts';
import type { ConfigIssue } from './types.ts';
import { show } from './validate.ts';

type Rec = Record<string, unknown>;

interface Located {
  rec: Rec;
  pointer: string;
}

/** Records of a list at `path` (e.g. ['cs', 'server']) with their pointers. */
export function listAt(doc: unknown, path: string[]): Located[] {
  let v: unknown = doc;
  for (const p of path) v = isPlainObject(v) ? v[p] : undefined;
  if (!Array.isArray(v)) return [];
  const base = `/${path.join('/')}`;
  const out: Located[] = [];
  v.forEach((rec, i) => {
    if (isPlainObject(rec)) out.push({ rec, pointer: `${base}/${i}` });
  });
  return out;
}

/** Where each record list lives, with the members that must be unique in it. */
const UNIQUE: { path: string[]; what: string; fields: string[] }[] = [
  { path: ['user'], what: 'user', fields: ['login'] },
  { path: ['cs', 'server'], what: 'billing server', fields: ['id', 'name'] },
  { path: ['epg', 'source'], what: 'EPG source', fields: ['id', 'name'] },
  { path: ['epg-server', 'channel-set'], what: 'EPG channel set', fields: ['id', 'name'] },
  { path: ['epg-server', 'login'], what: 'EPG login', fields: ['id', 'login'] },
  { path: ['dvb-adapter'], what: 'tuner adapter', fields: ['id', 'name'] },
  {
    path: ['dvr-storage-list', 'storage'],
    what: 'archive storage',
    fields: ['id', 'name', 'dir-path'],
  },
  { path: ['stream'], what: 'stream', fields: ['id'] },
  { path: ['stream-adaptive'], what: 'adaptive stream', fields: ['id'] },
];

export function referenceIssues(doc: unknown, positions: PositionIndex): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const err = (pointer: string, rule: string, message: string, value?: unknown): void => {
    const pos = positions.locateNearest(pointer);
    out.push({ severity: 'error', pointer, rule, message, value, ...pos });
  };

  // Uniqueness per kind. A stream id 0 means "no id" and may repeat.
  for (const { path, what, fields } of UNIQUE) {
    for (const field of fields) {
      const seen = new Map<unknown, string>();
      for (const { rec, pointer } of listAt(doc, path)) {
        const v = rec[field];
        if (v === undefined || v === 0 || v === '') continue;
        const first = seen.get(v);
        if (first !== undefined) {
          err(
            `${pointer}/${field}`,
            'duplicate',
            `duplicate ${what} ${field} ${show(v)}: already used by ${first}`,
            v,
          );
        } else seen.set(v, pointer);
      }
    }
  }
  // Stream names and adaptive group names share the OTT URL space.
  const urlNames = new Map<unknown, string>();
  for (const { rec, pointer } of [
    ...listAt(doc, ['stream']),
    ...listAt(doc, ['stream-adaptive']),
  ]) {
    const v = rec['stream-name'];
    if (typeof v !== 'string' || v === '') continue;
    const first = urlNames.get(v);
    if (first !== undefined) {
      err(
        `${pointer}/stream-name`,
        'duplicate',
        `duplicate stream-name ${show(v)}: already used by ${first}`,
        v,
      );
    } else urlNames.set(v, pointer);
  }

  const ids = (path: string[]): Map<unknown, Rec> => {
    const m = new Map<unknown, Rec>();
    for (const { rec } of listAt(doc, path))
      if (typeof rec['id'] === 'number') m.set(rec['id'], rec);
    return m;
  };
  const streams = ids(['stream']);
  const adapters = ids(['dvb-adapter']);
  const storages = ids(['dvr-storage-list', 'storage']);
  const sources = ids(['epg', 'source']);
  const channelSets = ids(['epg-server', 'channel-set']);

  const need = (
    map: Map<unknown, Rec>,
    v: unknown,
    pointer: string,
    member: string,
    what: string,
    where: string,
  ): Rec | undefined => {
    if (typeof v !== 'number' || v <= 0) return undefined;
    const target = map.get(v);
    if (!target)
      err(pointer, 'reference', `${member} ${v} refers to no ${what} (no ${where} has id ${v})`, v);
    return target;
  };

  const demuxEdges = new Map<number, { to: number; pointer: string }[]>();
  for (const { rec, pointer } of listAt(doc, ['stream'])) {
    need(
      storages,
      rec['dvr-storage'],
      `${pointer}/dvr-storage`,
      'dvr-storage',
      'archive storage',
      'dvr-storage-list.storage record',
    );
    need(
      sources,
      rec['epg-source'],
      `${pointer}/epg-source`,
      'epg-source',
      'EPG source',
      'epg.source record',
    );
    const sets = rec['epg-channel-set'];
    if (Array.isArray(sets)) {
      sets.forEach((id, j) => {
        need(
          channelSets,
          id,
          `${pointer}/epg-channel-set/${j}`,
          'epg-channel-set item',
          'EPG channel set',
          'epg-server.channel-set record',
        );
      });
    }
    const inputs = Array.isArray(rec['input']) ? rec['input'] : [];
    inputs.forEach((inp, j) => {
      if (!isPlainObject(inp)) return;
      const ip = `${pointer}/input/${j}`;
      if (inp['type'] === 'dvb') {
        need(
          adapters,
          inp['adapter-id'],
          `${ip}/adapter-id`,
          'adapter-id',
          'tuner adapter',
          'dvb-adapter record',
        );
      } else if (inp['type'] === 'demuxer') {
        const src = inp['src'] ?? 0;
        const mid = inp['mpts-id'];
        if (src === 1) {
          need(
            adapters,
            mid,
            `${ip}/mpts-id`,
            'mpts-id',
            'tuner adapter (src 1)',
            'dvb-adapter record',
          );
        } else if (src === 0) {
          const target = need(
            streams,
            mid,
            `${ip}/mpts-id`,
            'mpts-id',
            'multiplex stream (src 0)',
            'stream',
          );
          if (target && target['mpts'] !== true) {
            err(
              `${ip}/mpts-id`,
              'reference',
              `mpts-id ${mid} refers to stream ${show(target['stream-name'])}, which is not a multiplex (mpts) stream`,
              mid,
            );
          } else if (target && target === rec) {
            err(`${ip}/mpts-id`, 'reference', `mpts-id ${mid} refers to the stream itself`, mid);
          } else if (target && typeof rec['id'] === 'number' && rec['id'] > 0) {
            const list = demuxEdges.get(rec['id']) ?? [];
            list.push({ to: mid as number, pointer: `${ip}/mpts-id` });
            demuxEdges.set(rec['id'], list);
          }
        }
      }
    });
  }
  for (const { rec, pointer } of listAt(doc, ['stream-adaptive'])) {
    need(
      storages,
      rec['dvr-storage'],
      `${pointer}/dvr-storage`,
      'dvr-storage',
      'archive storage',
      'dvr-storage-list.storage record',
    );
    const list = Array.isArray(rec['streams']) ? rec['streams'] : [];
    list.forEach((id, j) => {
      const target = need(
        streams,
        id,
        `${pointer}/streams/${j}`,
        'streams item',
        'stream',
        'stream',
      );
      if (target?.['mpts'] === true) {
        err(
          `${pointer}/streams/${j}`,
          'reference',
          `streams item ${id} refers to a multiplex (mpts) stream; an adaptive group needs single-programme streams`,
          id,
        );
      }
    });
  }
  for (const { rec, pointer } of listAt(doc, ['epg-server', 'login'])) {
    need(
      channelSets,
      rec['channel-set'],
      `${pointer}/channel-set`,
      'channel-set',
      'EPG channel set',
      'epg-server.channel-set record',
    );
  }

  // Demuxer chains between multiplex streams must not loop.
  const state = new Map<number, 'open' | 'done'>();
  const visit = (id: number): void => {
    state.set(id, 'open');
    for (const edge of demuxEdges.get(id) ?? []) {
      const s = state.get(edge.to);
      if (s === 'open')
        err(
          edge.pointer,
          'cycle',
          `mpts-id ${edge.to} closes a loop of demuxer inputs between streams`,
          edge.to,
        );
      else if (s === undefined) visit(edge.to);
    }
    state.set(id, 'done');
  };
  for (const id of demuxEdges.keys()) if (!state.has(id)) visit(id);
  return out;
}
