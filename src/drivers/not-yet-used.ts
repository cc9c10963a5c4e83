// Settings this build accepts (the schemas allow them, the config keeps them) but does not act
// on yet, each with the reason: the one list. `/data/status` shows, as `notYetUsed`, the ones
// the current config sets (docs/config.md, "Settings not used yet"). Three sources, all data:
// the fields below, the stream fields whose hot effect is `pending` (./stream/hot.ts), and what
// has no implementation at all — kinds without a driver, input and output types without a
// factory.
import { RECORD_DEFS, SINGLETON_DEFS } from '../config/kinds.ts';
import type { ConfigDocument } from '../config/types.ts';
import { INPUT_FACTORIES } from '../inputs/registry.ts';
import { OUTPUT_FACTORIES } from '../outputs/registry.ts';
import { builtinDrivers } from './index.ts';
import { STREAM_HOT_EFFECTS } from './stream/hot.ts';

/** One setting the current config sets that this build does not act on. */
export interface NotYetUsed {
  /** JSON pointer of the member (or record) in the config document. */
  pointer: string;
  /** The setting, as the config reference names it (`stream.stream-type`, `mosaic.columns`). */
  setting: string;
  reason: string;
}

/** Fields of kinds that do have a driver, which that driver does not read yet. Stream fields
 *  whose hot effect is `pending` must have a line here (test/drivers/not-yet-used.test.ts). */
export const FIELDS_NOT_YET_USED: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  stream: {
    'mpegts-tr101290': 'TR 101 290 checks always run; switching them off is not built yet',
  },
  server: {
    name: 'events and status carry the host name; naming the server is not built yet',
    'log-level': 'the log level is set at start (--log-level, SLUICE_LOG_LEVEL)',
    note: 'a free note: nothing acts on it',
  },
  'user-default': {
    role: 'no tool creates accounts yet: each user record states its own role',
  },
};

const STREAM_PENDING = Object.entries(STREAM_HOT_EFFECTS)
  .filter(([, effect]) => effect === 'pending')
  .map(([field]) => field);

/** Resource kinds no driver of this build takes (computed once: the driver table is fixed). */
let withoutDriver: Set<string> | undefined;
function kindsWithoutDriver(): Set<string> {
  if (!withoutDriver) {
    const driven = new Set(builtinDrivers().map((d) => d.kind));
    withoutDriver = new Set(
      [...SINGLETON_DEFS, ...RECORD_DEFS].map((d) => d.kind).filter((k) => !driven.has(k)),
    );
  }
  return withoutDriver;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function token(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The records of a kind in `doc`, with their pointers. */
function records(
  doc: ConfigDocument,
  path: readonly string[],
): { pointer: string; rec: Record<string, unknown> }[] {
  let node: unknown = doc;
  for (const m of path) node = isObject(node) ? node[m] : undefined;
  if (!Array.isArray(node)) return [];
  const base = `/${path.map(token).join('/')}`;
  return node.flatMap((rec, i) => (isObject(rec) ? [{ pointer: `${base}/${i}`, rec }] : []));
}

/** Stream fields not used yet: the table's, plus every `pending` one (with a plain reason when
 *  the table has none, so a new pending field is never missing from the list). */
function streamFieldReason(field: string): string | undefined {
  const reason = FIELDS_NOT_YET_USED['stream']?.[field];
  if (reason) return reason;
  return STREAM_PENDING.includes(field) ? 'kept, but not acted on by this build yet' : undefined;
}

/**
 * The settings `doc` sets that this build does not act on. `doc` is the config in minimal form
 * (defaults left out), so a member written with its default value is not listed: it asks for
 * nothing different.
 */
export function notYetUsed(doc: ConfigDocument): NotYetUsed[] {
  const out: NotYetUsed[] = [];
  const none = kindsWithoutDriver();
  const recordLists = new Set(RECORD_DEFS.map((d) => d.path.join('/')));

  for (const { kind } of SINGLETON_DEFS) {
    const obj = doc[kind];
    if (!isObject(obj)) continue;
    if (!none.has(kind)) {
      const fields = FIELDS_NOT_YET_USED[kind] ?? {};
      for (const member of Object.keys(obj)) {
        const reason = fields[member];
        if (reason)
          out.push({ pointer: `/${kind}/${token(member)}`, setting: `${kind}.${member}`, reason });
      }
      continue;
    }
    for (const member of Object.keys(obj)) {
      // A list of records inside a settings object (cs.server) is reported by its own kind.
      if (recordLists.has(`${kind}/${member}`)) continue;
      out.push({
        pointer: `/${kind}/${token(member)}`,
        setting: `${kind}.${member}`,
        reason: `no part of this build acts on ${kind} yet`,
      });
    }
  }

  for (const def of RECORD_DEFS) {
    const list = records(doc, def.path);
    if (none.has(def.kind)) {
      for (const { pointer } of list) {
        out.push({
          pointer,
          setting: def.path.join('.'),
          reason: `no part of this build acts on ${def.noun} records yet`,
        });
      }
      continue;
    }
    const fields = FIELDS_NOT_YET_USED[def.kind] ?? {};
    for (const { pointer, rec } of list) {
      for (const field of Object.keys(rec)) {
        const reason = def.kind === 'stream' ? streamFieldReason(field) : fields[field];
        if (reason) {
          out.push({
            pointer: `${pointer}/${token(field)}`,
            setting: `${def.kind}.${field}`,
            reason,
          });
        }
      }
      if (def.kind === 'stream') out.push(...unsupportedTypes(pointer, rec));
    }
  }
  return out;
}

/** Inputs and outputs of a stream whose type this build has no implementation of. */
function unsupportedTypes(pointer: string, rec: Record<string, unknown>): NotYetUsed[] {
  const out: NotYetUsed[] = [];
  const lists = [
    { member: 'input', known: INPUT_FACTORIES, effect: 'the stream uses its other inputs' },
    { member: 'output', known: OUTPUT_FACTORIES, effect: 'the stream runs without it' },
  ] as const;
  for (const { member, known, effect } of lists) {
    const list = rec[member];
    if (!Array.isArray(list)) continue;
    list.forEach((item, i) => {
      const type = isObject(item) ? item['type'] : undefined;
      if (typeof type !== 'string' || Object.hasOwn(known, type)) return;
      out.push({
        pointer: `${pointer}/${member}/${i}`,
        setting: `${member} type ${type}`,
        reason: `this build has no ${type} ${member} yet; ${effect}`,
      });
    });
  }
  return out;
}
