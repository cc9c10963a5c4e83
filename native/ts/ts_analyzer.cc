// TsAnalyzer N-API class: converts between JS values and ts::Analyzer.
#include "ts/ts_analyzer.h"

#include "util/errors.h"

namespace sluice {
namespace {

double NumberOr(const Napi::Object& o, const char* key, double def) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : def;
}

bool BoolOr(const Napi::Object& o, const char* key, bool def) {
  Napi::Value v = o.Get(key);
  return v.IsBoolean() ? v.As<Napi::Boolean>().Value() : def;
}

}  // namespace

Napi::Function TsAnalyzerWrap::Define(Napi::Env env) {
  return DefineClass(env, "TsAnalyzer",
                     {
                         InstanceMethod("takeSections", &TsAnalyzerWrap::TakeSections),
                         InstanceMethod("stats", &TsAnalyzerWrap::Stats),
                         InstanceMethod("programs", &TsAnalyzerWrap::Programs),
                         InstanceMethod("reset", &TsAnalyzerWrap::Reset),
                     });
}

TsAnalyzerWrap::TsAnalyzerWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<TsAnalyzerWrap>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "TsAnalyzer needs an options object");
  }
  Napi::Object o = info[0].As<Napi::Object>();
  ts::Options opts;
  opts.dropNull = BoolOr(o, "dropNull", false);
  opts.tr101290 = BoolOr(o, "tr101290", true);
  opts.psiAll = BoolOr(o, "psiAll", false);
  opts.pidTimeoutMs = NumberOr(o, "pidTimeoutMs", opts.pidTimeoutMs);
  opts.patTimeoutMs = NumberOr(o, "patTimeoutMs", opts.patTimeoutMs);
  opts.ptsTimeoutMs = NumberOr(o, "ptsTimeoutMs", opts.ptsTimeoutMs);
  Napi::Value pids = o.Get("psiPids");
  if (pids.IsArray()) {
    Napi::Array a = pids.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); i++) {
      Napi::Value v = a.Get(i);
      if (!v.IsNumber()) continue;
      uint32_t pid = v.As<Napi::Number>().Uint32Value();
      if (pid < ts::kPidCount) opts.psiPids.push_back(static_cast<uint16_t>(pid));
    }
  }
  Napi::Value meta = o.Get("meta");
  if (!meta.IsTypedArray() || meta.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array ||
      meta.As<Napi::TypedArray>().ElementLength() < 3) {
    throw CodedError(env, "ERR_NATIVE_ARG", "options.meta must be an Int32Array(3)");
  }
  metaRef_ = Napi::Persistent(meta.As<Napi::Object>());
  meta_ = meta.As<Napi::Int32Array>().Data();
  analyzer_ = std::make_unique<ts::Analyzer>(std::move(opts));
  napi_value push;
  if (napi_create_function(env, "push", NAPI_AUTO_LENGTH, &TsAnalyzerWrap::FastPush, this, &push) !=
      napi_ok) {
    throw CodedError(env, "ERR_NATIVE_INTERNAL", "cannot create push()");
  }
  info.This().As<Napi::Object>().Set("push", Napi::Value(env, push));
}

// push(chunk, nowMs) → Buffer (copied packets) or undefined (the packets are
// chunk[meta[0], meta[1]), meta being the Int32Array(3) given to the constructor); meta[2] is
// set to the number of sections waiting for takeSections().
// The one call per batch on the hot path, so written against the raw N-API: it is installed
// as an own property of each instance with the instance as its data, which spares the
// ObjectWrap unwrap and node-addon-api's argument objects (about a third of the call cost).
// Only the façade calls it, on the object that owns it.
napi_value TsAnalyzerWrap::FastPush(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 2;
  napi_value argv[2];
  void* data = nullptr;
  napi_value result = nullptr;
  if (napi_get_cb_info(env, cbinfo, &argc, argv, nullptr, &data) != napi_ok) return nullptr;
  auto* self = static_cast<TsAnalyzerWrap*>(data);
  void* bytes = nullptr;
  size_t len = 0;
  double now = 0;
  if (argc < 2 || napi_get_buffer_info(env, argv[0], &bytes, &len) != napi_ok ||
      napi_get_value_double(env, argv[1], &now) != napi_ok) {
    napi_throw_error(env, "ERR_NATIVE_ARG", "push(chunk: Buffer, nowMs: number)");
    return nullptr;
  }
  try {
    self->out_.clear();
    bool copied = false;
    size_t begin = 0, end = 0;
    self->analyzer_->Push(static_cast<const uint8_t*>(bytes), len, now, &self->out_, &copied,
                          &begin, &end);
    // Sections waiting: lets the façade's takeSections() skip the crossing when there are none.
    self->meta_[2] = static_cast<int32_t>(self->analyzer_->QueuedSections());
    if (copied) {
      void* copy = nullptr;
      napi_create_buffer_copy(env, self->out_.size(), self->out_.data(), &copy, &result);
      return result;
    }
    self->meta_[0] = static_cast<int32_t>(begin);
    self->meta_[1] = static_cast<int32_t>(end);
  } catch (const std::exception& e) {
    napi_throw_error(env, "ERR_NATIVE_INTERNAL", e.what());
    return nullptr;
  }
  napi_get_undefined(env, &result);
  return result;
}

Napi::Value TsAnalyzerWrap::TakeSections(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<ts::QueuedSection> secs = analyzer_->TakeSections();
  Napi::Array arr = Napi::Array::New(env, secs.size());
  for (size_t i = 0; i < secs.size(); i++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("pid", secs[i].pid);
    o.Set("tableId", secs[i].tableId);
    o.Set("data", Napi::Buffer<uint8_t>::Copy(env, secs[i].data.data(), secs[i].data.size()));
    arr.Set(static_cast<uint32_t>(i), o);
  }
  return arr;
}

Napi::Value TsAnalyzerWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ts::Counters& c = analyzer_->counters();
  const ts::Tr101290& t = analyzer_->tr();
  Napi::Object o = Napi::Object::New(env);
  auto num = [&](Napi::Object& obj, const char* k, double v) { obj.Set(k, Napi::Number::New(env, v)); };
  num(o, "packets", c.packets);
  num(o, "bytes", c.bytes);
  num(o, "nullPackets", c.nullPackets);
  num(o, "junkBytes", c.junkBytes);
  num(o, "syncLosses", c.syncLosses);
  num(o, "crcErrors", c.crcErrors);
  num(o, "sectionsDropped", c.sectionsDropped);
  num(o, "pcrBitrate", c.pcrBitrate);
  num(o, "arrivalBitrate", c.arrivalBitrate);
  Napi::Object tr = Napi::Object::New(env);
  num(tr, "tsSyncLoss", t.tsSyncLoss);
  num(tr, "syncByteError", t.syncByteError);
  num(tr, "patError", t.patError);
  num(tr, "continuityCountError", t.continuityCountError);
  num(tr, "pmtError", t.pmtError);
  num(tr, "pidError", t.pidError);
  num(tr, "transportError", t.transportError);
  num(tr, "crcError", t.crcError);
  num(tr, "pcrRepetitionError", t.pcrRepetitionError);
  num(tr, "pcrDiscontinuityIndicatorError", t.pcrDiscontinuityIndicatorError);
  num(tr, "pcrAccuracyError", t.pcrAccuracyError);
  num(tr, "ptsError", t.ptsError);
  num(tr, "catError", t.catError);
  o.Set("tr101290", tr);
  std::vector<uint16_t> pids = analyzer_->activePids();
  std::sort(pids.begin(), pids.end());
  Napi::Array arr = Napi::Array::New(env, pids.size());
  for (size_t i = 0; i < pids.size(); i++) {
    const ts::PidState& st = analyzer_->pid(pids[i]);
    Napi::Object p = Napi::Object::New(env);
    num(p, "pid", pids[i]);
    num(p, "packets", st.packets);
    num(p, "ccErrors", st.ccErrors);
    num(p, "scrambled", st.scrambling);
    num(p, "scrambledPackets", st.scrambledPackets);
    num(p, "transportErrors", st.transportErrors);
    p.Set("hasPcr", Napi::Boolean::New(env, st.hasPcr));
    num(p, "lastPcr", static_cast<double>(st.lastPcr));
    num(p, "pcrJitterNs", st.pcrJitterNs);
    num(p, "bitrate", st.bitrate);
    arr.Set(static_cast<uint32_t>(i), p);
  }
  o.Set("pids", arr);
  return o;
}

Napi::Value TsAnalyzerWrap::Programs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& progs = analyzer_->programs();
  const auto& services = analyzer_->services();
  Napi::Array arr = Napi::Array::New(env, progs.size());
  uint32_t i = 0;
  for (const auto& [pnr, prog] : progs) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("pnr", pnr);
    o.Set("pmtPid", prog.pmtPid);
    o.Set("pcrPid", prog.version >= 0 ? prog.pmt.pcrPid : 0x1FFF);
    o.Set("version", prog.version);
    auto svc = services.find(pnr);
    o.Set("serviceName", svc != services.end() ? svc->second.name : "");
    o.Set("providerName", svc != services.end() ? svc->second.provider : "");
    o.Set("serviceType", svc != services.end() ? svc->second.serviceType : 0);
    Napi::Array streams = Napi::Array::New(env, prog.pmt.streams.size());
    for (size_t k = 0; k < prog.pmt.streams.size(); k++) {
      const ts::EsInfo& es = prog.pmt.streams[k];
      Napi::Object s = Napi::Object::New(env);
      s.Set("pid", es.pid);
      s.Set("streamType", es.streamType);
      Napi::Array tags = Napi::Array::New(env, es.descriptors.size());
      for (size_t d = 0; d < es.descriptors.size(); d++) {
        tags.Set(static_cast<uint32_t>(d), es.descriptors[d]);
      }
      s.Set("descriptors", tags);
      s.Set("registration", es.registration);
      s.Set("language", es.language);
      streams.Set(static_cast<uint32_t>(k), s);
    }
    o.Set("streams", streams);
    arr.Set(i++, o);
  }
  return arr;
}

Napi::Value TsAnalyzerWrap::Reset(const Napi::CallbackInfo& info) {
  analyzer_->Reset();
  return info.Env().Undefined();
}

}  // namespace sluice
