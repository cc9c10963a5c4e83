// SrtHub: one receive thread per JS environment for every open SrtReceiver — srt_epoll over
// their listener and data sockets, SRT messages (one per 1316-byte datagram of TS) read with
// srt_recvmsg2 and concatenated into per-socket batches. Completed batches and connection
// events wait in a bounded queue per receiver; the JS thread drains the queues round-robin in
// slices of bounded time (Pump), exactly as UdpHub does (native/net/udp_hub.h): one
// ThreadSafeFunction signal per burst, never a JS call per packet, overload shed at the
// receiver's own queue (queueDrops). The thread runs while at least one receiver is open.
#pragma once
#include <napi.h>
#include <srt/access_control.h>
#include <srt/srt.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "transport/srt_common.h"
#include "util/drain.h"

namespace sluice {

class SrtReceiverWrap;

struct SrtBatchOptions {
  int batchMessages = 64;
  int batchLatencyMs = 5;
  int queueBatches = 256;
};

/** One item of a receiver's ready queue: a batch of data, or an event for its onEvent. */
struct SrtItem {
  enum Kind { kData = 0, kFault = 1, kConnected = 2, kDisconnected = 3, kRejected = 4 } kind = kData;
  std::vector<uint8_t> data;
  std::vector<int32_t> lengths;
  std::string code, message, peer, streamId;
};

/** One receiver. (hub): hub thread under the hub's mutex; (js): JS thread; (sock): under
 *  sockMu; atomics from anywhere. */
struct SrtState {
  uint64_t id = 0;
  bool listener = false;
  SrtBatchOptions opts;
  SRTSOCKET listenSock = SRT_INVALID_SOCK;  // listener mode: the listening socket
  // The connected socket (caller: the dialled one, once connected; listener: the accepted one).
  // Changed by the hub thread, read by stats() on the JS thread: under sockMu.
  std::mutex sockMu;
  SRTSOCKET dataSock = SRT_INVALID_SOCK;  // (sock)
  SRTSOCKET dialSock = SRT_INVALID_SOCK;  // caller mode: the socket being dialled / connected
  bool connected = false;                 // (hub)
  bool dead = false;                      // (hub) caller socket failed: nothing more to read
  std::atomic<bool> busy{false};          // listener: a caller is connected (listen callback)
  // Listener admission (read by libsrt's listen callback on its own thread; set before listen).
  SrtAdmission admit;
  std::string remote;  // caller: the address dialled, as ip:port
  // Rejections made by the listen callback, reported by the hub thread (under rejMu).
  std::mutex rejMu;
  std::vector<std::string> rejects;  // (rejMu) messages not yet queued
  std::atomic<uint64_t> rejected{0};
  SrtReceiverWrap* wrap = nullptr;   // (js) null once closed
  SrtItem* cur = nullptr;            // (hub) batch being filled
  std::chrono::steady_clock::time_point first{};  // (hub)
  std::deque<SrtItem*> ready;        // (hub's mutex)
  std::atomic<int> queued{0};
  std::atomic<uint64_t> messages{0}, bytes{0}, batches{0}, queueDrops{0}, accepted{0};
  SRT_TRACEBSTATS last{};            // (sock) counters of the last closed data socket
  bool hasLast = false;              // (sock)
};

class SrtHub {
 public:
  static std::shared_ptr<SrtHub> For(Napi::Env env);
  static std::shared_ptr<SrtHub> Existing(Napi::Env env);
  ~SrtHub();

  /** Register a receiver whose sockets are set up (listening, or dialling non-blocking). */
  void Add(Napi::Env env, const std::shared_ptr<SrtState>& s, Napi::Function pump);
  /** Unregister; closes its sockets (outside the hub's lock). Stops the thread if last. */
  void Remove(const std::shared_ptr<SrtState>& s);
  void Pump(Napi::Env env);
  static void CallJs(Napi::Env env, Napi::Function, SrtHub* hub, SrtHub* data);

 private:
  using Tsfn = Napi::TypedThreadSafeFunction<SrtHub, SrtHub, CallJs>;

  void Signal();
  void Run();
  void OnEvent(SrtState& s, SRTSOCKET sock, int events, bool& added, std::vector<SRTSOCKET>& toClose);
  void Read(SrtState& s, SRTSOCKET sock, bool& added);
  void Complete(SrtState& s, bool& added);
  void Push(SrtState& s, SrtItem* item, bool& added);
  void Stop();

  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<SrtState>> states_;  // under mu_
  std::unordered_map<SRTSOCKET, uint64_t> bySock_;                  // under mu_
  int eid_ = -1;
  std::atomic<bool> stop_{false};
  bool running_ = false;  // JS thread
  bool closing_ = false;  // hub thread
  DrainPump drain_;  // one signal per burst; the façade's pump (util/drain.h)
  std::thread thread_;
  Tsfn tsfn_;
  uint64_t nextId_ = 1;
  std::vector<char> scratch_;
};

/** The words for a failed connection: {code, message} from the reject reason of `sock`. */
std::pair<std::string, std::string> DescribeReject(int reason);

}  // namespace sluice
