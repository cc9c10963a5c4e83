// The native core's packet router for the demuxer (native/ts/pid_router.cc): the same function
// as src/mpegts/pid-router.ts, at memcpy speed.
import type { PacketRouter } from '../mpegts/pid-router.ts';
import { addon } from './addon.ts';

export const nativeRoutePackets: PacketRouter = (src, from, end, t) =>
  addon().routePackets(src, from, end, t.codes, t.dst, t.region, t.lens, t.deferred, t.state);
