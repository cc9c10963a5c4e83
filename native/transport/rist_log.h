// librist's process-wide log settings. The first rist_logging_set() of a process also becomes
// librist's global settings (used by its socket helpers and address parsing), copying that
// context's callback and argument — which point into a receiver or sender that may be closed
// and freed long before librist logs through them again. Installing a global of our own first,
// whose callback has no argument, keeps every context's settings its own.
#pragma once
#include <librist/logging.h>

#include <chrono>
#include <cctype>
#include <mutex>
#include <string>

namespace sluice {

inline int RistGlobalLog(void*, enum rist_log_level, const char*) { return 0; }

/** Longest a librist log line kept for status may be. */
constexpr size_t kMaxRistLog = 300;

/** librist's lines about a key that does not fit (a wrong passphrase: "Disabling packet
 *  processing till new NONCE", decryption failures), kept apart from the last line: between
 *  them it logs timeouts and malformed packets, which would hide the cause. */
struct RistKeyFailures {
  uint64_t count = 0;
  std::string last;
  std::chrono::steady_clock::time_point at{};
};

inline bool IsRistKeyFailure(const std::string& m) {
  std::string low(m);
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return low.find("nonce") != std::string::npos || low.find("decrypt") != std::string::npos;
}

/** Milliseconds since the last key failure, -1 when there was none. */
inline double RistKeyFailureAgoMs(const RistKeyFailures& k) {
  if (k.count == 0) return -1;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - k.at).count();
}

/** A context's log callback (arg: its state, with `mu`, `lastLog`, `errors`, `keyFailures`): the
 *  last warning or error is kept for status, errors are counted, key failures kept apart,
 *  nothing is written anywhere. */
template <typename State>
int KeepRistLog(void* arg, enum rist_log_level level, const char* msg) {
  auto* st = static_cast<State*>(arg);
  if (level > RIST_LOG_WARN) return 0;
  std::string m(msg ? msg : "");
  while (!m.empty() && (m.back() == '\n' || m.back() == '\r')) m.pop_back();
  if (m.size() > kMaxRistLog) m.resize(kMaxRistLog);
  std::lock_guard<std::mutex> lock(st->mu);
  st->lastLog = m;
  if (level <= RIST_LOG_ERROR) st->errors++;
  if (IsRistKeyFailure(m)) {
    st->keyFailures.count++;
    st->keyFailures.last = m;
    st->keyFailures.at = std::chrono::steady_clock::now();
  }
  return 0;
}

inline void EnsureRistGlobalLog() {
  static std::once_flag once;
  std::call_once(once, [] {
    rist_logging_settings g{};
    g.log_level = RIST_LOG_ERROR;
    g.log_cb = RistGlobalLog;
    g.log_cb_arg = nullptr;
    g.log_socket = -1;
    g.log_stream = nullptr;
    rist_logging_set_global(&g);
  });
}

}  // namespace sluice
