// EPG-aligned playback: the event active at an instant on the stream's EPG binding
// (`epg-source`, `epg-channel`), read from the EPG part's runtime in host.services.
import { bindingFromStreamSpec } from '../epg/bindings.ts';
import { EPG_SERVICE } from '../epg/runtime.ts';
import type { Services } from '../util/services.ts';

/** Events are looked for this far back from the instant (the longest programme we expect). */
const EVENT_LOOKBACK_SEC = 2 * 86_400;

export interface EpgEvent {
  /** Epoch seconds. */
  start: number;
  stop: number;
  title: string;
}

/** Finds the event of a stream's bound channel active at `at` (epoch seconds). */
export type EpgLookup = (
  stream: string,
  spec: Record<string, unknown>,
  at: number,
) => EpgEvent | undefined;

export function epgLookupFrom(services: Services): EpgLookup {
  return (stream, spec, at) => {
    const rt = services.get(EPG_SERVICE);
    if (!rt) return undefined;
    const own = bindingFromStreamSpec(spec);
    const binding = own.channel ? own : rt.bindingForStream(stream);
    if (!binding?.channel) return undefined;
    const db = rt.source(binding.source)?.db;
    if (!db) return undefined;
    const rows = db.dayRows(binding.channel, at - EVENT_LOOKBACK_SEC, at + 1);
    let best: EpgEvent | undefined;
    for (const r of rows) {
      if (r.start_time <= at && at < r.stop_time && (!best || r.start_time > best.start))
        best = { start: r.start_time, stop: r.stop_time, title: r.title };
    }
    return best;
  };
}
