// Reading a façade's options object (the JS side has validated every value already): a missing
// or mistyped member takes the default.
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>

namespace sluice {

inline int IntOf(const Napi::Object& o, const char* key, int def) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Int32Value() : def;
}

inline int64_t Int64Of(const Napi::Object& o, const char* key, int64_t def) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Int64Value() : def;
}

inline std::string StrOf(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
}

inline bool BoolOf(const Napi::Object& o, const char* key) {
  return o.Get(key).ToBoolean().Value();
}

}  // namespace sluice
