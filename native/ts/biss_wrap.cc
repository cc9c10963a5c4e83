// BissDescrambler N-API class: converts between JS values and ts::BissDescrambler.
#include "ts/biss_wrap.h"

#include <cstring>

#include "util/errors.h"

namespace sluice {
namespace {

constexpr size_t kPacket = 188;

Napi::Array PidArray(Napi::Env env, const std::vector<uint16_t>& pids) {
  Napi::Array a = Napi::Array::New(env, pids.size());
  for (uint32_t i = 0; i < pids.size(); i++) a.Set(i, Napi::Number::New(env, pids[i]));
  return a;
}

/** The 8-byte control word of a Buffer argument, or an ERR_NATIVE_ARG. */
void ControlWord(Napi::Env env, const Napi::Value& v, uint8_t cw[8]) {
  if (!v.IsBuffer() || v.As<Napi::Buffer<uint8_t>>().Length() != 8) {
    throw CodedError(env, "ERR_NATIVE_ARG", "a control word is a Buffer of 8 bytes");
  }
  std::memcpy(cw, v.As<Napi::Buffer<uint8_t>>().Data(), 8);
}

}  // namespace

Napi::Function BissDescramblerWrap::Define(Napi::Env env) {
  return DefineClass(env, "BissDescrambler",
                     {
                         InstanceMethod("process", &BissDescramblerWrap::Process),
                         InstanceMethod("stats", &BissDescramblerWrap::Stats),
                         StaticValue("batchSize",
                                     Napi::Number::New(env, ts::BissDescrambler::BatchSize())),
                     });
}

// new BissDescrambler([{ pnr, cw: Buffer(8) }, …]); pnr < 0: the T2-MI carrier
BissDescramblerWrap::BissDescramblerWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<BissDescramblerWrap>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "BissDescrambler needs an array of targets");
  }
  Napi::Array a = info[0].As<Napi::Array>();
  std::vector<ts::BissTargetConfig> targets;
  for (uint32_t i = 0; i < a.Length(); i++) {
    Napi::Value v = a.Get(i);
    if (!v.IsObject()) throw CodedError(env, "ERR_NATIVE_ARG", "a target is an object");
    Napi::Object o = v.As<Napi::Object>();
    ts::BissTargetConfig t;
    Napi::Value pnr = o.Get("pnr");
    if (!pnr.IsNumber()) throw CodedError(env, "ERR_NATIVE_ARG", "a target needs a pnr");
    // 1..65535 a programme, -(n+1) the T2-MI carrier (checked by the façade).
    t.pnr = pnr.As<Napi::Number>().Int32Value();
    ControlWord(env, o.Get("cw"), t.cw);
    targets.push_back(t);
  }
  core_ = std::make_unique<ts::BissDescrambler>(targets);
}

// process(buf): descrambles in place the whole packets of buf (aligned 188-byte packets);
// returns the number of packets descrambled by this call.
Napi::Value BissDescramblerWrap::Process(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsBuffer()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "process() needs a Buffer");
  }
  Napi::Buffer<uint8_t> buf = info[0].As<Napi::Buffer<uint8_t>>();
  const uint64_t before = core_->stats().descrambled;
  core_->Process(buf.Data(), buf.Length() / kPacket);
  return Napi::Number::New(env, static_cast<double>(core_->stats().descrambled - before));
}

Napi::Value BissDescramblerWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ts::BissStats& s = core_->stats();
  Napi::Object o = Napi::Object::New(env);
  o.Set("packets", Napi::Number::New(env, static_cast<double>(s.packets)));
  o.Set("scrambled", Napi::Number::New(env, static_cast<double>(s.scrambled)));
  o.Set("descrambled", Napi::Number::New(env, static_cast<double>(s.descrambled)));
  o.Set("notTargeted", Napi::Number::New(env, static_cast<double>(s.notTargeted)));
  o.Set("reserved", Napi::Number::New(env, static_cast<double>(s.reserved)));
  o.Set("crcErrors", Napi::Number::New(env, static_cast<double>(s.crcErrors)));
  o.Set("patSeen", Napi::Boolean::New(env, s.patSeen));
  o.Set("stillScrambledPids", PidArray(env, core_->StillScrambledPids()));
  std::vector<ts::BissTargetStats> ts = core_->TargetStats();
  Napi::Array targets = Napi::Array::New(env, ts.size());
  for (uint32_t i = 0; i < ts.size(); i++) {
    const ts::BissTargetStats& t = ts[i];
    Napi::Object x = Napi::Object::New(env);
    x.Set("pnr", Napi::Number::New(env, t.pnr));
    x.Set("pmtPid", Napi::Number::New(env, t.pmtPid));
    x.Set("inPat", Napi::Boolean::New(env, t.inPat));
    x.Set("absent", Napi::Boolean::New(env, t.absent));
    x.Set("pids", PidArray(env, t.pids));
    x.Set("descrambled", Napi::Number::New(env, static_cast<double>(t.descrambled)));
    x.Set("pesOk", Napi::Number::New(env, static_cast<double>(t.pesOk)));
    x.Set("pesBad", Napi::Number::New(env, static_cast<double>(t.pesBad)));
    x.Set("stillScrambled", Napi::Number::New(env, static_cast<double>(t.stillScrambled)));
    x.Set("clear", Napi::Number::New(env, static_cast<double>(t.clear)));
    x.Set("lastBad", Napi::Boolean::New(env, t.lastBad));
    x.Set("checked", Napi::Boolean::New(env, t.checked));
    targets.Set(i, x);
  }
  o.Set("targets", targets);
  return o;
}

Napi::Value BissScramble(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsBuffer() || !info[2].IsArray() || !info[3].IsNumber()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "bissScramble(buf, cw, pids, tsc)");
  }
  Napi::Buffer<uint8_t> buf = info[0].As<Napi::Buffer<uint8_t>>();
  uint8_t cw[8];
  ControlWord(env, info[1], cw);
  std::vector<bool> mask(8192, false);
  Napi::Array pids = info[2].As<Napi::Array>();
  for (uint32_t i = 0; i < pids.Length(); i++) {
    Napi::Value v = pids.Get(i);
    if (v.IsNumber()) mask[v.As<Napi::Number>().Uint32Value() & 0x1FFF] = true;
  }
  const uint8_t tsc = static_cast<uint8_t>(info[3].As<Napi::Number>().Uint32Value() & 3);
  const size_t n = ts::BissScramble(buf.Data(), buf.Length() / kPacket, cw, mask, tsc);
  return Napi::Number::New(env, static_cast<double>(n));
}

}  // namespace sluice
