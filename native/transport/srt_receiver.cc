// SrtReceiver: socket set-up (options, bind, listen with an admission callback, or a
// non-blocking connect), registration with the shared SRT receive thread (srt_hub.cc), the
// libsrt statistics, and the hand-off of batches and events to JS.
#include "transport/srt_receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <syslog.h>
#include <unordered_set>

#include "util/errors.h"

namespace sluice {

namespace {


int IntOf(const Napi::Object& o, const char* key, int def) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Int32Value() : def;
}

std::string StrOf(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
}

sockaddr_in Addr(Napi::Env env, const std::string& ip, int port, const char* what) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (!ip.empty() && inet_pton(AF_INET, ip.c_str(), &sa.sin_addr) != 1) {
    throw CodedError(env, "ERR_NATIVE_ARG", std::string(what) + " is not an IPv4 address: " + ip);
  }
  return sa;
}

/** A libsrt failure as a coded JS error: the system errno's name when there is one. */
[[noreturn]] void ThrowSrt(Napi::Env env, const char* call, const std::string& what = "") {
  int sys = 0;
  srt_getlasterror(&sys);
  std::string msg = std::string(call) + ": " + srt_getlasterror_str();
  if (!what.empty()) msg += " (" + what + ")";
  if (sys != 0) throw CodedError(env, ErrnoName(sys), msg, call);
  throw CodedError(env, "ERR_SRT", msg, call);
}

/** The value of key `k` in an SRT Access Control stream id (`#!::k=v,k=v`), or "". */
std::string AcValue(const std::string& sid, const std::string& k) {
  if (sid.rfind("#!::", 0) != 0) return "";
  size_t pos = 4;
  while (pos <= sid.size()) {
    size_t end = sid.find(',', pos);
    if (end == std::string::npos) end = sid.size();
    std::string item = sid.substr(pos, end - pos);
    size_t eq = item.find('=');
    if (eq != std::string::npos && item.substr(0, eq) == k) return item.substr(eq + 1);
    pos = end + 1;
  }
  return "";
}

/** Does a caller's stream id satisfy the expected one? Exact match, or — when the expected one
 *  is a plain login — an Access Control stream id whose user (`u=`) is that login. */
bool StreamIdMatches(const std::string& expected, const std::string& got) {
  if (got == expected) return true;
  if (expected.rfind("#!::", 0) == 0) return false;
  return AcValue(got, "u") == expected;
}

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
  std::string who;
  {
    char ip[INET6_ADDRSTRLEN] = "";
    if (peer->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(peer)->sin_addr, ip, sizeof ip);
    }
    who = ip;
  }
  const std::string sid = streamid ? streamid : "";
  int reason = 0;
  std::string why;
  if (s->hasPeerFilter) {
    const auto* want = reinterpret_cast<const sockaddr_in*>(&s->peerFilter);
    if (peer->sa_family != AF_INET ||
        reinterpret_cast<const sockaddr_in*>(peer)->sin_addr.s_addr != want->sin_addr.s_addr) {
      reason = SRT_REJX_FORBIDDEN;
      why = "caller " + who + " refused: not the permitted address (1403)";
    }
  }
  if (!reason && !s->expectStreamId.empty() && !StreamIdMatches(s->expectStreamId, sid)) {
    reason = SRT_REJX_UNAUTHORIZED;
    why = "caller " + who + " refused: stream id \"" + sid + "\" is not the expected one (1401)";
  }
  if (!reason && s->busy.load()) {
    reason = SRT_REJX_CONFLICT;
    why = "caller " + who + " refused: the input already has a caller (1409)";
  }
  if (!reason) {
    tAdmitted = s;
    tAdmittedPeer = who;
    return 0;
  }
  tAdmitted = nullptr;
  srt_setrejectreason(ns, reason);
  Record(s, why);
  return -1;
}

}  // namespace

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
  std::call_once(gLogOnce, [] {
    srt_setloghandler(nullptr, LogHook);
    srt_setloglevel(LOG_WARNING);  // the REJECT notices are warnings
  });
  state_ = std::make_shared<SrtState>();
  state_->listener = o.Get("listen").ToBoolean().Value();
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
  const int port = IntOf(o, "port", 0);
  const std::string address = StrOf(o, "address");
  const std::string bindIf = StrOf(o, "bindIf");
  const sockaddr_in remote = Addr(env, address, port, "address");
  const sockaddr_in local = Addr(env, bindIf, listen ? port : 0, "bindIf");
  SRTSOCKET s = srt_create_socket();
  if (s == SRT_INVALID_SOCK) ThrowSrt(env, "srt_create_socket");
  auto fail = [&](const char* call, const std::string& what) {
    try {
      ThrowSrt(env, call, what);
    } catch (...) {
      srt_close(s);
      throw;
    }
  };
  auto set = [&](SRT_SOCKOPT opt, const void* v, int len, const char* name) {
    if (srt_setsockflag(s, opt, v, len) < 0) fail("srt_setsockflag", name);
  };
  const bool no = false;
  const int32_t live = SRTT_LIVE;
  set(SRTO_TRANSTYPE, &live, sizeof live, "SRTO_TRANSTYPE");
  set(SRTO_RCVSYN, &no, sizeof no, "SRTO_RCVSYN");
  set(SRTO_SNDSYN, &no, sizeof no, "SRTO_SNDSYN");
  const int latency = IntOf(o, "latencyMs", 120);
  set(SRTO_LATENCY, &latency, sizeof latency, "SRTO_LATENCY");
  const int ttl = IntOf(o, "lossMaxTtl", 0);
  set(SRTO_LOSSMAXTTL, &ttl, sizeof ttl, "SRTO_LOSSMAXTTL");
  const int overhead = IntOf(o, "overheadPct", 25);
  set(SRTO_OHEADBW, &overhead, sizeof overhead, "SRTO_OHEADBW");
  Napi::Value mbw = o.Get("maxBw");
  const int64_t maxBw = mbw.IsNumber() ? mbw.As<Napi::Number>().Int64Value() : 0;
  set(SRTO_MAXBW, &maxBw, sizeof maxBw, "SRTO_MAXBW");
  const int timeout = IntOf(o, "connectTimeoutMs", 3000);
  if (timeout > 0) set(SRTO_CONNTIMEO, &timeout, sizeof timeout, "SRTO_CONNTIMEO");
  const bool tsbpd = o.Get("tsbpd").ToBoolean().Value();
  set(SRTO_TSBPDMODE, &tsbpd, sizeof tsbpd, "SRTO_TSBPDMODE");
  const std::string pass = StrOf(o, "passphrase");
  if (!pass.empty()) {
    set(SRTO_PASSPHRASE, pass.data(), static_cast<int>(pass.size()), "SRTO_PASSPHRASE");
    const int keylen = IntOf(o, "pbkeylen", 16);
    set(SRTO_PBKEYLEN, &keylen, sizeof keylen, "SRTO_PBKEYLEN");
  }
  const std::string sid = StrOf(o, "streamId");
  if (listen) {
    // SRTO_REUSEADDR stays on (libsrt's default): a second listener on a port in use fails at
    // srt_listen ("already listening"), and a port a closed listener held binds again at once
    // (with it off, the old UDP socket lingers until libsrt's collector runs, ~1 s).
    state_->expectStreamId = sid;
    if (!address.empty()) {
      state_->hasPeerFilter = true;
      std::memcpy(&state_->peerFilter, &remote, sizeof remote);
    }
    if (srt_bind(s, reinterpret_cast<const sockaddr*>(&local), sizeof local) < 0) {
      fail("srt_bind", (bindIf.empty() ? std::string("0.0.0.0") : bindIf) + ":" +
                           std::to_string(port));
    }
    sockaddr_in bound{};
    int bl = sizeof bound;
    srt_getsockname(s, reinterpret_cast<sockaddr*>(&bound), &bl);
    boundPort_ = ntohs(bound.sin_port);
    if (srt_listen_callback(s, ListenHook, state_.get()) < 0) fail("srt_listen_callback", "");
    if (srt_listen(s, 4) < 0) fail("srt_listen", "");
    state_->listenSock = s;
  } else {
    if (!sid.empty()) set(SRTO_STREAMID, sid.data(), static_cast<int>(sid.size()), "SRTO_STREAMID");
    if (!bindIf.empty() && srt_bind(s, reinterpret_cast<const sockaddr*>(&local), sizeof local) < 0) {
      fail("srt_bind", bindIf);
    }
    if (srt_connect(s, reinterpret_cast<const sockaddr*>(&remote), sizeof remote) < 0) {
      fail("srt_connect", address + ":" + std::to_string(port));
    }
    state_->dialSock = s;
    state_->remote = address + ":" + std::to_string(port);
  }
  return s;
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
