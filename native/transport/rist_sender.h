// RistSender: a librist sender context (simple or main profile) calling one peer. write() takes
// a whole bus batch of TS packets in one crossing and cuts it into RTP payloads of 7 packets
// (1,316 bytes; a shorter tail waits for the next write); librist's threads send, keep the
// retransmission buffer and answer NACKs. Its stats, log and connection callbacks only update
// counters under this sender's mutex, which stats() reads.
#pragma once
#include <napi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct rist_ctx;
struct rist_logging_settings;

namespace sluice {

struct RistSendState {
  std::mutex mu;
  std::atomic<int> connected{0};
  std::atomic<uint64_t> timeouts{0};
  bool havePeer = false;
  double bandwidth = 0, retryBandwidth = 0, quality = 100;
  uint32_t rtt = 0;
  uint64_t sent = 0, received = 0, retransmitted = 0;
  std::string lastLog;
  uint64_t errors = 0;
};

class RistSenderWrap : public Napi::ObjectWrap<RistSenderWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit RistSenderWrap(const Napi::CallbackInfo& info);
  ~RistSenderWrap() override;

 private:
  Napi::Value Write(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  void Send(const uint8_t* p, size_t n);
  void Shutdown();

  std::shared_ptr<RistSendState> st_;
  rist_ctx* ctx_ = nullptr;
  rist_logging_settings* log_ = nullptr;
  std::vector<uint8_t> tail_;  // bytes of an unfinished payload
  uint64_t blocks_ = 0, bytes_ = 0, writeErrors_ = 0;
  bool open_ = false;
};

}  // namespace sluice
