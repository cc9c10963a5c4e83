// SrtReceiver: socket set-up (options, bind, listen with an admission callback, or a
// non-blocking connect), registration with the shared SRT receive thread (srt_hub.cc), the
// libsrt statistics, and the hand-off of batches and events to JS.
#include "transport/srt_receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <syslog.h>
#include <unordered_set>

#include "transport/srt_common.h"
#include "util/errors.h"
#include "util/options.h"

namespace sluice {

namespace {


// A wrong passphrase is found by libsrt after the listen callback admitted the caller, on the
// same libsrt thread, and is reported only in its log: the log handler attributes such a
// rejection to the listener whose callback last admitted a caller on this thread.
std::mutex gLiveMu;
std::unordered_set<SrtState*> gLive;  // receivers open now (under gLiveMu)
thread_local SrtState* tAdmitted = nullptr;
thread_local std::string tAdmittedPeer;

void Record(SrtState* s, const std::string& why) {
  s->rejected++;
  std::lock_guard<std::mutex> lock(s->rejMu);
  if (s->rejects.size() < 16) s->rejects.push_back(why);
  else s->rejects.back() = why;
}

/** libsrt's log, never written to stderr: read for the rejections only it reports. */
void LogHook(void*, int, const char*, int, const char*, const char* message) {
  SrtState* s = tAdmitted;
  if (!s || !message) return;
  const std::string m = message;
  if (m.find("REJECT") == std::string::npos) return;
  std::string why;
  if (m.find(srt_rejectreason_str(SRT_REJ_BADSECRET)) != std::string::npos) {
    why = "wrong passphrase (BADSECRET)";
  } else if (m.find(srt_rejectreason_str(SRT_REJ_UNSECURE)) != std::string::npos) {
    why = "encryption mismatch (UNSECURE): one end has a passphrase and the other none";
  } else {
    return;
  }
  tAdmitted = nullptr;
  std::lock_guard<std::mutex> lock(gLiveMu);
  if (gLive.count(s)) Record(s, "caller " + tAdmittedPeer + " refused: " + why);
}

std::once_flag gLogOnce;

/** libsrt's listen callback (its own thread): admit at most one caller, from the permitted
 *  address, with the expected stream id; otherwise reject with a reason the caller sees. */
int ListenHook(void* opaq, SRTSOCKET ns, int, const sockaddr* peer, const char* streamid) {
  auto* s = static_cast<SrtState*>(opaq);
  const std::string sid = streamid ? streamid : "";
  std::string why;
  int reason = s->admit.Check(peer, sid, why);
  if (!reason && s->busy.load()) {
    reason = SRT_REJX_CONFLICT;
    why = "caller " + PeerIp(peer) + " refused: the input already has a caller (1409)";
  }
  if (!reason) {
    tAdmitted = s;
    tAdmittedPeer = PeerIp(peer);
    return 0;
  }
  tAdmitted = nullptr;
  srt_setrejectreason(ns, reason);
  Record(s, why);
  return -1;
}

}  // namespace

void InstallSrtLogHook() {
  std::call_once(gLogOnce, [] {
    srt_setloghandler(nullptr, LogHook);
    srt_setloglevel(LOG_WARNING);  // the REJECT notices are warnings
  });
}

Napi::Function SrtReceiverWrap::Define(Napi::Env env) {
  return DefineClass(env, "SrtReceiver",
                     {
                         InstanceMethod("stats", &SrtReceiverWrap::Stats),
                         InstanceMethod("close", &SrtReceiverWrap::Close),
                         InstanceAccessor("port", &SrtReceiverWrap::Port, nullptr),
                     });
}

SrtReceiverWrap::SrtReceiverWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<SrtReceiverWrap>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "SrtReceiver(options, onEvent)");
  }
  Napi::Object o = info[0].As<Napi::Object>();
  hub_ = SrtHub::For(env);  // srt_startup before the first socket
  InstallSrtLogHook();
  state_ = std::make_shared<SrtState>();
  state_->listener = BoolOf(o, "listen");
  state_->opts.batchMessages = IntOf(o, "batchMessages", state_->opts.batchMessages);
  state_->opts.batchLatencyMs = IntOf(o, "batchLatencyMs", state_->opts.batchLatencyMs);
  state_->opts.queueBatches = IntOf(o, "queueBatches", state_->opts.queueBatches);
  Napi::Value pump = o.Get("pump");
  SRTSOCKET sock = Open(env, o);
  try {
    hub_->Add(env, state_, pump.IsFunction() ? pump.As<Napi::Function>() : Napi::Function());
  } catch (...) {
    srt_close(sock);
    throw;
  }
  onEvent_ = Napi::Persistent(info[1].As<Napi::Function>());
  state_->wrap = this;
  {
    std::lock_guard<std::mutex> lock(gLiveMu);
    gLive.insert(state_.get());
  }
  open_ = true;
  Ref();  // an open receiver lives (and keeps the loop alive) until close()
}

SRTSOCKET SrtReceiverWrap::Open(Napi::Env env, const Napi::Object& o) {
  const bool listen = state_->listener;
  if (listen) {
    // Admission is read by the listen callback from the moment srt_listen runs: set it first.
    const std::string address = StrOf(o, "address");
    state_->admit.expectStreamId = StrOf(o, "streamId");
    state_->admit.peerProof = StrOf(o, "peerProof");
    if (!address.empty()) {
      state_->admit.hasPeerFilter = true;
      state_->admit.peerFilter = Ipv4(env, address, 0, "address");
    }
  }
  const SrtOpened r = OpenSrtSocket(env, o, listen, 4, listen ? ListenHook : nullptr, state_.get());
  if (listen) {
    boundPort_ = r.boundPort;
    state_->listenSock = r.sock;
  } else {
    state_->dialSock = r.sock;
    state_->remote = r.remote;
  }
  return r.sock;
}

SrtReceiverWrap::~SrtReceiverWrap() { Shutdown(); }

void SrtReceiverWrap::Shutdown() {
  if (!open_) return;
  open_ = false;
  {
    std::lock_guard<std::mutex> lock(gLiveMu);
    gLive.erase(state_.get());
  }
  state_->wrap = nullptr;
  hub_->Remove(state_);  // closes the sockets; the thread stops if this was the last receiver
  onEvent_.Reset();
}

Napi::Value SrtReceiverWrap::Close(const Napi::CallbackInfo& info) {
  if (open_) {
    Shutdown();
    Unref();
    slab_.Reset();
  }
  return info.Env().Undefined();
}

Napi::Value SrtReceiverWrap::Port(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), boundPort_);
}

Napi::Value SrtReceiverWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  SrtState& s = *state_;
  SRT_TRACEBSTATS p{};
  bool have = false;
  bool connected = false;
  {
    std::lock_guard<std::mutex> lock(s.sockMu);
    if (s.dataSock != SRT_INVALID_SOCK && srt_bstats(s.dataSock, &p, 0) == 0) {
      have = true;
      connected = srt_getsockstate(s.dataSock) == SRTS_CONNECTED;
    } else if (s.hasLast) {
      p = s.last;
      have = true;
    }
  }
  o.Set("connected", connected);
  o.Set("messages", static_cast<double>(s.messages.load()));
  o.Set("bytes", static_cast<double>(s.bytes.load()));
  o.Set("batches", static_cast<double>(s.batches.load()));
  o.Set("queueDrops", static_cast<double>(s.queueDrops.load()));
  o.Set("queued", static_cast<double>(s.queued.load()));
  o.Set("accepted", static_cast<double>(s.accepted.load()));
  o.Set("rejected", static_cast<double>(s.rejected.load()));
  if (have) {
    o.Set("rttMs", p.msRTT);
    o.Set("recvRateMbps", p.mbpsRecvRate);
    o.Set("bandwidthMbps", p.mbpsBandwidth);
    o.Set("packetsReceived", static_cast<double>(p.pktRecvTotal));
    o.Set("packetsLost", static_cast<double>(p.pktRcvLossTotal));
    o.Set("packetsRetransmitted", static_cast<double>(p.pktRcvRetrans));
    o.Set("packetsDropped", static_cast<double>(p.pktRcvDropTotal));
    o.Set("packetsBelated", static_cast<double>(p.pktRcvBelated));
    o.Set("packetsUndecrypted", static_cast<double>(p.pktRcvUndecryptTotal));
    o.Set("bufferMs", p.msRcvBuf);
    o.Set("bufferAvailableBytes", p.byteAvailRcvBuf);
    o.Set("latencyMs", p.msRcvTsbPdDelay);
  }
  return o;
}

void SrtReceiverWrap::Emit(Napi::Env env, SrtItem* b) {
  std::unique_ptr<SrtItem> own(b);
  Napi::Function cb = onEvent_.Value();
  if (b->kind != SrtItem::kData) {
    cb.Call({Napi::Number::New(env, b->kind), Napi::String::New(env, b->code),
             Napi::String::New(env, b->message), Napi::String::New(env, b->peer),
             Napi::String::New(env, b->streamId)});
    return;
  }
  // As UdpReceiver: copied into this receiver's one reused block [data | pad | int32 lengths].
  const size_t count = b->lengths.size();
  const size_t dataLen = b->data.size();
  Napi::ArrayBuffer ab = slab_.Fill(env, b->data.data(), dataLen, b->lengths.data(), count);
  cb.Call({Napi::Number::New(env, 0), ab, Napi::Number::New(env, static_cast<double>(count)),
           Napi::Number::New(env, static_cast<double>(dataLen))});
}

}  // namespace sluice
