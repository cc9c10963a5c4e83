// Per-packet routing of a multiplex to its programme consumers (src/mpegts/programme-splitter.ts
// drives it): the hot loop of the demuxer, a PID lookup and a 188-byte copy per packet.
#pragma once
#include <napi.h>

namespace sluice {

/**
 * routeTables(codes, dst, region, lens, deferred, state, last) → tables: the splitter's tables
 * bound once (kept alive by the returned handle), so a routing call reads no typed array of its
 * own: unpacking them cost ~450 ns a call, ~15 % of the demuxer's time (bench/demux.ts).
 */
Napi::Value RouteTables(const Napi::CallbackInfo& info);

/**
 * routePackets(tables, src, from, end) → offset.
 * From byte `from` up to `end` of `src` (whole packets), each packet's PID picks a code in
 * `codes` (Uint8Array of 8192): 0 drop; 1..kMaxRouteSlot (200) copy into slot code−1's region
 * of `dst` ([slot × region, +region), its fill in lens[slot]); kRouteDefer (254) note the
 * offset in `deferred` (count in state[0]); kRouteTableFirst + k (201..252): a table PID whose
 * last packet is last[k × 188, +188): a packet equal to it but for the continuity counter is
 * noted as kRouteDefer notes, any other is copied there and returned at; 255 (and any other
 * code) return here. Also returns at a packet whose slot region is full or when `deferred` is
 * full; returns `end` when every packet was routed.
 */
Napi::Value RoutePackets(const Napi::CallbackInfo& info);

}  // namespace sluice
