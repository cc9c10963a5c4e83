// DvbDvr: an adapter's transport stream — a demux filter (whole TS, PID 8192, or a PID list) sent
// to the dvr device, and a reader thread of ours that polls dvr, collects whole packets into
// batches (N bytes or T ms) and hands them to JS through one ThreadSafeFunction signal per burst;
// completed batches wait in a bounded queue, the newest shed and counted beyond it. Overflows of
// the kernel's ring (EOVERFLOW on read) are counted too.
#pragma once
#include <napi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice {

struct DvbDvrOptions {
  int adapter = 0;
  int demux = 0;
  std::vector<uint16_t> pids;  // 8192 = the whole TS; the filter's PIDs now (JS thread)
  uint32_t bufferBytes = 0;    // DMX_SET_BUFFER_SIZE; 0 = the driver's default
  size_t batchBytes = 0;
  int batchLatencyMs = 0;
  size_t queueBatches = 0;
};

struct DvbDvrState {
  std::mutex mu;
  std::deque<std::vector<uint8_t>> ready;  // under mu
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bytes{0}, batches{0}, queueDrops{0}, overflows{0}, readErrors{0};
  Napi::ThreadSafeFunction tsfn;
};

class DvbDvrWrap : public Napi::ObjectWrap<DvbDvrWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit DvbDvrWrap(const Napi::CallbackInfo& info);
  ~DvbDvrWrap() override;

 private:
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value SetPids(const Napi::CallbackInfo& info);
  /** DMX_SET_PES_FILTER on pids[0] (8192 = the whole TS), DMX_ADD_PID for the rest; errno or 0. */
  int SetFilter(const std::vector<uint16_t>& pids);
  Napi::Value Close(const Napi::CallbackInfo& info);
  void Read();  // the reader thread
  void Shutdown();

  DvbDvrOptions opts_;
  std::shared_ptr<DvbDvrState> st_;
  int demux_ = -1, dvr_ = -1;
  std::thread reader_;
};

}  // namespace sluice
