// SrtReceiver: one SRT input's sockets — a caller dialling address:port, or a listener bound to
// port on bind-if admitting one caller at a time — set up with the input's SRT options and
// read by the environment's shared receive thread (srt_hub.cc), batches and connection events
// handed to this receiver's JS callback.
#pragma once
#include <napi.h>

#include "util/batch_slab.h"
#include <srt/srt.h>

#include <memory>
#include <string>

#include "transport/srt_hub.h"

namespace sluice {

/** libsrt's log goes to our handler, never to stderr (a rejection it reports only there is read
 *  for the listener that admitted the caller); once per process, before the first socket. */
void InstallSrtLogHook();

class SrtReceiverWrap : public Napi::ObjectWrap<SrtReceiverWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit SrtReceiverWrap(const Napi::CallbackInfo& info);
  ~SrtReceiverWrap() override;

  /** Hand one item (batch or event) to onEvent; takes ownership. JS thread. */
  void Emit(Napi::Env env, SrtItem* b);

 private:
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value Port(const Napi::CallbackInfo& info);

  SRTSOCKET Open(Napi::Env env, const Napi::Object& o);
  void Shutdown();

  int boundPort_ = 0;
  bool open_ = false;
  Napi::FunctionReference onEvent_;
  BatchSlab slab_;
  std::shared_ptr<SrtHub> hub_;
  std::shared_ptr<SrtState> state_;
};

}  // namespace sluice
