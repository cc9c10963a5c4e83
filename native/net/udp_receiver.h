// UdpReceiver: a UDP socket read with recvmmsg on its own thread; datagrams are concatenated
// into batches (up to N datagrams or T ms) and handed to JS through a ThreadSafeFunction.
#pragma once
#include <napi.h>
#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace sluice {

struct UdpBatch;

struct UdpOptions {
  uint16_t port = 0;
  in_addr address{};
  in_addr bindIf{};
  in_addr ssm{};
  bool multicast = false;
  bool hasSsm = false;
  int bufferSize = 0;
  int maxDatagram = 4096;
  int batchDatagrams = 64;
  int batchLatencyMs = 5;
  int queueBatches = 256;
};

class UdpReceiverWrap : public Napi::ObjectWrap<UdpReceiverWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit UdpReceiverWrap(const Napi::CallbackInfo& info);
  ~UdpReceiverWrap() override;

  static void CallJs(Napi::Env env, Napi::Function cb, std::atomic<bool>* closed, UdpBatch* b);

 private:
  using Tsfn = Napi::TypedThreadSafeFunction<std::atomic<bool>, UdpBatch, CallJs>;

  Napi::Value Rejoin(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value GrantedBufferSize(const Napi::CallbackInfo& info);
  Napi::Value Port(const Napi::CallbackInfo& info);

  void Open(Napi::Env env);
  void Membership(Napi::Env env, bool add);
  void Run();
  bool Deliver(UdpBatch* b);  // false when JS is gone
  void Shutdown();

  UdpOptions opts_;
  int fd_ = -1;
  int stopFd_ = -1;
  int granted_ = 0;
  uint16_t boundPort_ = 0;
  bool open_ = false;
  std::thread thread_;
  Tsfn tsfn_;
  std::atomic<bool>* closedFlag_ = nullptr;  // owned by the TSFN (freed in its finalizer)
  std::atomic<uint64_t> datagrams_{0}, bytes_{0}, batches_{0}, drops_{0}, queueDrops_{0},
      truncated_{0};
};

}  // namespace sluice
