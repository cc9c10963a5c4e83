// sluice native addon: the one registration point for every native class and function.
// Later parts (TS core, transports, descrambler) register themselves from here.
#include <napi.h>

namespace {

Napi::Value Version(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), "sluice-native 0.1.0");
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("version", Napi::Function::New(env, Version, "version"));
  return exports;
}

}  // namespace

NODE_API_MODULE(sluice_native, Init)
