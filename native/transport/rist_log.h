// librist's process-wide log settings. The first rist_logging_set() of a process also becomes
// librist's global settings (used by its socket helpers and address parsing), copying that
// context's callback and argument — which point into a receiver or sender that may be closed
// and freed long before librist logs through them again. Installing a global of our own first,
// whose callback has no argument, keeps every context's settings its own.
#pragma once
#include <librist/logging.h>

#include <mutex>
#include <string>

namespace sluice {

inline int RistGlobalLog(void*, enum rist_log_level, const char*) { return 0; }

/** Longest a librist log line kept for status may be. */
constexpr size_t kMaxRistLog = 300;

/** A context's log callback (arg: its state, with `mu`, `lastLog`, `errors`): the last warning
 *  or error is kept for status, errors are counted, nothing is written anywhere. */
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
