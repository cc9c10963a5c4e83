// DvbFrontend: one DVB API v5 frontend (/dev/dvb/adapterN/frontendM), opened non-blocking
// (read-only for a monitor). The façade (src/native/dvb.ts) hands it a tuning already computed
// (src/dvb/tuning.ts): it switches the delivery system when the frontend is in another, sends
// the LNB steps (voltage, tone, DiSEqC) and the FE_SET_PROPERTY list, and reads status, DTV_STAT_*
// statistics and the tuned frequency back. Each call is a few ioctls; DiSEqC adds the bus's
// 15 ms settling waits.
#pragma once
#include <napi.h>

namespace sluice {

class DvbFrontendWrap : public Napi::ObjectWrap<DvbFrontendWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit DvbFrontendWrap(const Napi::CallbackInfo& info);
  ~DvbFrontendWrap() override;

 private:
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Tune(const Napi::CallbackInfo& info);
  Napi::Value Status(const Napi::CallbackInfo& info);
  Napi::Value Tuned(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  int Fd(Napi::Env env) const;

  int fd_ = -1;
};

/** The kernel header's numbers the TypeScript side mirrors (src/dvb/api.ts), for a test. */
Napi::Value DvbConstants(const Napi::CallbackInfo& info);

}  // namespace sluice
