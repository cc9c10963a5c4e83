// UdpHub: one receive thread per JS environment for every open UdpReceiver socket — epoll over
// all of them, recvmmsg per ready socket, batches of many sockets handed to JS in one
// ThreadSafeFunction call (a batch list). The thread runs while at least one socket is open.
#pragma once
#include <napi.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sluice {

class UdpReceiverWrap;

/** Per-socket batching knobs (checked by the façade). */
struct UdpBatchOptions {
  int maxDatagram = 4096;
  int batchDatagrams = 64;
  int batchLatencyMs = 5;
  int queueBatches = 256;
};

struct UdpBatch;

/** One registered socket. Fields marked (hub) are touched by the hub thread under the hub's
 *  mutex only; (js) on the JS thread only; the counters from both. */
struct UdpSocketState {
  uint64_t id = 0;
  int fd = -1;
  UdpBatchOptions opts;
  UdpReceiverWrap* wrap = nullptr;  // (js) null once closed: queued batches are then discarded
  UdpBatch* cur = nullptr;          // (hub) batch being filled
  std::chrono::steady_clock::time_point first{};  // (hub) arrival of cur's first datagram
  std::chrono::steady_clock::time_point backoffUntil{};  // (hub) after a recvmmsg fault
  bool backoff = false;                                  // (hub)
  std::string lastErr;                                   // (hub)
  std::atomic<int> inFlight{0};  // batches handed to JS and not yet called back
  std::atomic<uint64_t> datagrams{0}, bytes{0}, batches{0}, drops{0}, queueDrops{0}, truncated{0};
};

struct UdpBatch {
  enum Kind { kData = 0, kError = 1 } kind = kData;
  std::shared_ptr<UdpSocketState> sock;
  std::vector<uint8_t> data;
  std::vector<int32_t> lengths;
  std::string code, message;
};

using UdpBatchList = std::vector<UdpBatch*>;

class UdpHub {
 public:
  /** The hub of this environment (created on first use; shared by its receivers). */
  static std::shared_ptr<UdpHub> For(Napi::Env env);
  ~UdpHub();

  /** Register an open, bound socket; starts the thread when it is the first. JS thread. */
  void Add(Napi::Env env, const std::shared_ptr<UdpSocketState>& s);
  /** Unregister (the hub no longer touches s->fd when this returns; the caller closes it);
   *  stops the thread when it was the last. JS thread. */
  void Remove(const std::shared_ptr<UdpSocketState>& s);

  static void CallJs(Napi::Env env, Napi::Function, UdpHub* hub, UdpBatchList* list);

 private:
  using Tsfn = Napi::TypedThreadSafeFunction<UdpHub, UdpBatchList, CallJs>;

  void Run();
  void Receive(UdpSocketState& s, UdpBatchList& out, bool& busy);
  void Complete(UdpSocketState& s, UdpBatchList& out);
  void Fault(UdpSocketState& s, int err, UdpBatchList& out);
  void Stop();
  void CloseFds();
  void Unregister(const std::shared_ptr<UdpSocketState>& s);  // failed Add: undo
  void Arm(int i, size_t slot);

  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<UdpSocketState>> socks_;  // under mu_
  int epfd_ = -1;
  int wakeFd_ = -1;
  std::atomic<bool> stop_{false};
  bool running_ = false;  // JS thread
  bool closing_ = false;  // hub thread: the TSFN was closed under it (environment teardown)
  std::thread thread_;
  Tsfn tsfn_;
  uint64_t nextId_ = 1;
  // recvmmsg scratch, sized for the largest batch/datagram registered (hub thread, under mu_)
  size_t slot_ = 0;
  int maxN_ = 0;
  std::vector<uint8_t> scratch_, ctrl_;
  // recvmmsg headers, set up once per resize: a call only re-arms the entries the previous call
  // filled (most calls read one or two datagrams of a 64-entry batch).
  std::vector<mmsghdr> msgs_;
  std::vector<iovec> iov_;
  int armed_ = 0;          // entries [0, armed_) are ready for the next call …
  size_t armedSlot_ = 0;   // … with this iov_len
};

}  // namespace sluice
