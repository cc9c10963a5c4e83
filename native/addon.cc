// sluice native addon: the one registration point for every native class and function.
#include <napi.h>

#include "dvb/ca.h"
#include "dvb/dvr.h"
#include "dvb/frontend.h"
#include "fs/durable_write.h"
#include "fs/file_lock.h"
#include "mem/pages.h"
#include "net/live_http.h"
#include "net/socket_opts.h"
#include "net/udp_receiver.h"
#include "transport/rist_receiver.h"
#include "transport/rist_sender.h"
#include "transport/srt_receiver.h"
#include "transport/srt_sender.h"
#include "ts/pid_router.h"
#include "ts/biss_wrap.h"
#include "ts/ts_analyzer.h"
#include "util/thread_name.h"

namespace {

Napi::Value Version(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), "sluice-native 0.2.0");
}

/** The UDP receive hub's next drain slice (scheduled by its pump, src/native/udp.ts). */
Napi::Value UdpDrain(const Napi::CallbackInfo& info) {
  std::shared_ptr<sluice::UdpHub> hub = sluice::UdpHub::Existing(info.Env());
  if (hub) hub->Pump(info.Env());
  return info.Env().Undefined();
}

/** The SRT receive hub's next drain slice (scheduled by its pump, src/native/srt.ts). */
Napi::Value SrtDrain(const Napi::CallbackInfo& info) {
  std::shared_ptr<sluice::SrtHub> hub = sluice::SrtHub::Existing(info.Env());
  if (hub) hub->Pump(info.Env());
  return info.Env().Undefined();
}

/** Names the calling thread (a stream worker names its JavaScript thread `sluice-js-N`). */
Napi::Value NameThisThread(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(info.Env(), "nameThread: a name is required").ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  sluice::NameThread(info[0].As<Napi::String>().Utf8Value().c_str());
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("version", Napi::Function::New(env, Version, "version"));
  exports.Set("nameThread", Napi::Function::New(env, NameThisThread, "nameThread"));
  exports.Set("TsAnalyzer", sluice::TsAnalyzerWrap::Define(env));
  exports.Set("LiveHttp", sluice::LiveHttp::Define(env));
  exports.Set("UdpReceiver", sluice::UdpReceiverWrap::Define(env));
  exports.Set("RistReceiver", sluice::RistReceiverWrap::Define(env));
  exports.Set("RistSender", sluice::RistSenderWrap::Define(env));
  exports.Set("udpDrain", Napi::Function::New(env, UdpDrain, "udpDrain"));
  exports.Set("SrtReceiver", sluice::SrtReceiverWrap::Define(env));
  exports.Set("SrtSender", sluice::SrtSenderWrap::Define(env));
  exports.Set("srtDrain", Napi::Function::New(env, SrtDrain, "srtDrain"));
  exports.Set("routeTables", Napi::Function::New(env, sluice::RouteTables, "routeTables"));
  exports.Set("routePackets", Napi::Function::New(env, sluice::RoutePackets, "routePackets"));
  exports.Set("writeDurable", Napi::Function::New(env, sluice::WriteDurable, "writeDurable"));
  exports.Set("writeDurableStats",
              Napi::Function::New(env, sluice::WriteDurableStats, "writeDurableStats"));
  exports.Set("lockFile", Napi::Function::New(env, sluice::LockFile, "lockFile"));
  exports.Set("mapBlock", Napi::Function::New(env, sluice::MapBlock, "mapBlock"));
  exports.Set("discardPages", Napi::Function::New(env, sluice::DiscardPages, "discardPages"));
  exports.Set("residentBytes", Napi::Function::New(env, sluice::ResidentBytes, "residentBytes"));
  exports.Set("BissDescrambler", sluice::BissDescramblerWrap::Define(env));
  exports.Set("bissScramble", Napi::Function::New(env, sluice::BissScramble, "bissScramble"));
  exports.Set("DvbFrontend", sluice::DvbFrontendWrap::Define(env));
  exports.Set("DvbDvr", sluice::DvbDvrWrap::Define(env));
  exports.Set("DvbCa", sluice::DvbCaWrap::Define(env));
  exports.Set("setRecvLowWater",
              Napi::Function::New(env, sluice::SetRecvLowWater, "setRecvLowWater"));
  exports.Set("recvLowWater", Napi::Function::New(env, sluice::RecvLowWater, "recvLowWater"));
  exports.Set("dvbConstants", Napi::Function::New(env, sluice::DvbConstants, "dvbConstants"));
  return exports;
}

}  // namespace

NODE_API_MODULE(sluice_native, Init)
