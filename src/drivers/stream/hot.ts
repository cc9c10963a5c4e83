// How each `x-apply: hot` field of a stream record takes effect on the running stream. The
// plan says which fields changed and how; the instance runs the effects named here and
// restarts nothing for them. test/drivers/stream-hot.test.ts walks schemas/stream.schema.json
// and fails when a hot field has no entry.
import type { FieldChange } from '../../reconciler/types.ts';

export type HotEffect =
  /** Read from the record each time it is used (a tick, a status, a request, the EPG
   *  binding): the new value is in force as soon as the record is replaced. */
  | 'read'
  /** Start or stop the pipeline (`pause`). */
  | 'pause'
  /** The alert gate's switch and delay. */
  | 'alerts'
  /** The period of the primary's fallback check. */
  | 'check-timer'
  /** The archive binding's retention (passed on to the OTT service and recorder). */
  | 'archive'
  /** The operator's own annotation: nothing runs on it. */
  | 'meta'
  /** Accepted and kept, not acted on by this build yet (listed in the stream's status). */
  | 'pending';

export const STREAM_HOT_EFFECTS: Readonly<Record<string, HotEffect>> = {
  'display-name': 'read',
  order: 'read',
  pause: 'pause',
  trace: 'read',
  'mpegts-trace': 'read',
  'mpegts-tr101290': 'pending',
  'enable-alert': 'alerts',
  'alert-delay': 'alerts',
  'stream-timeout': 'read',
  'check-interval': 'check-timer',
  'fallback-check': 'read',
  'enable-mosaic': 'read',
  'scrambled-channel': 'read',
  'epg-export': 'read',
  'failover-error-rate': 'read',
  'failover-error-window': 'read',
  tag: 'meta',
  note: 'meta',
  // Which node runs the stream: the reconciler's share of the config acts on it (docs/fleet.md).
  placement: 'meta',
  movable: 'meta',
  'ott-http-trace': 'read',
  'dvr-hours': 'archive',
  'dvr-min-hours': 'archive',
  'epg-source': 'read',
  'epg-channel': 'read',
  'epg-channel-set': 'read',
};

/** The first member of a change's path: `input[1].port` → `input`, `dvr-hours` → itself. */
export function topField(path: string): string {
  return /^[^.[]+/.exec(path)?.[0] ?? path;
}

/** What an update asks of a running stream, read from the plan's field changes alone. */
export interface StreamUpdate {
  /** A `restart` change without a narrower scope: the whole pipeline restarts. */
  whole: boolean;
  /** Inputs and outputs to restart, by index (from `input[i]` / `output[j]` scopes). */
  inputs: number[];
  outputs: number[];
  /** Effects of the hot fields that changed. */
  effects: Set<HotEffect>;
  /** Hot fields with no entry in the table: applied by a whole restart, and reported. */
  unknownHot: string[];
}

export function readUpdate(changes: readonly FieldChange[]): StreamUpdate {
  const out: StreamUpdate = {
    whole: false,
    inputs: [],
    outputs: [],
    effects: new Set(),
    unknownHot: [],
  };
  const inputs = new Set<number>();
  const outputs = new Set<number>();
  for (const c of changes) {
    if (c.apply === 'hot') {
      const field = topField(c.path);
      const effect = STREAM_HOT_EFFECTS[field];
      if (effect) out.effects.add(effect);
      else {
        out.unknownHot.push(field);
        out.whole = true;
      }
      continue;
    }
    // `replace` and `fixed` never reach a running instance: the reconciler handles them.
    const scoped = /^(input|output)\[(\d+)\]/.exec(c.scope ?? '');
    if (!scoped) out.whole = true;
    else (scoped[1] === 'input' ? inputs : outputs).add(Number(scoped[2]));
  }
  out.inputs = [...inputs].sort((a, b) => a - b);
  out.outputs = [...outputs].sort((a, b) => a - b);
  return out;
}
