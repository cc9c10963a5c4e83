#include "ts/pid_router.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "util/errors.h"

namespace sluice {
namespace {

constexpr size_t kPacket = 188;
constexpr size_t kPidCount = 8192;
constexpr uint8_t kRouteDefer = 254;
constexpr uint8_t kMaxRouteSlot = 200;
constexpr uint8_t kRouteTableFirst = 201;
constexpr uint8_t kRouteTableSlots = 52;

/** Packets equal but for the continuity counter (the low half of byte 3). */
inline bool SameButCc(const uint8_t* a, const uint8_t* b) {
  return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && ((a[3] ^ b[3]) & 0xf0) == 0 &&
         std::memcmp(a + 4, b + 4, kPacket - 4) == 0;
}

/** The splitter's tables as routeTables() bound them: raw pointers into backing stores that
 *  the references keep alive (a typed array's backing store never moves once it is off the
 *  heap, and napi_get_typedarray_info takes every one off it). */
struct BoundTables {
  std::vector<Napi::Reference<Napi::Value>> keep;
  const uint8_t* codes = nullptr;
  uint8_t* dst = nullptr;
  size_t region = 0;
  int32_t* lens = nullptr;
  size_t slots = 0;
  int32_t* deferred = nullptr;
  int32_t deferredCap = 0;
  int32_t* state = nullptr;
  uint8_t* last = nullptr;
  size_t lastSlots = 0;
};

Napi::Error BadArg(Napi::Env env, const char* what) {
  return CodedError(env, "ERR_NATIVE_ARG", std::string("routePackets: ") + what);
}

}  // namespace

Napi::Value RouteTables(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 7 || !info[0].IsTypedArray() || !info[1].IsBuffer() ||
      !info[2].IsNumber() || !info[3].IsTypedArray() || !info[4].IsTypedArray() ||
      !info[5].IsTypedArray() || !info[6].IsBuffer()) {
    throw BadArg(env, "bad arguments");
  }
  auto codes = info[0].As<Napi::TypedArray>();
  auto dst = info[1].As<Napi::Buffer<uint8_t>>();
  const int64_t region = info[2].As<Napi::Number>().Int64Value();
  auto lens = info[3].As<Napi::TypedArray>();
  auto deferred = info[4].As<Napi::TypedArray>();
  auto state = info[5].As<Napi::TypedArray>();
  auto last = info[6].As<Napi::Buffer<uint8_t>>();
  if (codes.TypedArrayType() != napi_uint8_array || lens.TypedArrayType() != napi_int32_array ||
      deferred.TypedArrayType() != napi_int32_array || state.TypedArrayType() != napi_int32_array) {
    throw BadArg(env, "bad table types");
  }
  if (codes.ElementLength() != kPidCount || region < static_cast<int64_t>(kPacket) ||
      state.ElementLength() < 1) {
    throw BadArg(env, "bad offsets or tables");
  }
  const size_t slots = lens.ElementLength();
  if (static_cast<uint64_t>(region) * slots > dst.Length()) {
    throw BadArg(env, "dst smaller than its regions");
  }
  auto* t = new BoundTables();
  for (size_t i : {0, 1, 3, 4, 5, 6}) t->keep.push_back(Napi::Persistent(info[i]));  // 2: region
  t->codes = codes.As<Napi::Uint8Array>().Data();
  t->dst = dst.Data();
  t->region = static_cast<size_t>(region);
  t->lens = lens.As<Napi::Int32Array>().Data();
  t->slots = slots;
  t->deferred = deferred.As<Napi::Int32Array>().Data();
  t->deferredCap = static_cast<int32_t>(deferred.ElementLength());
  t->state = state.As<Napi::Int32Array>().Data();
  t->last = last.Data();
  t->lastSlots = last.Length() / kPacket;
  return Napi::External<BoundTables>::New(env, t, [](Napi::Env, BoundTables* b) { delete b; });
}

Napi::Value RoutePackets(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsExternal() || !info[1].IsBuffer() || !info[2].IsNumber() ||
      !info[3].IsNumber()) {
    throw BadArg(env, "bad arguments");
  }
  const BoundTables& t = *info[0].As<Napi::External<BoundTables>>().Data();
  auto src = info[1].As<Napi::Buffer<uint8_t>>();
  const int64_t from = info[2].As<Napi::Number>().Int64Value();
  const int64_t end = info[3].As<Napi::Number>().Int64Value();
  if (from < 0 || end < from || static_cast<size_t>(end) > src.Length() ||
      (end - from) % static_cast<int64_t>(kPacket) != 0) {
    throw BadArg(env, "bad offsets or tables");
  }
  const uint8_t* s = src.Data();
  const uint8_t* code = t.codes;
  uint8_t* d = t.dst;
  int32_t* fill = t.lens;
  int32_t* def = t.deferred;
  int32_t& defN = t.state[0];
  const size_t reg = t.region;
  for (int64_t o = from; o < end; o += kPacket) {
    const uint8_t* p = s + o;
    const unsigned pid = ((p[1] & 0x1fu) << 8) | p[2];
    const uint8_t c = code[pid];
    if (c == 0) continue;
    if (c <= kMaxRouteSlot) {
      const size_t slot = c - 1u;
      if (slot >= t.slots) return Napi::Number::New(env, static_cast<double>(o));
      const size_t at = static_cast<size_t>(fill[slot]);
      if (at + kPacket > reg) return Napi::Number::New(env, static_cast<double>(o));
      std::memcpy(d + slot * reg + at, p, kPacket);
      fill[slot] = static_cast<int32_t>(at + kPacket);
    } else if (c == kRouteDefer ||
               (c >= kRouteTableFirst && c < kRouteTableFirst + kRouteTableSlots)) {
      if (c != kRouteDefer) {
        const size_t k = c - kRouteTableFirst;
        if (k >= t.lastSlots) return Napi::Number::New(env, static_cast<double>(o));
        uint8_t* l = t.last + k * kPacket;
        if (!SameButCc(p, l)) {
          std::memcpy(l, p, kPacket);
          return Napi::Number::New(env, static_cast<double>(o));
        }
      }
      if (defN >= t.deferredCap) return Napi::Number::New(env, static_cast<double>(o));
      def[defN++] = static_cast<int32_t>(o);
    } else {
      return Napi::Number::New(env, static_cast<double>(o));
    }
  }
  return Napi::Number::New(env, static_cast<double>(end));
}

}  // namespace sluice
