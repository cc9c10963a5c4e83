// DvbCa: a CI slot's ca device (/dev/dvb/adapterN/caM) for the EN 50221 host in TypeScript
// (src/dvb/en50221/). Slot state and reset are ioctls on the JS thread (CA_GET_CAP,
// CA_GET_SLOT_INFO, CA_RESET return at once); the reads and writes run on a thread of ours,
// since the kernel's write waits for the module's link buffer: send() queues a ca-framed TPDU,
// every read (one whole TPDU, the kernel having joined the link fragments) and every write
// error reaches JS through one ThreadSafeFunction as onEvent(buffer | null, error).
#pragma once
#include <napi.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sluice {

struct DvbCaState {
  std::mutex mu;
  std::deque<std::vector<uint8_t>> out;  // under mu: TPDUs to write
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, writes{0}, errors{0};
  Napi::ThreadSafeFunction tsfn;
};

class DvbCaWrap : public Napi::ObjectWrap<DvbCaWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit DvbCaWrap(const Napi::CallbackInfo& info);
  ~DvbCaWrap() override;

 private:
  Napi::Value Caps(const Napi::CallbackInfo& info);
  Napi::Value SlotInfo(const Napi::CallbackInfo& info);
  Napi::Value Reset(const Napi::CallbackInfo& info);
  Napi::Value Send(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  int Fd(Napi::Env env) const;
  void Run();  // the I/O thread
  void Shutdown();

  int fd_ = -1;
  std::shared_ptr<DvbCaState> st_;
  std::thread io_;
};

}  // namespace sluice
