// SrtHub: the shared SRT receive thread. One srt_epoll set holds every open receiver's sockets
// (listening, dialling, connected); a round accepts callers, notices connections made and
// broken, reads the readable sockets with srt_recvmsg2 into per-receiver batches, completes the
// batches that are full or old enough into that receiver's bounded ready queue and signals the
// JS thread once per burst. Drain slices as in udp_hub.cc.
#include "transport/srt_hub.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <system_error>

#include "transport/srt_receiver.h"
#include "util/drain.h"
#include "util/errors.h"
#include "util/thread_name.h"

namespace sluice {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxEvents = 256;
/** The longest the thread waits in srt_epoll_uwait: srt_epoll has no wake-up descriptor, so
 *  Stop and the listen callback's rejections are noticed within this. */
constexpr int kMaxWaitMs = 20;
/** A readable socket gives at most this many messages per round (fairness); it stays ready
 *  (level-triggered) and is read on in the next round. */
constexpr int kMaxReadsPerRound = 512;
/** SRT live payload is at most 1456 bytes; room for any. */
constexpr size_t kMaxMessage = 1500;

std::mutex gHubsMu;
std::map<napi_env, std::weak_ptr<SrtHub>> gHubs;
std::once_flag gStartup;

std::string PeerString(const sockaddr* sa) {
  char ip[INET6_ADDRSTRLEN] = "";
  int port = 0;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    const auto* in = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in->sin6_addr, ip, sizeof ip);
    port = ntohs(in->sin6_port);
  }
  return std::string(ip) + ":" + std::to_string(port);
}

}  // namespace

std::pair<std::string, std::string> DescribeReject(int reason) {
  switch (reason) {
    case SRT_REJ_BADSECRET:
      return {"BADSECRET", "wrong passphrase (BADSECRET): both ends must use the same passphrase"};
    case SRT_REJ_UNSECURE:
      return {"UNSECURE",
              "encryption mismatch (UNSECURE): one end has a passphrase and the other none"};
    case SRT_REJ_TIMEOUT:
      return {"TIMEOUT", "connection timed out: no SRT listener answered"};
    case SRT_REJ_PEER:
      return {"REFUSED", "connection refused by the peer"};
    case SRT_REJ_BACKLOG:
      return {"REFUSED", "connection refused: the listener's backlog is full"};
    case SRT_REJ_CLOSE:
      return {"REFUSED", "connection refused: the peer is closing"};
    case SRT_REJ_VERSION:
      return {"VERSION", "connection refused: SRT version mismatch"};
    case SRT_REJ_ROGUE:
      return {"ROGUE", "connection refused: bad handshake data"};
    case SRT_REJ_SYSTEM:
      return {"SYSTEM", "connection failed: system error"};
    case SRT_REJX_UNAUTHORIZED:
      return {"STREAMID", "stream id refused by the listener (1401 unauthorized)"};
    case SRT_REJX_FORBIDDEN:
      return {"FORBIDDEN", "refused by the listener (1403 forbidden)"};
    case SRT_REJX_CONFLICT:
      return {"BUSY", "refused by the listener: it already has a caller (1409 conflict)"};
    case SRT_REJX_NOTFOUND:
      return {"STREAMID", "stream id not found at the listener (1404 not found)"};
    default:
      break;
  }
  if (reason >= SRT_REJC_PREDEFINED) {
    return {"REJECTED", "refused by the listener (reject code " + std::to_string(reason) + ")"};
  }
  const char* s = srt_rejectreason_str(reason);
  return {"REJECTED", std::string("connection failed: ") + (s ? s : "unknown reason")};
}

std::shared_ptr<SrtHub> SrtHub::Existing(Napi::Env env) {
  std::lock_guard<std::mutex> lock(gHubsMu);
  auto it = gHubs.find(env);
  return it == gHubs.end() ? nullptr : it->second.lock();
}

std::shared_ptr<SrtHub> SrtHub::For(Napi::Env env) {
  std::call_once(gStartup, [] {
    srt_startup();
  });
  std::lock_guard<std::mutex> lock(gHubsMu);
  for (auto it = gHubs.begin(); it != gHubs.end();) {
    it = it->second.expired() ? gHubs.erase(it) : std::next(it);
  }
  std::weak_ptr<SrtHub>& slot = gHubs[env];
  std::shared_ptr<SrtHub> hub = slot.lock();
  if (hub) return hub;
  hub = std::make_shared<SrtHub>();
  slot = hub;
  return hub;
}

SrtHub::~SrtHub() {
  if (eid_ >= 0) srt_epoll_release(eid_);
}

void SrtHub::Add(Napi::Env env, const std::shared_ptr<SrtState>& s, Napi::Function pump) {
  drain_.Keep(pump);
  if (eid_ < 0) {
    eid_ = srt_epoll_create();
    if (eid_ < 0) throw CodedError(env, "ERR_SRT", srt_getlasterror_str());
    srt_epoll_set(eid_, SRT_EPOLL_ENABLE_EMPTY);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->id = nextId_++;
    const int in = SRT_EPOLL_IN | SRT_EPOLL_ERR;
    const int dial = SRT_EPOLL_IN | SRT_EPOLL_OUT | SRT_EPOLL_ERR;
    SRTSOCKET sock = s->listener ? s->listenSock : s->dialSock;
    int ev = s->listener ? in : dial;
    if (srt_epoll_add_usock(eid_, sock, &ev) < 0) {
      throw CodedError(env, "ERR_SRT", std::string("srt_epoll_add_usock: ") + srt_getlasterror_str());
    }
    states_[s->id] = s;
    bySock_[sock] = s->id;
  }
  if (!running_) {
    try {
      tsfn_ = Tsfn::New(env, "sluice-srt-hub", 0, 1, this);
      stop_ = false;
      drain_.Disarm();
      closing_ = false;
      scratch_.assign(kMaxMessage, 0);
      thread_ = std::thread([this] {
        NameThread("sluice-srt");
        Run();
      });
      running_ = true;
    } catch (const std::system_error& e) {
      tsfn_.Release();
      Remove(s);
      throw CodedError(env, "ERR_NATIVE_THREAD", e.what());
    }
  }
}

void SrtHub::Remove(const std::shared_ptr<SrtState>& s) {
  bool empty;
  std::vector<SRTSOCKET> close;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (SRTSOCKET k : {s->listenSock, s->dialSock}) {
      if (k == SRT_INVALID_SOCK) continue;
      srt_epoll_remove_usock(eid_, k);
      bySock_.erase(k);
      close.push_back(k);
    }
    {
      std::lock_guard<std::mutex> sl(s->sockMu);
      if (s->listener && s->dataSock != SRT_INVALID_SOCK) {
        srt_epoll_remove_usock(eid_, s->dataSock);
        bySock_.erase(s->dataSock);
        close.push_back(s->dataSock);
      }
      s->dataSock = SRT_INVALID_SOCK;
      s->listenSock = s->dialSock = SRT_INVALID_SOCK;
    }
    states_.erase(s->id);
    delete s->cur;
    s->cur = nullptr;
    for (SrtItem* b : s->ready) delete b;
    s->ready.clear();
    s->queued = 0;
    empty = states_.empty();
  }
  // Outside the hub's lock: srt_close may wait for libsrt's own threads (the listen callback).
  for (SRTSOCKET k : close) srt_close(k);
  if (empty && running_) Stop();
}

void SrtHub::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  running_ = false;
  tsfn_.Release();
}

void SrtHub::Push(SrtState& s, SrtItem* item, bool& added) {
  s.ready.push_back(item);
  added = true;
}

void SrtHub::Complete(SrtState& s, bool& added) {
  SrtItem* b = s.cur;
  s.cur = nullptr;
  if (!b) return;
  s.batches++;
  if (s.queued.load() >= s.opts.queueBatches) {
    s.queueDrops++;  // JS is behind on this receiver: shed here, where it entered
    delete b;
    return;
  }
  s.queued++;
  Push(s, b, added);
}

void SrtHub::Read(SrtState& s, SRTSOCKET sock, bool& added) {
  const size_t maxN = static_cast<size_t>(s.opts.batchMessages);
  for (int i = 0; i < kMaxReadsPerRound; i++) {
    const int n = srt_recvmsg2(sock, scratch_.data(), static_cast<int>(scratch_.size()), nullptr);
    if (n <= 0) return;  // SRT_EASYNCRCV: nothing more now; a broken socket shows in its state
    if (!s.cur) {
      s.cur = new SrtItem();
      s.cur->data.reserve(maxN * 1316 + 4 * maxN + 4);
      s.cur->lengths.reserve(maxN);
      s.first = Clock::now();
    }
    s.cur->data.insert(s.cur->data.end(), scratch_.data(), scratch_.data() + n);
    s.cur->lengths.push_back(n);
    s.messages++;
    s.bytes += static_cast<uint64_t>(n);
    if (s.cur->lengths.size() >= maxN) Complete(s, added);
  }
}

void SrtHub::OnEvent(SrtState& s, SRTSOCKET sock, int events, bool& added,
                     std::vector<SRTSOCKET>& toClose) {
  if (s.listener && sock == s.listenSock) {
    if (events & SRT_EPOLL_ERR) {
      auto* f = new SrtItem();
      f->kind = SrtItem::kFault;
      f->code = "ERR_SRT";
      f->message = "the listening socket failed";
      Push(s, f, added);
      srt_epoll_remove_usock(eid_, sock);
      return;
    }
    for (;;) {
      sockaddr_storage peer{};
      int len = sizeof peer;
      SRTSOCKET ns = srt_accept(sock, reinterpret_cast<sockaddr*>(&peer), &len);
      if (ns == SRT_INVALID_SOCK) return;
      if (s.busy.exchange(true)) {  // the listen callback refuses these; a race ends here
        toClose.push_back(ns);
        continue;
      }
      bool no = false;
      srt_setsockflag(ns, SRTO_RCVSYN, &no, sizeof no);
      char sid[513] = "";
      int sidLen = sizeof sid - 1;
      if (srt_getsockflag(ns, SRTO_STREAMID, sid, &sidLen) == 0) sid[sidLen] = 0;
      int ev = SRT_EPOLL_IN | SRT_EPOLL_ERR;
      srt_epoll_add_usock(eid_, ns, &ev);
      bySock_[ns] = s.id;
      {
        std::lock_guard<std::mutex> sl(s.sockMu);
        s.dataSock = ns;
      }
      s.accepted++;
      auto* c = new SrtItem();
      c->kind = SrtItem::kConnected;
      c->peer = PeerString(reinterpret_cast<sockaddr*>(&peer));
      c->streamId = sid;
      Push(s, c, added);
    }
  }
  const SRT_SOCKSTATUS st = srt_getsockstate(sock);
  if (!s.listener && !s.connected && st == SRTS_CONNECTED) {
    s.connected = true;
    int ev = SRT_EPOLL_IN | SRT_EPOLL_ERR;
    srt_epoll_update_usock(eid_, sock, &ev);
    {
      std::lock_guard<std::mutex> sl(s.sockMu);
      s.dataSock = sock;
    }
    auto* c = new SrtItem();
    c->kind = SrtItem::kConnected;
    c->peer = s.remote;
    Push(s, c, added);
  }
  if (events & SRT_EPOLL_IN) Read(s, sock, added);
  // SRT_EPOLL_ERR is reported once: a rejected handshake may still read as CONNECTING at that
  // moment, and waiting for the state to change would leave the caller silent for good.
  const bool broken = st == SRTS_BROKEN || st == SRTS_CLOSING || st == SRTS_CLOSED ||
                      st == SRTS_NONEXIST || (events & SRT_EPOLL_ERR);
  if (!broken) return;
  Complete(s, added);  // what arrived before the break goes first
  srt_epoll_remove_usock(eid_, sock);
  bySock_.erase(sock);
  auto* e = new SrtItem();
  if (s.listener) {
    std::lock_guard<std::mutex> sl(s.sockMu);
    s.hasLast = srt_bstats(sock, &s.last, 0) == 0;
    s.dataSock = SRT_INVALID_SOCK;
    toClose.push_back(sock);
    s.busy = false;  // the next caller may come in
    e->kind = SrtItem::kDisconnected;
    e->code = "DISCONNECTED";
    e->message = "the caller disconnected";
  } else if (s.connected) {
    s.dead = true;
    e->kind = SrtItem::kDisconnected;
    e->code = "DISCONNECTED";
    e->message = "the listener closed the connection";
  } else {
    s.dead = true;
    auto [code, message] = DescribeReject(srt_getrejectreason(sock));
    e->kind = SrtItem::kFault;
    e->code = code;
    e->message = message;
  }
  Push(s, e, added);
}

void SrtHub::Run() {
  SRT_EPOLL_EVENT ev[kMaxEvents];
  int64_t timeout = kMaxWaitMs;
  std::vector<SRTSOCKET> toClose;
  while (!stop_) {
    int n = srt_epoll_uwait(eid_, ev, kMaxEvents, timeout);
    if (stop_) break;
    if (n < 0) {  // never expected (an empty set is allowed); do not spin if it happens
      n = 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(kMaxWaitMs));
    }
    bool added = false;
    Clock::time_point next = Clock::now() + std::chrono::milliseconds(kMaxWaitMs);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < n; i++) {
        auto it = bySock_.find(ev[i].fd);
        if (it == bySock_.end()) continue;
        auto st = states_.find(it->second);
        if (st == states_.end()) continue;
        OnEvent(*st->second, ev[i].fd, ev[i].events, added, toClose);
      }
      const Clock::time_point now = Clock::now();
      for (auto& [id, sp] : states_) {
        SrtState& s = *sp;
        // A caller refused before its socket joined the epoll set (on loopback the answer can
        // beat srt_epoll_add_usock) never gets an event: its state says it, so look.
        if (!s.listener && !s.connected && !s.dead && s.dialSock != SRT_INVALID_SOCK) {
          const SRT_SOCKSTATUS st = srt_getsockstate(s.dialSock);
          if (st == SRTS_BROKEN || st == SRTS_CLOSING || st == SRTS_CLOSED || st == SRTS_NONEXIST) {
            OnEvent(s, s.dialSock, SRT_EPOLL_ERR, added, toClose);
          }
        }
        if (s.listener) {
          std::vector<std::string> rejects;
          {
            std::lock_guard<std::mutex> rl(s.rejMu);
            rejects.swap(s.rejects);
          }
          if (!rejects.empty()) {  // a burst of refused callers is one event: the last one
            auto* r = new SrtItem();
            r->kind = SrtItem::kRejected;
            r->code = "REJECTED";
            r->message = rejects.back();
            Push(s, r, added);
          }
        }
        if (s.cur) {
          const Clock::time_point due = s.first + std::chrono::milliseconds(s.opts.batchLatencyMs);
          if (now >= due) Complete(s, added);
          else next = std::min(next, due);
        }
      }
    }
    for (SRTSOCKET k : toClose) srt_close(k);
    toClose.clear();
    if (added) Signal();
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(next - Clock::now()).count();
    timeout = us > 0 ? (us + 999) / 1000 : 0;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, sp] : states_) {
    delete sp->cur;
    sp->cur = nullptr;
  }
}

void SrtHub::Signal() {
  if (closing_ || !drain_.Arm()) return;  // a drain is already on its way
  if (tsfn_.NonBlockingCall(this) != napi_ok) closing_ = true;
}

void SrtHub::Pump(Napi::Env env) {
  std::optional<Napi::Error> failure;
  const size_t left = DrainSlice(env, mu_, states_, failure);
  drain_.After(left, mu_, [this] { return QueuedIn(states_); }, env.Undefined());
  if (failure) failure->ThrowAsJavaScriptException();
}

void SrtHub::CallJs(Napi::Env env, Napi::Function, SrtHub*, SrtHub*) {
  if (env == nullptr) return;
  std::shared_ptr<SrtHub> hub = Existing(env);
  if (hub) hub->Pump(env);
}

}  // namespace sluice
