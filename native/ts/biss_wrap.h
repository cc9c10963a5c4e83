// BissDescrambler: the N-API class over ts::BissDescrambler, and bissScramble (the fixtures'
// encoder). Arguments are checked by the TypeScript façade (src/native/biss.ts); this layer
// only converts.
#pragma once
#include <napi.h>

#include <memory>

#include "ts/biss.h"

namespace sluice {

class BissDescramblerWrap : public Napi::ObjectWrap<BissDescramblerWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit BissDescramblerWrap(const Napi::CallbackInfo& info);

 private:
  Napi::Value Process(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);

  std::unique_ptr<ts::BissDescrambler> core_;
};

/** bissScramble(buf, cw, pids, tsc) → packets scrambled (in place). */
Napi::Value BissScramble(const Napi::CallbackInfo& info);

}  // namespace sluice
