// UdpHub: the shared receive thread. One epoll set holds every open receiver's socket; a round
// drains the ready sockets with recvmmsg into per-socket batches, completes the batches that are
// full or old enough, and signals the JS thread, which drains the queues in slices (Pump). Every
// kShedStep it weighs how far JS is behind and sheds or re-admits whole sockets (Balance).
#include "net/udp_hub.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <system_error>

#include "net/udp_receiver.h"
#include "util/drain.h"
#include "util/errors.h"
#include "util/thread_name.h"

namespace sluice {

namespace {

using Clock = std::chrono::steady_clock;

/** epoll data of the wake-up eventfd (socket ids start at 1). */
constexpr uint64_t kWakeId = 0;
constexpr int kMaxEvents = 256;
/** A socket in the ready list gets at most this many recvmmsg calls per round (fairness);
 *  level-triggered epoll brings it back next round when more is queued. */
constexpr int kMaxCallsPerSocket = 8;
/** A recvmmsg fault disarms the socket for this long (the old thread-per-socket back-off). */
constexpr auto kErrorBackoff = std::chrono::milliseconds(100);
/** After a round that found data but filled no batch, the thread sleeps until this long after
 *  the round began before waiting again, so that a socket's datagrams are read several per
 *  recvmmsg instead of one wake-up per datagram (8 Mbit/s is one datagram every 1.3 ms). The
 *  kernel buffers the gap (8 MB ≈ 8 s of such a stream). Skipped when a batch filled up (fast
 *  stream: read on at once) and never past a batch's latency deadline. */
constexpr auto kRound = std::chrono::microseconds(2000);
/** One drain slice hands batches to JS for at most this long, then yields to the event loop
 *  (timers, the API's sockets) before the next slice. A batch is never cut: a slice may end up
 *  to one batch's processing past it. */
constexpr size_t kTypicalDatagram = 1400;
/** Where a socket's first datagram is read to in a pool block, before its size is known: seven
 *  TS packets, the usual payload of TS over UDP. */
constexpr size_t kTypicalTsDatagram = 7 * 188;

/** Drop a data batch of a shed socket: counted, its pool block back to the pool (hub thread,
 *  under the hub's mutex). */
void DropShed(UdpSocketState& s, UdpBatch* b) {
  Bump(s.shedBatches);
  Bump(s.shedBytes, b->block.data ? b->used : b->data.size());
  if (b->block.data) s.freeBlocks.push_back(b->block);
  delete b;
}

/** When `s`'s open batch is due: the last point of the socket's latency grid at or before its
 *  first datagram's arrival plus the latency. Every socket with the same latency then completes
 *  on the same tick, so the JS thread wakes once per latency period for all of them (100
 *  streams with deadlines of their own woke it ~500 times a second, each for a batch or two).
 *  A batch still waits no longer than the latency; it is as many per second as before. */
Clock::time_point Due(const UdpSocketState& s) {
  const auto latency = std::chrono::milliseconds(s.opts.batchLatencyMs);
  const Clock::time_point deadline = s.first + latency;
  if (latency.count() <= 0) return deadline;
  const auto since = deadline.time_since_epoch();
  return Clock::time_point(since - since % latency);
}

std::mutex gHubsMu;
std::map<napi_env, std::weak_ptr<UdpHub>> gHubs;

}  // namespace

std::shared_ptr<UdpHub> UdpHub::Existing(Napi::Env env) {
  std::lock_guard<std::mutex> lock(gHubsMu);
  auto it = gHubs.find(env);
  return it == gHubs.end() ? nullptr : it->second.lock();
}

std::shared_ptr<UdpHub> UdpHub::For(Napi::Env env) {
  std::lock_guard<std::mutex> lock(gHubsMu);
  for (auto it = gHubs.begin(); it != gHubs.end();) {  // environments whose hub is gone
    it = it->second.expired() ? gHubs.erase(it) : std::next(it);
  }
  std::weak_ptr<UdpHub>& slot = gHubs[env];
  std::shared_ptr<UdpHub> hub = slot.lock();
  if (hub) return hub;
  hub = std::make_shared<UdpHub>();
  slot = hub;
  return hub;
}

UdpHub::~UdpHub() { CloseFds(); }

void UdpHub::CloseFds() {
  if (epfd_ >= 0) ::close(epfd_);
  if (wakeFd_ >= 0) ::close(wakeFd_);
  epfd_ = wakeFd_ = -1;
}

void UdpHub::Add(Napi::Env env, const std::shared_ptr<UdpSocketState>& s, Napi::Function pump) {
  drain_.Keep(pump);
  if (!running_ && epfd_ < 0) {
    // The epoll set and wake-up eventfd exist while the thread runs (no descriptor is left
    // open while no receiver is).
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) ThrowErrno(env, "epoll_create1", errno);
    wakeFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeId;
    if (wakeFd_ < 0 || epoll_ctl(epfd_, EPOLL_CTL_ADD, wakeFd_, &ev) < 0) {
      const int err = errno;
      const char* call = wakeFd_ < 0 ? "eventfd" : "epoll_ctl";
      CloseFds();
      ThrowErrno(env, call, err);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->id = nextId_++;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = s->id;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
      const int err = errno;
      if (!running_) CloseFds();
      ThrowErrno(env, "epoll_ctl", err);
    }
    socks_[s->id] = s;
    order_[{s->priority, s->id}] = s;
    s->hubBytes = queuedBytes_;
    // recvmmsg scratch: large enough for every registered socket's batch and datagram size.
    const size_t slot = static_cast<size_t>(s->opts.maxDatagram);
    const int n = s->opts.batchDatagrams;
    if (slot > slot_ || n > maxN_) {
      slot_ = std::max(slot_, slot);
      maxN_ = std::max(maxN_, n);
      scratch_.assign(slot_ * static_cast<size_t>(maxN_), 0);
      msgs_.assign(static_cast<size_t>(maxN_), mmsghdr{});
      iov_.assign(static_cast<size_t>(maxN_), iovec{});
      armed_ = 0;
    }
  }
  if (!running_) {
    try {
      tsfn_ = Tsfn::New(env, "sluice-udp-hub", 0, 1, this);
      stop_ = false;
      drain_.Disarm();
      closing_ = false;
      thread_ = std::thread([this] {
        NameThread("sluice-udp");
        Run();
      });
      running_ = true;
    } catch (const std::system_error& e) {  // no thread: undo, report as a JS error
      tsfn_.Release();
      Unregister(s);
      throw CodedError(env, "ERR_NATIVE_THREAD", e.what());
    } catch (...) {
      Unregister(s);
      throw;
    }
  }
}

void UdpHub::Unregister(const std::shared_ptr<UdpSocketState>& s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoll_ctl(epfd_, EPOLL_CTL_DEL, s->fd, nullptr);
    socks_.erase(s->id);
    order_.erase({s->priority, s->id});
  }
  if (!running_) CloseFds();
}

void UdpHub::Remove(const std::shared_ptr<UdpSocketState>& s) {
  bool empty;
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoll_ctl(epfd_, EPOLL_CTL_DEL, s->fd, nullptr);
    socks_.erase(s->id);
    order_.erase({s->priority, s->id});
    delete s->cur;  // the unfinished batch (it holds a reference back to s)
    s->cur = nullptr;
    for (UdpBatch* b : s->ready) delete b;  // never delivered after close(); each holds s
    s->ready.clear();
    s->queued = 0;
    empty = socks_.empty();
  }
  if (empty && running_) Stop();
}

void UdpHub::Stop() {
  stop_ = true;
  uint64_t one = 1;
  if (write(wakeFd_, &one, sizeof one) < 0) {
    // only fails on counter overflow, and then the thread is awake anyway
  }
  if (thread_.joinable()) thread_.join();
  running_ = false;
  CloseFds();
  tsfn_.Release();  // a signal still queued reaches CallJs, which finds nothing to drain
}

UdpBatch::~UdpBatch() {
  if (held == 0) return;
  sock->queuedBytes -= held;
  if (sock->hubBytes) *sock->hubBytes -= held;
}

void UdpHub::Complete(UdpSocketState& s, bool& added) {
  UdpBatch* b = s.cur;
  s.cur = nullptr;
  Bump(s.batches);
  // A heap batch was reserved for a full one: one cut short by its latency gives the rest
  // back (a copy of what it holds, only on this overflow path), so a stalled loop's backlog
  // of small batches is counted, and held, at its bytes.
  if (b->data.capacity() > b->data.size() + b->data.size() / 4) b->data.shrink_to_fit();
  // What the batch keeps allocated: its part of a pool block, or its own vector.
  const int64_t bytes =
      static_cast<int64_t>(b->block.data ? b->used : b->data.capacity());
  const Clock::time_point now = Clock::now();
  // The thread's bound reached while JS is draining: a whole socket is shed (the least
  // important; perhaps this one) rather than this socket's newest batch dropped — that made
  // every socket lose a little. While JS is stalled (no slice ran), the bounds drop as before.
  if (!s.shed && draining_ && s.hubBytes && s.hubBytes->load() + bytes > s.opts.queueBytesTotal) {
    ShedOne(now, added);
  }
  if (s.shed) {
    DropShed(s, b);
    return;
  }
  if (s.queued.load() >= s.opts.queueBatches ||
      s.queuedBytes.load() + bytes > s.opts.queueBytes ||
      (s.hubBytes && s.hubBytes->load() + bytes > s.opts.queueBytesTotal)) {
    // JS is behind: the newest batch is shed here, where it entered, rather than blocking the
    // thread or growing the queue. Newest, not oldest: what is queued is a contiguous run JS
    // will read in order, a drop makes one gap either way, and the queue stays untouched
    // while JS may be taking from its front (no reach past the lock into a batch in flight).
    Bump(s.queueDrops);
    if (b->block.data) s.freeBlocks.push_back(b->block);  // the pool block goes back
    delete b;
    return;
  }
  b->held = bytes;
  b->done = now;
  s.queuedBytes += bytes;
  if (s.hubBytes) *s.hubBytes += bytes;
  s.queued++;
  s.ready.push_back(b);
  added = true;
}

void UdpHub::Fault(UdpSocketState& s, int err, bool& added) {
  std::string code = ErrnoName(err);
  if (code != s.lastErr) {  // each new fault once, not once per wake-up
    s.lastErr = code;
    auto* e = new UdpBatch();
    e->kind = UdpBatch::kError;
    e->sock = socks_[s.id];
    e->code = code;
    e->message = ErrnoMessage("recvmmsg", err);
    s.ready.push_back(e);
    added = true;
  }
  epoll_event ev{};
  ev.events = 0;
  ev.data.u64 = s.id;
  epoll_ctl(epfd_, EPOLL_CTL_MOD, s.fd, &ev);
  s.backoff = true;
  s.backoffUntil = Clock::now() + kErrorBackoff;
  sweepAt_ = std::min(sweepAt_, s.backoffUntil);
}

void UdpHub::Receive(UdpSocketState& s, bool& added, bool& busy) {
  if (s.backoff) return;
  const size_t slot = static_cast<size_t>(s.opts.maxDatagram);
  const int maxN = s.opts.batchDatagrams;
  if (slot != armedSlot_) {  // entries carry iov_len: a socket with another maxDatagram
    armed_ = 0;
    armedSlot_ = slot;
  }
  for (int call = 0; call < kMaxCallsPerSocket; call++) {
    const int room = maxN - (s.cur ? static_cast<int>(s.cur->lengths.size()) : 0);
    for (; armed_ < room; armed_++) Arm(armed_, slot);
    // Entry 0 straight into the pool block, at the batch's end (or a free block's start).
    uint8_t* dst = nullptr;
    if (s.cur) {
      if (s.cur->block.data) dst = s.cur->block.data + s.cur->used;
    } else if (!s.freeBlocks.empty()) {
      dst = s.freeBlocks.back().data;
    }
    const size_t expect = std::min(s.expect > 0 ? s.expect : kTypicalTsDatagram, slot);
    msghdr& h0 = msgs_[0].msg_hdr;
    if (dst) {
      head_[0] = {dst, expect};
      head_[1] = {scratch_.data(), slot - expect};
      h0.msg_iov = head_;
      h0.msg_iovlen = expect < slot ? 2 : 1;
    } else {
      h0.msg_iov = &iov_[0];
      h0.msg_iovlen = 1;
    }
    int n = recvmmsg(s.fd, msgs_.data(), static_cast<unsigned>(room), MSG_DONTWAIT, nullptr);
    if (n < 0) {
      int err = errno;
      if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) Fault(s, err, added);
      return;
    }
    if (n == 0) return;
    s.lastErr.clear();
    if (!s.cur) {
      s.cur = new UdpBatch();
      s.cur->sock = socks_[s.id];
      s.cur->lengths.reserve(static_cast<size_t>(maxN));
      if (!s.freeBlocks.empty()) {  // the block dst points into (room for maxN × maxDatagram)
        s.cur->block = s.freeBlocks.back();
        s.freeBlocks.pop_back();
      } else {
        s.cur->data.reserve(static_cast<size_t>(maxN) * kTypicalDatagram);
      }
      s.first = Clock::now();
      s.due = Due(s);
      sweepAt_ = std::min(sweepAt_, s.due);
    }
    UdpBatch& b = *s.cur;
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) {
      msghdr& h = msgs_[i].msg_hdr;
      size_t len = msgs_[i].msg_len;
      if (h.msg_flags & MSG_TRUNC) Bump(s.truncated);
      if (len > slot) len = slot;
      const uint8_t* src = scratch_.data() + static_cast<size_t>(i) * slot_;
      if (i == 0 && dst) {  // in place already; a datagram larger than expected has its tail
        if (len > expect) std::memcpy(dst + expect, src, len - expect);  // in scratch
        b.used += len;
      } else if (b.block.data) {
        std::memcpy(b.block.data + b.used, src, len);
        b.used += len;
      } else {
        b.data.insert(b.data.end(), src, src + len);
      }
      b.lengths.push_back(static_cast<int32_t>(len));
      bytes += len;
      // the kernel wrote these two: ready the entry for the next call again
      h.msg_flags = 0;
      msgs_[i].msg_len = 0;
    }
    s.expect = static_cast<size_t>(b.lengths.back());
    Bump(s.bytes, bytes);
    Bump(s.datagrams, static_cast<uint64_t>(n));
    if (n < room) return;  // drained
    Complete(s, added);    // full: more may be queued
    busy = true;
  }
}

namespace {

/** Taking part in shedding: admitted, and with traffic since the last Balance or waiting. */
bool Active(const UdpSocketState& s) {
  return !s.shed && (s.cur || s.queued.load() > 0 || s.batches.load() != s.seenBatches);
}

/** How long s's oldest data batch has waited for JS (zero when none waits). */
Clock::duration Lag(const UdpSocketState& s, Clock::time_point now) {
  for (const UdpBatch* b : s.ready) {
    if (b->kind == UdpBatch::kData) return now - b->done;
  }
  return Clock::duration::zero();
}

}  // namespace

void UdpHub::SetPriority(const std::shared_ptr<UdpSocketState>& s, int priority) {
  std::lock_guard<std::mutex> lock(mu_);
  if (order_.erase({s->priority, s->id}) == 0) {
    s->priority = priority;  // not registered (closed): nothing to re-sort
    return;
  }
  s->priority = priority;
  order_[{priority, s->id}] = s;
}

void UdpHub::Notify(UdpSocketState& s, bool shed, bool& added) {
  auto* e = new UdpBatch();
  e->kind = UdpBatch::kShed;
  e->sock = socks_[s.id];
  e->shed = shed;
  s.ready.push_back(e);
  added = true;
}

UdpSocketState* UdpHub::ShedOne(Clock::time_point now, bool& added) {
  UdpSocketState* victim = nullptr;
  int active = 0;
  for (auto& [id, sp] : order_) {
    if (!Active(*sp)) continue;
    active++;
    victim = sp.get();  // the last active one in priority order: the least important
  }
  if (active < 2) return nullptr;  // one socket alone: nothing to protect, the bounds decide
  UdpSocketState& s = *victim;
  s.shed = true;
  // What it has queued goes too: that frees the JS thread's backlog at once.
  std::deque<UdpBatch*> keep;
  for (UdpBatch* b : s.ready) {
    if (b->kind != UdpBatch::kData) {
      keep.push_back(b);
      continue;
    }
    s.queued--;
    DropShed(s, b);
  }
  s.ready.swap(keep);
  Notify(s, true, added);
  // Shed again soon after its re-admission: the box cannot carry it yet, wait longer.
  if (now - lastReadmit_ < 2 * readmitWait_) readmitWait_ = std::min(2 * readmitWait_, kReadmitMax);
  lastShed_ = now;
  return victim;
}

void UdpHub::Readmit(Clock::time_point now, bool& added) {
  for (auto& [id, sp] : order_) {  // the most important shed socket
    if (!sp->shed) continue;
    sp->shed = false;
    sp->seenBatches = sp->batches.load();
    Notify(*sp, false, added);
    lastReadmit_ = now;
    return;
  }
}

void UdpHub::Balance(Clock::time_point now, bool& added) {
  balanceAt_ = now + kShedStep;
  const uint64_t slices = slices_.load(std::memory_order_relaxed);
  draining_ = slices != lastSlices_;
  lastSlices_ = slices;
  // The signal: the median lag over the active admitted sockets. Rounds serve every socket
  // alike, so when the JS thread is short of time they all lag together; one flooded socket
  // lags alone (its own queue bound sheds it) and does not move the median.
  std::vector<Clock::duration> lags;
  int64_t backlog = 0, arrived = 0;
  for (auto& [id, sp] : order_) {
    if (!Active(*sp)) continue;
    lags.push_back(Lag(*sp, now));
    backlog += sp->queuedBytes.load();
    arrived += static_cast<int64_t>(sp->bytes.load() - sp->seenBytes);
  }
  Clock::duration median = Clock::duration::zero();
  if (!lags.empty()) {
    auto mid = lags.begin() + static_cast<std::ptrdiff_t>((lags.size() - 1) / 2);
    std::nth_element(lags.begin(), mid, lags.end());
    median = *mid;
  }
  if (median > kShedLag) {
    calmSince_ = Clock::time_point::max();
    if (behindSince_ == Clock::time_point::max()) behindSince_ = now;
    // Until 2026-12-08 a single step behind started an episode: one long collection (377 ms at
    // 100 channels on the main thread) shed 40 of 100 streams, which came back one per 2 s.
    const bool lasting = now - behindSince_ >= kShedPersist;
    // Behind and not catching up while JS drains: one more socket goes. Right after a shed,
    // the next waits kShedLag and goes only when the backlog has not fallen below what it was
    // after that shed (a step's trend alone is noise near the edge and shed one too many);
    // a new episode (no shed for 4 × kShedLag) needs the backlog to have grown over a step.
    // A lag over 2 s (a segment's worth) is too slow a recovery: one more goes every kShedLag
    // even while the backlog shrinks. (At 2 × kShedLag that shed one too many: the backlog
    // built while converging takes a while to drain though the drain already keeps up.)
    const bool fresh = now - lastShed_ > 4 * kShedLag;
    const bool slow = median > 4 * kShedLag;
    const bool growing = fresh ? backlog >= lastBacklog_ || slow
                               : now - lastShed_ >= kShedLag && (backlog >= shedBacklog_ || slow);
    // How many: enough that what the shed ones brought in the step covers what JS fell short
    // by (arrived − drained, plus a tenth for the backlog to drain), at most a quarter of the
    // active sockets per step (the estimate is one step's), at least one.
    const int64_t drained = arrived - (backlog - lastBacklog_);
    int64_t want = drained > 0 ? arrived - drained + arrived / 10 : 0;
    const size_t most = std::max<size_t>(1, lags.size() / 4);
    size_t shed = 0;
    while (draining_ && lasting && growing && shed < most) {
      UdpSocketState* v = ShedOne(now, added);
      if (!v) break;
      shed++;
      want -= static_cast<int64_t>(v->bytes.load() - v->seenBytes);
      if (want <= 0) break;
    }
    if (shed > 0) {
      backlog = 0;
      for (auto& [id, sp] : order_) {
        if (!sp->shed) backlog += sp->queuedBytes.load();
      }
      shedBacklog_ = backlog;
    }
  } else if (median <= kCalmLag) {
    behindSince_ = Clock::time_point::max();
    if (calmSince_ == Clock::time_point::max()) {
      calmSince_ = now;
    } else if (now - calmSince_ >= readmitWait_) {
      Readmit(now, added);
      calmSince_ = now;  // the next one after another calm wait
    }
  } else {
    behindSince_ = Clock::time_point::max();
    calmSince_ = Clock::time_point::max();
  }
  if (now - lastShed_ > kReadmitMax) readmitWait_ = kReadmitAfter;
  lastBacklog_ = backlog;
  for (auto& [id, sp] : order_) {
    sp->seenBatches = sp->batches.load();
    sp->seenBytes = sp->bytes.load();
  }
}

void UdpHub::Arm(int i, size_t slot) {
  iov_[i] = {scratch_.data() + static_cast<size_t>(i) * slot_, slot};
  msgs_[i] = mmsghdr{};
  msgs_[i].msg_hdr.msg_iov = &iov_[i];
  msgs_[i].msg_hdr.msg_iovlen = 1;
}

void UdpHub::Run() {
  epoll_event ev[kMaxEvents];
  int timeout = -1;
  while (!stop_) {
    int n = epoll_wait(epfd_, ev, kMaxEvents, timeout);
    if (stop_) break;
    if (n < 0 && errno != EINTR) break;
    const Clock::time_point round = Clock::now();
    bool busy = false;
    bool added = false;
    Clock::time_point next = Clock::time_point::max();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < n; i++) {
        const uint64_t id = ev[i].data.u64;
        if (id == kWakeId) {
          uint64_t v;
          if (read(wakeFd_, &v, sizeof v) < 0) {
            // EAGAIN: already drained
          }
          continue;
        }
        auto it = socks_.find(id);
        if (it != socks_.end()) Receive(*it->second, added, busy);
      }
      const Clock::time_point now = Clock::now();
      // The sockets are walked only when a batch may be due or a back-off may end (sweepAt_:
      // the earliest such time, lowered as batches start and faults happen): at 100 streams
      // a walk every 2 ms round was most of the thread's own time.
      if (now < sweepAt_) {
        next = sweepAt_;
      } else {
        for (auto& [id, sp] : socks_) {
        UdpSocketState& s = *sp;
        if (s.backoff) {
          if (now >= s.backoffUntil) {
            epoll_event e{};
            e.events = EPOLLIN;
            e.data.u64 = id;
            epoll_ctl(epfd_, EPOLL_CTL_MOD, s.fd, &e);
            s.backoff = false;
          } else {
            next = std::min(next, s.backoffUntil);
          }
        }
        if (s.cur) {
          if (now >= s.due) Complete(s, added);
          else next = std::min(next, s.due);
        }
        }
        sweepAt_ = next;
      }
      if (now >= balanceAt_) Balance(now, added);
      next = std::min(next, balanceAt_);
    }
    if (added) Signal();
    Clock::time_point now = Clock::now();
    if (n > 0 && !busy) {
      const Clock::time_point wake = std::min(round + kRound, next);
      if (wake > now) {
        std::this_thread::sleep_for(wake - now);
        now = Clock::now();
      }
    }
    if (next == Clock::time_point::max()) {
      timeout = -1;
    } else {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(next - now).count();
      timeout = us > 0 ? static_cast<int>((us + 999) / 1000) : 0;  // round up: never early
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, sp] : socks_) {
    delete sp->cur;
    sp->cur = nullptr;
  }
}

void UdpHub::Signal() {
  if (closing_ || !drain_.Arm()) return;  // a drain is already on its way
  if (tsfn_.NonBlockingCall(this) != napi_ok) {
    closing_ = true;  // the environment is going away: nothing will read the queues any more
  }
}

void UdpHub::Release(UdpSocketState& s, const UdpBlock& block) {
  std::lock_guard<std::mutex> lock(mu_);
  s.freeBlocks.push_back(block);
}

void UdpHub::Pump(Napi::Env env) {
  std::optional<Napi::Error> failure;
  slices_.fetch_add(1, std::memory_order_relaxed);
  // Rounds in priority order (order_): each round still takes one batch of every socket that
  // has one, so a flooded important socket cannot starve the rest; priority is enforced by
  // shedding (Balance), which needs a backlog spread evenly to see the JS thread behind.
  const size_t left = DrainSlice(env, mu_, order_, failure);
  drain_.After(left, mu_, [this] { return QueuedIn(order_); }, env.Undefined());
  if (failure) failure->ThrowAsJavaScriptException();
}

void UdpHub::CallJs(Napi::Env env, Napi::Function, UdpHub*, UdpHub*) {
  if (env == nullptr) return;
  // Looked up, not taken from the call: the hub may be gone since the signal was queued.
  std::shared_ptr<UdpHub> hub = Existing(env);
  if (hub) hub->Pump(env);
}

}  // namespace sluice
