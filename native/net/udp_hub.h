// UdpHub: one receive thread per JS environment for every open UdpReceiver socket — epoll over
// all of them, recvmmsg per ready socket into per-socket batches. Completed batches wait in a
// bounded queue per socket; the JS thread drains the queues round-robin in slices of bounded
// time (Pump), so a flood on one socket is shed at that socket (queueDrops) and can neither
// starve the other sockets nor hold the event loop (the API, timers, other streams). The queues
// are bounded in bytes per socket and over the hub as well as in batches: overload drops.
// When the JS thread falls behind all of them, whole sockets are shed in priority order
// (Balance) instead. The thread runs while at least one socket is open.
#pragma once
#include <napi.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "util/drain.h"

namespace sluice {

class UdpReceiverWrap;

// Shedding under a JS thread that falls behind (UdpHub::Balance; docs/native.md "UdpReceiver").
/** How often the receive thread weighs the JS thread's lag. */
constexpr std::chrono::milliseconds kShedStep{200};
/** Behind: the median active socket's oldest waiting batch is older than this. */
constexpr std::chrono::milliseconds kShedLag{500};
/** … for at least this long (a stall of the JS thread — a long collection, a burst of
 *  segment work — is caught up after it ends; only an overload that lasts sheds). */
constexpr std::chrono::milliseconds kShedPersist{1000};
/** Calm: that median lag is at most this … */
constexpr std::chrono::milliseconds kCalmLag{100};
/** … for this long before one shed socket is re-admitted (doubled, up to kReadmitMax, when a
 *  re-admitted socket is shed again within twice the wait). */
constexpr std::chrono::milliseconds kReadmitAfter{1000};
constexpr std::chrono::milliseconds kReadmitMax{32000};

/** Per-socket batching knobs (checked by the façade). */
struct UdpBatchOptions {
  int maxDatagram = 4096;
  int batchDatagrams = 64;
  int batchLatencyMs = 5;
  int queueBatches = 256;
  /** Bytes of batches waiting for JS on this socket, and on all of the hub's sockets, before a
   *  new batch is shed (the hub's figure is what this socket accepts; the tightest wins). */
  int64_t queueBytes = 8 << 20;
  int64_t queueBytesTotal = 128 << 20;
};

struct UdpBatch;

/** A block of a receiver's pool: the bytes of a long-lived ArrayBuffer the receiver keeps. The
 *  hub thread writes a batch straight into a free block and JS gets that ArrayBuffer as it is:
 *  no copy at the hand-off, and no new ArrayBuffer per batch (external memory stays flat). */
struct UdpBlock {
  uint8_t* data = nullptr;
  int index = -1;  // the receiver's reference to its ArrayBuffer
};

/** One registered socket. Fields marked (hub) are touched by the hub thread under the hub's
 *  mutex only; (js) on the JS thread only; the counters from both. */
struct UdpSocketState {
  uint64_t id = 0;
  int fd = -1;
  UdpBatchOptions opts;
  UdpReceiverWrap* wrap = nullptr;  // (js) null once closed: queued batches are then discarded
  UdpBatch* cur = nullptr;          // (hub) batch being filled
  std::chrono::steady_clock::time_point first{};  // (hub) arrival of cur's first datagram
  std::chrono::steady_clock::time_point due{};    // (hub) when cur is handed over (Due)
  size_t expect = 0;  // (hub) the last datagram's size: where a block's next one is read to
  std::chrono::steady_clock::time_point backoffUntil{};  // (hub) after a recvmmsg fault
  bool backoff = false;                                  // (hub)
  std::string lastErr;                                   // (hub)
  std::deque<UdpBatch*> ready;  // (under the hub's mutex) completed batches waiting for JS
  std::vector<UdpBlock> freeBlocks;  // (under the hub's mutex) the pool's blocks not in use
  // Counters on cache lines of their own: the hub bumps its counters hundreds of thousands of
  // times a second at 100 sockets, and a line shared with what the JS thread writes (`queued`
  // on every hand-off, `drops` at stats()) bounced between the cores on every bump (perf: ~6 %
  // of the receive path stalled on one locked add).
  int priority = 0;  // (under the hub's mutex; key of order_) lower is more important; ties: the older
  // (under the hub's mutex) Shed: every batch is dropped (shedBatches) until re-admitted.
  std::atomic<bool> shed{false};
  uint64_t seenBatches = 0;  // (hub) `batches` at the last Balance: did it receive since?
  uint64_t seenBytes = 0;    // (hub) `bytes` then: what it brought in a step
  alignas(64) std::atomic<int> queued{0};  // ready.size() plus data batches handed over
  // Bytes of completed batches not yet done with (added by the hub, taken off when the batch
  // is deleted: delivered, or discarded at close), this socket's and the hub's.
  std::atomic<int64_t> queuedBytes{0};
  std::shared_ptr<std::atomic<int64_t>> hubBytes;
  alignas(64) std::atomic<uint64_t> drops{0};  // (js) kernel drops, read at stats()
  // (hub) written by the hub thread only, read by stats(): bumped with Bump(), no locked add.
  alignas(64) std::atomic<uint64_t> datagrams{0}, bytes{0}, batches{0}, queueDrops{0}, truncated{0};
  std::atomic<uint64_t> shedBatches{0}, shedBytes{0};  // (hub) dropped while shed
};

/** Add to a counter only one thread writes (others only read it): a plain load and store. */
inline void Bump(std::atomic<uint64_t>& counter, uint64_t by = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

struct UdpBatch {
  ~UdpBatch();
  /** kShed: the socket entered (`shed`) or left the shed state; no payload. */
  enum Kind { kData = 0, kError = 1, kShed = 2 } kind = kData;
  bool shed = false;
  std::chrono::steady_clock::time_point done{};  // completed: its age is the JS thread's lag
  std::shared_ptr<UdpSocketState> sock;
  UdpBlock block;      // the payloads, when a pool block was free (used bytes in `used`) …
  size_t used = 0;
  std::vector<uint8_t> data;  // … else here (copied into the receiver's slab at hand-off)
  std::vector<int32_t> lengths;
  std::string code, message;
  int64_t held = 0;  // bytes counted in sock's queuedBytes and the hub's until deleted
};

using UdpBatchList = std::vector<UdpBatch*>;

class UdpHub {
 public:
  /** The hub of this environment (created on first use; shared by its receivers). */
  static std::shared_ptr<UdpHub> For(Napi::Env env);
  ~UdpHub();

  /** The hub of this environment if one exists (never creates one). */
  static std::shared_ptr<UdpHub> Existing(Napi::Env env);

  /** Register an open, bound socket; starts the thread when it is the first. `pump` is the
   *  JS function that schedules the next Pump on a later turn of the event loop (kept from
   *  the first receiver). JS thread. */
  void Add(Napi::Env env, const std::shared_ptr<UdpSocketState>& s, Napi::Function pump);
  /** Unregister (the hub no longer touches s->fd when this returns; the caller closes it);
   *  stops the thread when it was the last. JS thread. */
  void Remove(const std::shared_ptr<UdpSocketState>& s);

  /** Change a socket's shedding priority (lower = more important). JS thread. */
  void SetPriority(const std::shared_ptr<UdpSocketState>& s, int priority);

  /** Give a pool block back once JS is done with its batch. JS thread. */
  void Release(UdpSocketState& s, const UdpBlock& block);

  /** Hand queued batches to their receivers for at most the drain budget; when some are left,
   *  ask `pump` for another turn. JS thread (the TSFN's call, or the scheduled pump). */
  void Pump(Napi::Env env);

  static void CallJs(Napi::Env env, Napi::Function, UdpHub* hub, UdpHub* data);

 private:
  using Tsfn = Napi::TypedThreadSafeFunction<UdpHub, UdpHub, CallJs>;

  /** One drain slice; returns how many batches are still queued. */
  void Signal();  // hub thread: wake JS unless a drain is already scheduled

  void Run();
  // Hub thread, under mu_; `added` is set when a batch joined a ready queue.
  void Receive(UdpSocketState& s, bool& added, bool& busy);
  void Complete(UdpSocketState& s, bool& added);
  void Fault(UdpSocketState& s, int err, bool& added);
  void Stop();
  void CloseFds();
  void Unregister(const std::shared_ptr<UdpSocketState>& s);  // failed Add: undo
  void Arm(int i, size_t slot);
  // Shedding (hub thread, under mu_): Balance every kShedStep; ShedOne takes the least
  // important active socket out (null when fewer than two are active); Readmit the most
  // important shed one.
  void Balance(std::chrono::steady_clock::time_point now, bool& added);
  UdpSocketState* ShedOne(std::chrono::steady_clock::time_point now, bool& added);
  void Readmit(std::chrono::steady_clock::time_point now, bool& added);
  void Notify(UdpSocketState& s, bool shed, bool& added);

  std::mutex mu_;
  // Bytes queued over all sockets (each socket holds it too: its batches outlive a Remove).
  std::shared_ptr<std::atomic<int64_t>> queuedBytes_ = std::make_shared<std::atomic<int64_t>>(0);
  std::unordered_map<uint64_t, std::shared_ptr<UdpSocketState>> socks_;  // under mu_
  // The same sockets, most important first: the drain's order within a round (under mu_).
  std::map<std::pair<int, uint64_t>, std::shared_ptr<UdpSocketState>> order_;
  // Shedding state (hub thread, under mu_): the next Balance, when the lag went under the
  // low-water mark (max: it is not), the admitted backlog at the last Balance, the wait before
  // a re-admission (doubled when a re-admitted socket is shed again soon), and the last
  // re-admission and shed.
  std::chrono::steady_clock::time_point balanceAt_{};
  std::chrono::steady_clock::time_point calmSince_ = std::chrono::steady_clock::time_point::max();
  /** Since when the median lag has been over kShedLag (max: it is not). */
  std::chrono::steady_clock::time_point behindSince_ = std::chrono::steady_clock::time_point::max();
  int64_t lastBacklog_ = 0, shedBacklog_ = 0;  // … and right after the last shed
  std::chrono::milliseconds readmitWait_ = kReadmitAfter;
  std::chrono::steady_clock::time_point lastReadmit_{}, lastShed_{};
  // Drain slices run (JS thread) and the count at the last Balance: JS is draining when it
  // moved. A stalled loop runs none: a stall is left to the queue bounds, not shed for.
  std::atomic<uint64_t> slices_{0};
  uint64_t lastSlices_ = 0;
  bool draining_ = false;
  int epfd_ = -1;
  int wakeFd_ = -1;
  std::atomic<bool> stop_{false};
  bool running_ = false;  // JS thread
  bool closing_ = false;  // hub thread: the TSFN was closed under it (environment teardown)
  DrainPump drain_;  // one signal per burst; the façade's pump (util/drain.h)
  std::thread thread_;
  Tsfn tsfn_;
  uint64_t nextId_ = 1;
  // recvmmsg scratch, sized for the largest batch/datagram registered (hub thread, under mu_)
  size_t slot_ = 0;
  int maxN_ = 0;
  std::vector<uint8_t> scratch_;
  // recvmmsg headers, set up once per resize: a call only re-arms the entries the previous call
  // filled (most calls read one or two datagrams of a 64-entry batch).
  std::vector<mmsghdr> msgs_;
  std::vector<iovec> iov_;
  // (hub thread) The earliest open batch's due time or back-off end: before it, a round does
  // not walk the sockets.
  std::chrono::steady_clock::time_point sweepAt_ = std::chrono::steady_clock::time_point::max();
  // Entry 0 of a call into a pool block: its first `expect` bytes straight into the block
  // where the datagram belongs, the rest (a larger one) into scratch. Most calls read one or
  // two datagrams, so most datagrams need no copy.
  iovec head_[2]{};
  int armed_ = 0;          // entries [0, armed_) are ready for the next call …
  size_t armedSlot_ = 0;   // … with this iov_len
};

}  // namespace sluice
