#include "ts/pid_router.h"

#include <cstdint>
#include <cstring>

#include "util/errors.h"

namespace sluice {
namespace {

constexpr size_t kPacket = 188;
constexpr size_t kPidCount = 8192;
constexpr uint8_t kRouteDefer = 254;
constexpr uint8_t kRouteStop = 255;
constexpr uint8_t kMaxRouteSlot = 250;

}  // namespace

Napi::Value RoutePackets(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 9 || !info[0].IsBuffer() || !info[1].IsNumber() || !info[2].IsNumber() ||
      !info[3].IsTypedArray() || !info[4].IsBuffer() || !info[5].IsNumber() ||
      !info[6].IsTypedArray() || !info[7].IsTypedArray() || !info[8].IsTypedArray()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "routePackets: bad arguments");
  }
  auto src = info[0].As<Napi::Buffer<uint8_t>>();
  const int64_t from = info[1].As<Napi::Number>().Int64Value();
  const int64_t end = info[2].As<Napi::Number>().Int64Value();
  auto codes = info[3].As<Napi::Uint8Array>();
  auto dst = info[4].As<Napi::Buffer<uint8_t>>();
  const int64_t region = info[5].As<Napi::Number>().Int64Value();
  auto lens = info[6].As<Napi::Int32Array>();
  auto deferred = info[7].As<Napi::Int32Array>();
  auto state = info[8].As<Napi::Int32Array>();
  if (from < 0 || end < from || static_cast<size_t>(end) > src.Length() ||
      (end - from) % static_cast<int64_t>(kPacket) != 0 || codes.ElementLength() != kPidCount ||
      region < static_cast<int64_t>(kPacket) || state.ElementLength() < 1) {
    throw CodedError(env, "ERR_NATIVE_ARG", "routePackets: bad offsets or tables");
  }
  const size_t slots = lens.ElementLength();
  if (static_cast<uint64_t>(region) * slots > dst.Length()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "routePackets: dst smaller than its regions");
  }
  const uint8_t* s = src.Data();
  const uint8_t* code = codes.Data();
  uint8_t* d = dst.Data();
  int32_t* fill = lens.Data();
  int32_t* def = deferred.Data();
  const int32_t defCap = static_cast<int32_t>(deferred.ElementLength());
  int32_t& defN = state.Data()[0];
  const size_t reg = static_cast<size_t>(region);
  for (int64_t o = from; o < end; o += kPacket) {
    const uint8_t* p = s + o;
    const unsigned pid = ((p[1] & 0x1fu) << 8) | p[2];
    const uint8_t c = code[pid];
    if (c == 0) continue;
    if (c <= kMaxRouteSlot) {
      const size_t slot = c - 1u;
      if (slot >= slots) return Napi::Number::New(env, static_cast<double>(o));
      const size_t at = static_cast<size_t>(fill[slot]);
      if (at + kPacket > reg) return Napi::Number::New(env, static_cast<double>(o));
      std::memcpy(d + slot * reg + at, p, kPacket);
      fill[slot] = static_cast<int32_t>(at + kPacket);
    } else if (c == kRouteDefer) {
      if (defN >= defCap) return Napi::Number::New(env, static_cast<double>(o));
      def[defN++] = static_cast<int32_t>(o);
    } else {
      return Napi::Number::New(env, static_cast<double>(o));
    }
  }
  return Napi::Number::New(env, static_cast<double>(end));
}

}  // namespace sluice
