// TsAnalyzer: the N-API class over ts::Analyzer. Arguments are checked by the TypeScript
// façade (src/native/ts.ts); this layer only converts.
#pragma once
#include <napi.h>

#include "ts/analyzer.h"

namespace sluice {

class TsAnalyzerWrap : public Napi::ObjectWrap<TsAnalyzerWrap> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit TsAnalyzerWrap(const Napi::CallbackInfo& info);

 private:
  static napi_value FastPush(napi_env env, napi_callback_info info);
  Napi::Value TakeSections(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Programs(const Napi::CallbackInfo& info);
  Napi::Value Reset(const Napi::CallbackInfo& info);

  std::unique_ptr<ts::Analyzer> analyzer_;
  std::vector<uint8_t> out_;
  Napi::ObjectReference metaRef_;  // keeps the shared Int32Array(3) alive
  int32_t* meta_ = nullptr;
};

}  // namespace sluice
