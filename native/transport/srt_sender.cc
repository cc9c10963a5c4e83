// SrtSender: socket set-up (as SrtReceiver's), non-blocking sends of 1316-byte messages (7 TS
// packets) to every connected peer, accept/state polling, per-peer libsrt statistics.
#include "transport/srt_sender.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <mutex>
#include <unordered_set>

#include "transport/srt_hub.h"
#include "transport/srt_receiver.h"
#include "util/errors.h"
#include "util/options.h"

namespace sluice {

namespace {

constexpr size_t kMessage = 1316;  // 7 × 188: the live-mode payload every SRT peer expects

// The listen callback runs on libsrt's threads and may race a closing sender: it uses a gate
// only while the gate is in this set (under gGatesMu), and a closing sender takes it out first.
std::mutex gGatesMu;
std::unordered_set<SrtSenderGate*> gGates;

int ListenHook(void* opaq, SRTSOCKET ns, int, const sockaddr* peer, const char* streamid) {
  auto* g = static_cast<SrtSenderGate*>(opaq);
  std::lock_guard<std::mutex> lock(gGatesMu);
  if (!gGates.count(g)) return -1;  // closing
  std::string why;
  const int reason = g->admit.Check(peer, streamid ? streamid : "", why);
  if (!reason) return 0;
  srt_setrejectreason(ns, reason);
  g->refused++;
  if (g->rejects.size() < 16) g->rejects.push_back(why);
  else g->rejects.back() = why;
  return -1;
}

void AddTotals(SrtSenderWrap::Totals& t, const SRT_TRACEBSTATS& s) {
  t.sent += static_cast<uint64_t>(s.pktSentTotal);
  t.lost += static_cast<uint64_t>(s.pktSndLossTotal);
  t.retransmitted += static_cast<uint64_t>(s.pktRetransTotal);
  t.dropped += static_cast<uint64_t>(s.pktSndDropTotal);
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
  InstallSrtLogHook();
  Napi::Object o = info[0].As<Napi::Object>();
  listen_ = BoolOf(o, "listen");
  maxCallers_ = IntOf(o, "maxCallers", 16);
  if (listen_) {
    gate_ = std::make_unique<SrtSenderGate>();
    const std::string address = StrOf(o, "address");
    gate_->admit.expectStreamId = StrOf(o, "streamId");
    gate_->admit.peerProof = StrOf(o, "peerProof");
    if (!address.empty()) {
      gate_->admit.hasPeerFilter = true;
      gate_->admit.peerFilter = Ipv4(env, address, 0, "address");
    }
    {
      std::lock_guard<std::mutex> lock(gGatesMu);
      gGates.insert(gate_.get());
    }
    SrtOpened r;
    try {
      r = OpenSrtSocket(env, o, true, 8, ListenHook, gate_.get());
    } catch (...) {
      CloseGate();
      throw;
    }
    boundPort_ = r.boundPort;
    listenSock_ = r.sock;
  } else {
    const SrtOpened r = OpenSrtSocket(env, o, false, 0, nullptr, nullptr);
    Peer p;
    p.sock = r.sock;
    p.addr = r.remote;
    peers_.push_back(p);
  }
  open_ = true;
}

SrtSenderWrap::~SrtSenderWrap() { Shutdown(); }

void SrtSenderWrap::CloseGate() {
  if (!gate_) return;
  std::lock_guard<std::mutex> lock(gGatesMu);
  gGates.erase(gate_.get());
}

void SrtSenderWrap::Shutdown() {
  if (!open_) return;
  open_ = false;
  CloseGate();
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
    std::vector<std::string> rejects;
    {
      std::lock_guard<std::mutex> lock(gGatesMu);
      rejects.swap(gate_->rejects);
    }
    for (const std::string& why : rejects) event("rejected", "", "REJECTED", why);
    for (;;) {
      sockaddr_storage ss{};
      int len = sizeof ss;
      SRTSOCKET ns = srt_accept(listenSock_, reinterpret_cast<sockaddr*>(&ss), &len);
      if (ns == SRT_INVALID_SOCK) break;
      const std::string who = AddrString(ss);
      if (static_cast<int>(peers_.size()) >= maxCallers_) {
        srt_close(ns);
        busyRefused_++;
        event("rejected", who, "BUSY",
              "caller " + who.substr(0, who.rfind(':')) + " refused: too many callers (" +
                  std::to_string(maxCallers_) + ")");
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
      // Kept for when it goes: a closed socket may no longer give its statistics.
      if (p.connected) srt_bstats(p.sock, &p.last, 0);
      i++;
      continue;
    }
    if (p.connected) {
      srt_bstats(p.sock, &p.last, 0);  // the final figures when libsrt still has them
      AddTotals(gone_, p.last);
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
  o.Set("refused", static_cast<double>(busyRefused_ + (gate_ ? gate_->refused.load() : 0)));
  Napi::Array arr = Napi::Array::New(env);
  uint32_t n = 0;
  Totals all = gone_;
  for (Peer& p : peers_) {
    Napi::Object c = Napi::Object::New(env);
    c.Set("peer", p.addr);
    c.Set("connected", p.connected);
    if (!p.streamId.empty()) c.Set("streamId", p.streamId);
    c.Set("sendDrops", static_cast<double>(p.sendDrops));
    SRT_TRACEBSTATS s{};
    if (p.connected && srt_bstats(p.sock, &s, 0) == 0) {
      AddTotals(all, s);
      p.last = s;
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
  // Since the sender opened, peers gone included (counters for /metrics never go back).
  Napi::Object t = Napi::Object::New(env);
  t.Set("sent", static_cast<double>(all.sent));
  t.Set("lost", static_cast<double>(all.lost));
  t.Set("retransmitted", static_cast<double>(all.retransmitted));
  t.Set("dropped", static_cast<double>(all.dropped));
  o.Set("totals", t);
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
