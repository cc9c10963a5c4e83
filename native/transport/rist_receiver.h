// RistReceiver: a librist receiver context (simple or main profile, one listening peer per
// configured address) whose reassembled, recovered payload is handed to JS in batches, as the
// UDP receiver does: a reader thread of ours takes librist's data blocks (rist_receiver_data_read2)
// and concatenates them into batches (N blocks or T ms), completed batches wait in a bounded
// queue (the newest shed and counted beyond it), one ThreadSafeFunction signal per burst wakes
// JS, and JS drains the queue in slices of bounded time, yielding to the event loop between
// slices (the façade's pump). Never a JS callback per packet. librist's own threads (network,
// recovery) run inside the context; its stats, log and connection callbacks only update
// counters under this receiver's mutex, which stats() reads.
#pragma once
#include <napi.h>

#include "transport/rist_log.h"
#include "util/batch_slab.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct rist_ctx;
struct rist_logging_settings;

struct rist_data_block;

namespace sluice {

class RistReceiverWrap;

struct RistPeerOptions {
  std::string url;     // rist://@host:port[?miface=…]
  uint32_t weight = 5;
  std::string probeHost;  // unicast: checked free before librist binds it ('' = multicast)
  uint16_t port = 0;
};

struct RistOptions {
  int profile = 1;  // 0 simple, 1 main
  std::vector<RistPeerOptions> peers;
  std::string allowIp;
  uint32_t sessionTimeoutMs = 2000;
  uint32_t rttMinMs = 50;
  uint32_t rttMaxMs = 500;
  uint32_t bufferMs = 1000;  // recovery buffer (librist recovery_length_min/max)
  std::string secret;        // at most 127 bytes (the façade cuts)
  int keySize = 128;
  int logLevel = 4;  // RIST_LOG_WARN; 7 (debug) with trace
  int batchBlocks = 64;
  int batchLatencyMs = 20;
  int queueBatches = 256;
  int statsIntervalMs = 1000;
};

struct RistBatch {
  std::vector<uint8_t> data;
  std::vector<int32_t> lengths;
};

/** Counters shared by librist's threads, the reader thread and JS (under mu unless atomic). */
struct RistState : std::enable_shared_from_this<RistState> {
  /** Wake JS for a drain unless one is already signalled or scheduled (any thread). */
  void Signal();
  Napi::ThreadSafeFunction tsfn;  // released by the JS thread at close
  std::atomic<bool> tsfnOpen{false};
  std::mutex mu;
  RistReceiverWrap* wrap = nullptr;  // (js) null once closed
  std::deque<RistBatch*> ready;      // under mu
  std::atomic<bool> pending{false};  // a drain is signalled or scheduled
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> blocks{0}, bytes{0}, batches{0}, queueDrops{0}, discontinuities{0},
      rejected{0}, connects{0}, timeouts{0};
  std::atomic<int> peersConnected{0};
  // librist flow statistics (under mu): last interval and sums since the start
  bool haveFlow = false;
  double bandwidth = 0, retryBandwidth = 0, quality = 100;
  uint32_t rtt = 0;
  uint64_t received = 0, missing = 0, reordered = 0, recovered = 0, recoveredOneRetry = 0,
           lost = 0;
  uint64_t lastReceived = 0, lastLost = 0, lastMissing = 0, lastRecovered = 0;
  uint64_t statsReports = 0;
  std::string lastLog;  // last warning or error librist logged
  uint64_t errors = 0;  // log lines at error level
  RistKeyFailures keyFailures;
  std::string lastRejectedIp;
  std::string allowIp;
};

class RistReceiverWrap : public Napi::ObjectWrap<RistReceiverWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit RistReceiverWrap(const Napi::CallbackInfo& info);
  ~RistReceiverWrap() override;

 private:
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value Drain(const Napi::CallbackInfo& info);

public:
  void Pump(Napi::Env env);  // one drain slice; asks the pump for another when batches are left

 private:
  void Emit(Napi::Env env, RistBatch* b);
  static int OnData(void* arg, rist_data_block* block);  // librist's flow thread
  void Take(rist_data_block* block);
  void Time();  // timer thread: completes a batch at its deadline
  void Complete(RistBatch*& cur);
  void Shutdown();

  RistOptions opts_;
  std::shared_ptr<RistState> st_;
  rist_ctx* ctx_ = nullptr;
  rist_logging_settings* log_ = nullptr;
  std::thread timer_;
  // The batch being filled (librist's flow thread, the timer thread: under batchMu_).
  std::mutex batchMu_;
  std::condition_variable batchCv_;
  RistBatch* cur_ = nullptr;
  std::chrono::steady_clock::time_point first_{};
  bool timerIdle_ = false;
  bool open_ = false;
  Napi::FunctionReference onData_;
  Napi::FunctionReference pump_;
  BatchSlab slab_;
};

}  // namespace sluice
