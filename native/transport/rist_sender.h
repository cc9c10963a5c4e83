// RistSender: a librist sender context (simple or main profile) calling one or more peers (each
// with a weight: 0 duplicates every packet to it, > 0 shares the packets by weight). write() takes
// a whole bus batch of TS packets in one crossing and cuts it into RTP payloads of 7 packets
// (1,316 bytes; a shorter tail waits for the next write); librist's threads send, keep the
// retransmission buffer and answer NACKs. Its stats, log and connection callbacks only update
// counters under this sender's mutex, which stats() reads.
#pragma once
#include <napi.h>

#include "transport/rist_log.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

struct rist_ctx;
struct rist_logging_settings;

namespace sluice {

struct RistSendState {
  /** librist's latest report of one peer. */
  struct PeerFigures {
    double bandwidth = 0, retryBandwidth = 0, quality = 100;
    uint32_t rtt = 0;
  };
  std::mutex mu;
  std::set<const void*> up;  // peers whose receiver answers (under mu)
  std::atomic<uint64_t> timeouts{0};
  std::map<uint32_t, PeerFigures> peers;  // by librist's peer id (under mu)
  uint64_t sent = 0, received = 0, retransmitted = 0;
  std::string lastLog;
  uint64_t errors = 0;
  RistKeyFailures keyFailures;
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
  uint32_t peerCount_ = 0;
  bool open_ = false;
};

}  // namespace sluice
