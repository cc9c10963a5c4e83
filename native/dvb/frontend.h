// DvbFrontend: one DVB API v5 frontend (/dev/dvb/adapterN/frontendM), opened non-blocking
// (read-only for a monitor). The façade (src/native/dvb.ts) hands it a tuning already computed
// (src/dvb/tuning.ts): it switches the delivery system when the frontend is in another, sends
// the LNB steps (voltage, tone, DiSEqC) and the FE_SET_PROPERTY list, and reads status, DTV_STAT_*
// statistics and the tuned frequency back. Tuning runs on a worker thread (a Promise): DiSEqC
// waits on the bus; status reads are a few ioctls on the JS thread.
#pragma once
#include <napi.h>

namespace sluice {

class DvbFrontendWrap : public Napi::ObjectWrap<DvbFrontendWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit DvbFrontendWrap(const Napi::CallbackInfo& info);
  ~DvbFrontendWrap() override;
  /** JS thread, when a tuning worker finished: a close() asked meanwhile happens now. */
  void TuneDone();

 private:
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Tune(const Napi::CallbackInfo& info);
  Napi::Value Status(const Napi::CallbackInfo& info);
  Napi::Value Tuned(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  int Fd(Napi::Env env) const;
  void CloseNow();

  int fd_ = -1;
  int tuning_ = 0;  // tuning workers running (JS thread)
  bool closeAsked_ = false;
  bool releaseLnb_ = false;
};

/** The kernel header's numbers the TypeScript side mirrors (src/dvb/api.ts), for a test. */
Napi::Value DvbConstants(const Napi::CallbackInfo& info);

}  // namespace sluice
