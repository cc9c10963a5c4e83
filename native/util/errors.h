// Native errors as JS Errors with a string `code` (errno names for system faults), the way the
// façade's NativeError expects them.
#pragma once
#include <napi.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace sluice {

inline Napi::Error CodedError(Napi::Env env, const std::string& code, const std::string& message,
                              const char* syscall = nullptr) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  if (syscall) err.Set("syscall", Napi::String::New(env, syscall));
  return err;
}

inline std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name ? name : "E" + std::to_string(err);
}

inline std::string ErrnoMessage(const char* syscall, int err, const std::string& what = "") {
  std::string m = std::string(syscall) + ": " + std::strerror(err);
  if (!what.empty()) m += " (" + what + ")";
  return m;
}

/** Throw (as a C++ exception caught by node-addon-api) a coded error for `errno`. */
[[noreturn]] inline void ThrowErrno(Napi::Env env, const char* syscall, int err,
                                    const std::string& what = "") {
  throw CodedError(env, ErrnoName(err), ErrnoMessage(syscall, err, what), syscall);
}

}  // namespace sluice
