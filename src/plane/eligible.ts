// Which streams a stream worker runs today (docs/architecture.md, "Stream workers"): a stream
// that needs nothing of the main thread but what ./protocol.ts carries. The others run on the
// main thread as before; each rule below names what is not carried across yet.
import type { StreamApplied } from '../config/spec-types.generated.ts';
import type { DesiredState, Resource } from '../config/types.ts';

/** Inputs that read nothing of another resource and share nothing across streams. Not yet:
 *  demuxer, muxer, transcoder, dvb (they read another stream's or an adapter's bus), rtmp (a
 *  publish listener is shared by the streams of its port), ps1. */
const INPUTS = new Set([
  'udp',
  'rtp',
  'prompeg',
  'srt',
  'rist',
  'test',
  'file',
  'hls',
  'tcp',
  'rtsp',
  'pipe',
  'std',
]);
/** Push outputs a worker runs (ps1's listener: not yet). */
const OUTPUTS = new Set(['udp', 'rtp', 'srt', 'rist', 'prompeg']);
/** Kinds a worker stream may not depend on: their instances live on the main thread. */
const MAIN_ONLY_DEPS = new Set(['stream', 'dvb-adapter']);

/** Why the stream stays on the main thread ('' = it may go to a worker). */
export function mainThreadReason(res: Resource<StreamApplied>, desired?: DesiredState): string {
  const spec = res.spec;
  for (const i of spec.input ?? []) {
    const type = String((i as { type?: unknown }).type);
    if (!INPUTS.has(type)) return `input type ${type}`;
  }
  for (const o of spec.output ?? []) {
    const type = String((o as { type?: unknown }).type);
    if (!OUTPUTS.has(type)) return `output type ${type}`;
  }
  const mosaic = desired?.resources.get('mosaic/mosaic')?.spec as { enable?: boolean } | undefined;
  if (spec['enable-mosaic'] && mosaic?.enable) return 'in the mosaic';
  const dep = res.deps.find((d) => MAIN_ONLY_DEPS.has(d.kind));
  if (dep) return `reads ${dep.kind} ${dep.key}`;
  for (const r of desired?.resources.values() ?? []) {
    if (r.deps.some((d) => d.kind === 'stream' && d.key === res.key)) {
      return `read by ${r.kind} ${r.name}`;
    }
  }
  return '';
}
