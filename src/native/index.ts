// The native core's public surface: import from here (or from ts.ts / udp.ts directly).

export * from './biss.ts';
export { codecOf, type StreamKind } from './codecs.ts';
export { NativeError, type NativeErrorCode } from './errors.ts';
export type { WriteDurableOptions, WriteDurableStats } from './fs.ts';
export { writeDurable, writeDurableStats } from './fs.ts';
export * from './rist.ts';
export * from './srt.ts';
export { nullPackets } from './stuffing.ts';
export * from './ts.ts';
export * from './udp.ts';

import { addon } from './addon.ts';

/** The addon's version string; throws ERR_NATIVE_LOAD when it is not built. */
export function nativeVersion(): string {
  return addon().version();
}
