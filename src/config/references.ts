// Cross-record checks the schema cannot express: every id a record refers to (`x-ref`) exists
// and is of the right sort, ids and names are unique per kind (src/config/kinds.ts), and
// demuxer, muxer and transcoder chains have no cycle. Defensive about types: it also runs on invalid documents.
import type { PositionIndex } from './json.ts';
import { RECORD_DEFS, type RecordKind, recordDef } from './kinds.ts';
import { type FoundRef, refsOf } from './refs.ts';
import { isPlainObject } from './schema.ts';
import type { ConfigIssue } from './types.ts';
import { show } from './validate.ts';

type Rec = Record<string, unknown>;

interface Located {
  rec: Rec;
  pointer: string;
}

/** Records of a list at `path` (e.g. ['cs', 'server']) with their pointers. */
export function listAt(doc: unknown, path: readonly string[]): Located[] {
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

export function referenceIssues(doc: unknown, positions: PositionIndex): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const err = (pointer: string, rule: string, message: string, value?: unknown): void => {
    const pos = positions.locateNearest(pointer);
    out.push({ severity: 'error', pointer, rule, message, value, ...pos });
  };

  // Uniqueness per kind. A stream id 0 means "no id" and may repeat.
  for (const { path, noun, unique } of RECORD_DEFS) {
    for (const field of unique) {
      const seen = new Map<unknown, string>();
      for (const { rec, pointer } of listAt(doc, path)) {
        const v = rec[field];
        if (v === undefined || v === 0 || v === '') continue;
        const first = seen.get(v);
        if (first !== undefined) {
          err(
            `${pointer}/${field}`,
            'duplicate',
            `duplicate ${noun} ${field} ${show(v)}: already used by ${first}`,
            v,
          );
        } else seen.set(v, pointer);
      }
    }
  }
  // Stream names and adaptive group names share the OTT URL space.
  const urlNames = new Map<unknown, string>();
  const named = RECORD_DEFS.filter((d) => 'nameField' in d);
  for (const { rec, pointer } of named.flatMap((d) => listAt(doc, d.path))) {
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

  // Two tuner adapters on one frontend would fight over its tuning (an unassigned -1 may repeat).
  const frontends = new Map<string, string>();
  for (const { rec, pointer } of listAt(doc, ['dvb-adapter'])) {
    const adapter = rec['adapter'];
    if (typeof adapter !== 'number' || adapter < 0) continue;
    const device = typeof rec['device'] === 'number' ? rec['device'] : 0;
    const key = `${adapter}/${device}`;
    const first = frontends.get(key);
    if (first !== undefined) {
      err(
        `${pointer}/adapter`,
        'duplicate',
        `adapter ${adapter} device ${device} is already used by ${first}: one frontend serves one tuner adapter`,
        adapter,
      );
    } else frontends.set(key, pointer);
  }

  const byId = new Map<RecordKind, Map<unknown, Rec>>();
  const idsOf = (kind: RecordKind): Map<unknown, Rec> => {
    let m = byId.get(kind);
    if (m) return m;
    m = new Map();
    for (const { rec } of listAt(doc, recordDef(kind)!.path))
      if (typeof rec['id'] === 'number') m.set(rec['id'], rec);
    byId.set(kind, m);
    return m;
  };

  const need = ({ pointer, member, value, rule }: FoundRef): Rec | undefined => {
    if (typeof value !== 'number' || value <= 0) return undefined;
    const target = idsOf(rule.kind).get(value);
    const def = recordDef(rule.kind)!;
    if (!target) {
      const what = rule.what ?? def.noun;
      err(
        pointer,
        'reference',
        `${member} ${value} refers to no ${what} (no ${def.where} has id ${value})`,
        value,
      );
    }
    return target;
  };

  // Streams reading another stream's bus (a demuxer its multiplex, a muxer its programmes).
  const busEdges = new Map<number, BusEdge[]>();
  const addEdge = (rec: Rec, edge: BusEdge): void => {
    if (typeof rec['id'] !== 'number' || rec['id'] <= 0) return;
    const list = busEdges.get(rec['id']) ?? [];
    list.push(edge);
    busEdges.set(rec['id'], list);
  };
  for (const { kind, path } of RECORD_DEFS) {
    for (const { rec, pointer } of listAt(doc, path)) {
      for (const ref of refsOf(kind, rec, pointer)) {
        const target = need(ref);
        if (!target || ref.rule.mpts === undefined) continue;
        const { member, value } = ref;
        if (ref.rule.mpts === false) {
          if (target['mpts'] === true) {
            const why = ref.rule.need ?? 'an adaptive group needs single-programme streams';
            err(
              ref.pointer,
              'reference',
              `${member} ${value} refers to a multiplex (mpts) stream; ${why}`,
              value,
            );
          } else if (kind === 'stream' && target === rec) {
            err(ref.pointer, 'reference', `${member} ${value} refers to the stream itself`, value);
          } else if (kind === 'stream') {
            const input = inputTypeAt(rec, ref.pointer, pointer) ?? 'muxer';
            addEdge(rec, { to: value as number, pointer: ref.pointer, member, input });
          }
        } else if (target['mpts'] !== true) {
          err(
            ref.pointer,
            'reference',
            `${member} ${value} refers to stream ${show(target['stream-name'])}, which is not a multiplex (mpts) stream`,
            value,
          );
        } else if (target === rec) {
          err(ref.pointer, 'reference', `${member} ${value} refers to the stream itself`, value);
        } else {
          addEdge(rec, { to: value as number, pointer: ref.pointer, member, input: 'demuxer' });
        }
      }
    }
  }

  // A muxer input builds a multiplex: only a multiplex stream can carry one (its output has
  // several programmes, which a single-programme stream's packager and archive do not expect).
  for (const { rec, pointer } of listAt(doc, recordDef('stream')!.path)) {
    const inputs = rec['input'];
    if (!Array.isArray(inputs) || rec['mpts'] === true) continue;
    inputs.forEach((input, i) => {
      if (input && typeof input === 'object' && (input as Rec)['type'] === 'muxer') {
        err(
          `${pointer}/input/${i}/type`,
          'mpts',
          'a muxer input builds a multiplex: its stream needs "mpts": true',
          'muxer',
        );
      }
    });
  }

  // Demuxer, muxer and transcoder chains between streams must not loop.
  const state = new Map<number, 'open' | 'done'>();
  const path: { from: number; edge: BusEdge }[] = [];
  const visit = (id: number): void => {
    state.set(id, 'open');
    for (const edge of busEdges.get(id) ?? []) {
      const s = state.get(edge.to);
      if (s === 'open') {
        const from = path.findIndex((p) => p.from === edge.to);
        const loop = [...(from < 0 ? [] : path.slice(from)), { from: id, edge }];
        const kinds = [...new Set(loop.map((p) => p.edge.input))].sort().join(' and ');
        err(
          edge.pointer,
          'cycle',
          `${edge.member} ${edge.to} closes a loop of ${kinds} inputs between streams`,
          edge.to,
        );
      } else if (s === undefined) {
        path.push({ from: id, edge });
        visit(edge.to);
        path.pop();
      }
    }
    state.set(id, 'done');
  };
  for (const id of busEdges.keys()) if (!state.has(id)) visit(id);
  return out;
}

interface BusEdge {
  to: number;
  pointer: string;
  member: string;
  /** The type of the input holding the reference (errors name it). */
  input: string;
}

/** The `type` of the input of stream `rec` (at `base`) that holds the member at `pointer`. */
function inputTypeAt(rec: Rec, pointer: string, base: string): string | undefined {
  const m = /^\/input\/(\d+)\//.exec(pointer.slice(base.length));
  if (!m) return undefined;
  const input = Array.isArray(rec['input']) ? rec['input'][Number(m[1])] : undefined;
  const type = isPlainObject(input) ? input['type'] : undefined;
  return typeof type === 'string' ? type : undefined;
}
