// The native core's packet router for the demuxer (native/ts/pid_router.cc): the same function
// as src/mpegts/pid-router.ts, at memcpy speed. The tables are bound once per set of arrays
// (the splitter replaces dst and lens when it grows): a call then passes only the batch.
import type { PacketRouter, RouteTables } from '../mpegts/pid-router.ts';
import { addon, type NativeRouteTables } from './addon.ts';

/** The tables' arrays as they were bound (the splitter may replace any of them), and the handle. */
interface Bound extends RouteTables {
  handle: NativeRouteTables;
}

const bound = new WeakMap<RouteTables, Bound>();

function bind(t: RouteTables): Bound {
  const { codes, dst, region, lens, deferred, state, last } = t;
  const handle = addon().routeTables(codes, dst, region, lens, deferred, state, last);
  const b = { codes, dst, region, lens, deferred, state, last, handle };
  bound.set(t, b);
  return b;
}

export const nativeRoutePackets: PacketRouter = (src, from, end, t) => {
  let b = bound.get(t);
  if (
    !b ||
    b.dst !== t.dst ||
    b.lens !== t.lens ||
    b.codes !== t.codes ||
    b.region !== t.region ||
    b.deferred !== t.deferred ||
    b.state !== t.state ||
    b.last !== t.last
  ) {
    b = bind(t);
  }
  return addon().routePackets(b.handle, src, from, end);
};
