// SrtSender: socket set-up (as SrtReceiver's), non-blocking sends of 1316-byte messages (7 TS
// packets) to every connected peer, accept/state polling, per-peer libsrt statistics.
#include "transport/srt_sender.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "transport/srt_hub.h"
#include "util/errors.h"

namespace sluice {

namespace {

constexpr size_t kMessage = 1316;  // 7 × 188: the live-mode payload every SRT peer expects

int IntOf(const Napi::Object& o, const char* key, int def) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Int32Value() : def;
}

std::string StrOf(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
}

std::string AddrString(const sockaddr_storage& ss) {
  char ip[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family != AF_INET) return "";
  const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
  inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
}

[[noreturn]] void ThrowSrt(Napi::Env env, const char* call, const std::string& what = "") {
  int sys = 0;
  srt_getlasterror(&sys);
  std::string msg = std::string(call) + ": " + srt_getlasterror_str();
  if (!what.empty()) msg += " (" + what + ")";
  if (sys != 0) throw CodedError(env, ErrnoName(sys), msg, call);
  throw CodedError(env, "ERR_SRT", msg, call);
}

}  // namespace

Napi::Function SrtSenderWrap::Define(Napi::Env env) {
  return DefineClass(env, "SrtSender",
                     {
                         InstanceMethod("send", &SrtSenderWrap::Send),
                         InstanceMethod("poll", &SrtSenderWrap::Poll),
                         InstanceMethod("stats", &SrtSenderWrap::Stats),
                         InstanceMethod("close", &SrtSenderWrap::Close),
                         InstanceAccessor("port", &SrtSenderWrap::Port, nullptr),
                     });
}

SrtSenderWrap::SrtSenderWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<SrtSenderWrap>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "SrtSender(options)");
  }
  SrtHub::For(env);  // srt_startup (the hub itself stays idle unless a receiver opens)
  Napi::Object o = info[0].As<Napi::Object>();
  listen_ = o.Get("listen").ToBoolean().Value();
  maxCallers_ = IntOf(o, "maxCallers", 16);
  const int port = IntOf(o, "port", 0);
  const std::string address = StrOf(o, "address");
  const std::string bindIf = StrOf(o, "bindIf");
  auto addr = [&](const std::string& ip, int p) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(p));
    if (!ip.empty() && inet_pton(AF_INET, ip.c_str(), &sa.sin_addr) != 1) {
      throw CodedError(env, "ERR_NATIVE_ARG", "not an IPv4 address: " + ip);
    }
    return sa;
  };
  const sockaddr_in remote = addr(listen_ ? "" : address, port);
  const sockaddr_in local = addr(bindIf, listen_ ? port : 0);
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
  const int timeout = IntOf(o, "connectTimeoutMs", 3000);
  if (timeout > 0) set(SRTO_CONNTIMEO, &timeout, sizeof timeout, "SRTO_CONNTIMEO");
  const std::string pass = StrOf(o, "passphrase");
  if (!pass.empty()) {
    set(SRTO_PASSPHRASE, pass.data(), static_cast<int>(pass.size()), "SRTO_PASSPHRASE");
    const int keylen = IntOf(o, "pbkeylen", 16);
    set(SRTO_PBKEYLEN, &keylen, sizeof keylen, "SRTO_PBKEYLEN");
  }
  const std::string sid = StrOf(o, "streamId");
  if (listen_) {
    if (srt_bind(s, reinterpret_cast<const sockaddr*>(&local), sizeof local) < 0) {
      fail("srt_bind", (bindIf.empty() ? std::string("0.0.0.0") : bindIf) + ":" +
                           std::to_string(port));
    }
    sockaddr_in bound{};
    int bl = sizeof bound;
    srt_getsockname(s, reinterpret_cast<sockaddr*>(&bound), &bl);
    boundPort_ = ntohs(bound.sin_port);
    if (srt_listen(s, 8) < 0) fail("srt_listen", "");
    listenSock_ = s;
  } else {
    if (!sid.empty()) set(SRTO_STREAMID, sid.data(), static_cast<int>(sid.size()), "SRTO_STREAMID");
    if (!bindIf.empty() && srt_bind(s, reinterpret_cast<const sockaddr*>(&local), sizeof local) < 0) {
      fail("srt_bind", bindIf);
    }
    if (srt_connect(s, reinterpret_cast<const sockaddr*>(&remote), sizeof remote) < 0) {
      fail("srt_connect", address + ":" + std::to_string(port));
    }
    Peer p;
    p.sock = s;
    p.addr = address + ":" + std::to_string(port);
    peers_.push_back(p);
  }
  open_ = true;
}

SrtSenderWrap::~SrtSenderWrap() { Shutdown(); }

void SrtSenderWrap::Shutdown() {
  if (!open_) return;
  open_ = false;
  for (Peer& p : peers_) srt_close(p.sock);
  peers_.clear();
  if (listenSock_ != SRT_INVALID_SOCK) srt_close(listenSock_);
  listenSock_ = SRT_INVALID_SOCK;
}

Napi::Value SrtSenderWrap::Send(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!open_ || info.Length() < 1 || !info[0].IsBuffer()) return env.Undefined();
  auto buf = info[0].As<Napi::Buffer<uint8_t>>();
  const uint8_t* data = buf.Data();
  size_t len = buf.Length();
  auto sendOne = [&](const uint8_t* m) {
    messages_++;
    bytes_ += kMessage;
    for (Peer& p : peers_) {
      if (!p.connected) continue;
      if (srt_sendmsg2(p.sock, reinterpret_cast<const char*>(m), kMessage, nullptr) < 0) {
        p.sendDrops++;  // the send buffer is full (a slow peer): dropped for that peer only
      }
    }
  };
  if (!pending_.empty()) {
    const size_t take = std::min(kMessage - pending_.size(), len);
    pending_.insert(pending_.end(), data, data + take);
    data += take;
    len -= take;
    if (pending_.size() < kMessage) return env.Undefined();
    sendOne(pending_.data());
    pending_.clear();
  }
  for (; len >= kMessage; data += kMessage, len -= kMessage) sendOne(data);
  if (len > 0) pending_.assign(data, data + len);
  return env.Undefined();
}

/** Accept waiting callers, notice connections made and broken; returns the events:
 *  [{type: 'connected'|'disconnected'|'fault'|'rejected', peer, code?, message?}]. */
Napi::Value SrtSenderWrap::Poll(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  uint32_t n = 0;
  auto event = [&](const char* type, const std::string& peer, const std::string& code,
                   const std::string& message) {
    Napi::Object e = Napi::Object::New(env);
    e.Set("type", type);
    e.Set("peer", peer);
    if (!code.empty()) e.Set("code", code);
    if (!message.empty()) e.Set("message", message);
    out.Set(n++, e);
  };
  if (!open_) return out;
  if (listen_) {
    for (;;) {
      sockaddr_storage ss{};
      int len = sizeof ss;
      SRTSOCKET ns = srt_accept(listenSock_, reinterpret_cast<sockaddr*>(&ss), &len);
      if (ns == SRT_INVALID_SOCK) break;
      const std::string who = AddrString(ss);
      if (static_cast<int>(peers_.size()) >= maxCallers_) {
        srt_close(ns);
        refused_++;
        event("rejected", who, "BUSY", "too many callers");
        continue;
      }
      bool no = false;
      srt_setsockflag(ns, SRTO_SNDSYN, &no, sizeof no);
      Peer p;
      p.sock = ns;
      p.addr = who;
      char sid[513] = "";
      int sidLen = sizeof sid - 1;
      if (srt_getsockflag(ns, SRTO_STREAMID, sid, &sidLen) == 0) sid[sidLen] = 0;
      p.streamId = sid;
      p.connected = true;
      peers_.push_back(p);
      event("connected", who, "", "");
    }
  }
  for (size_t i = 0; i < peers_.size();) {
    Peer& p = peers_[i];
    const SRT_SOCKSTATUS st = srt_getsockstate(p.sock);
    if (!p.connected && st == SRTS_CONNECTED) {
      p.connected = true;
      event("connected", p.addr, "", "");
    }
    const bool broken =
        st == SRTS_BROKEN || st == SRTS_CLOSING || st == SRTS_CLOSED || st == SRTS_NONEXIST;
    if (!broken) {
      i++;
      continue;
    }
    if (p.connected) {
      event("disconnected", p.addr, "DISCONNECTED", "the peer closed the connection");
    } else {
      auto [code, message] = DescribeReject(srt_getrejectreason(p.sock));
      event("fault", p.addr, code, message);
    }
    srt_close(p.sock);
    peers_.erase(peers_.begin() + static_cast<long>(i));
  }
  return out;
}

Napi::Value SrtSenderWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("messages", static_cast<double>(messages_));
  o.Set("bytes", static_cast<double>(bytes_));
  o.Set("refused", static_cast<double>(refused_));
  Napi::Array arr = Napi::Array::New(env);
  uint32_t n = 0;
  for (const Peer& p : peers_) {
    Napi::Object c = Napi::Object::New(env);
    c.Set("peer", p.addr);
    c.Set("connected", p.connected);
    if (!p.streamId.empty()) c.Set("streamId", p.streamId);
    c.Set("sendDrops", static_cast<double>(p.sendDrops));
    SRT_TRACEBSTATS s{};
    if (p.connected && srt_bstats(p.sock, &s, 0) == 0) {
      c.Set("rttMs", s.msRTT);
      c.Set("sendRateMbps", s.mbpsSendRate);
      c.Set("packetsSent", static_cast<double>(s.pktSentTotal));
      c.Set("packetsLost", static_cast<double>(s.pktSndLossTotal));
      c.Set("packetsRetransmitted", static_cast<double>(s.pktRetransTotal));
      c.Set("packetsDropped", static_cast<double>(s.pktSndDropTotal));
      c.Set("bufferMs", s.msSndBuf);
      c.Set("latencyMs", s.msSndTsbPdDelay);
    }
    arr.Set(n++, c);
  }
  o.Set("peers", arr);
  return o;
}

Napi::Value SrtSenderWrap::Close(const Napi::CallbackInfo& info) {
  Shutdown();
  pending_.clear();
  return info.Env().Undefined();
}

Napi::Value SrtSenderWrap::Port(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), boundPort_);
}

}  // namespace sluice
