// Entry point of the OTT part: the factory a stream instance calls to package its output
// (HLS over MPEG-TS, CMAF HLS/LL-HLS, DASH). See docs/ott.md.
import { StreamOttService } from './service.ts';
import type { OttFactory } from './types.ts';

export const createOttService: OttFactory = (opts) => new StreamOttService(opts);
export { OTT_FACTORY_SERVICE } from './types.ts';
