// SrtSender: an SRT output's sockets — a caller dialling a receiver, or a listener serving
// several callers at once, each with its own libsrt connection and statistics. Everything runs
// on the JS thread without a thread of ours: sends are non-blocking srt_sendmsg2 calls (libsrt's
// own threads put the packets on the wire and repeat lost ones), accepting and connection state
// are polled by the façade (poll()) a few times a second.
#pragma once
#include <napi.h>
#include <srt/access_control.h>
#include <srt/srt.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/srt_common.h"

namespace sluice {

/** A listening sender's admission, shared with libsrt's listen callback (srt_sender.cc). */
struct SrtSenderGate {
  SrtAdmission admit;
  std::vector<std::string> rejects;  // refusals not yet reported by poll() (under gGatesMu)
  std::atomic<uint64_t> refused{0};
};

class SrtSenderWrap : public Napi::ObjectWrap<SrtSenderWrap> {
 public:
  /** libsrt's packet counters summed over peers. */
  struct Totals {
    uint64_t sent = 0, lost = 0, retransmitted = 0, dropped = 0;
  };

  static Napi::Function Define(Napi::Env env);
  explicit SrtSenderWrap(const Napi::CallbackInfo& info);
  ~SrtSenderWrap() override;

 private:
  struct Peer {
    SRTSOCKET sock = SRT_INVALID_SOCK;
    std::string addr;
    std::string streamId;
    bool connected = false;
    uint64_t sendDrops = 0;  // messages refused by a full send buffer
    SRT_TRACEBSTATS last{};  // libsrt's statistics as last read (poll)
  };

  Napi::Value Send(const Napi::CallbackInfo& info);
  Napi::Value Poll(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value Port(const Napi::CallbackInfo& info);
  void Shutdown();
  void CloseGate();

  bool listen_ = false;
  bool open_ = false;
  int maxCallers_ = 16;
  int boundPort_ = 0;
  SRTSOCKET listenSock_ = SRT_INVALID_SOCK;
  std::vector<Peer> peers_;
  std::vector<uint8_t> pending_;  // a tail shorter than one message, waiting for the next send
  std::unique_ptr<SrtSenderGate> gate_;  // listener only
  Totals gone_;                           // of the peers that have gone
  uint64_t messages_ = 0, bytes_ = 0, busyRefused_ = 0;
};

}  // namespace sluice
