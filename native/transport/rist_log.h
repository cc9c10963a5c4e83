// librist's process-wide log settings. The first rist_logging_set() of a process also becomes
// librist's global settings (used by its socket helpers and address parsing), copying that
// context's callback and argument — which point into a receiver or sender that may be closed
// and freed long before librist logs through them again. Installing a global of our own first,
// whose callback has no argument, keeps every context's settings its own.
#pragma once
#include <librist/logging.h>

#include <mutex>

namespace sluice {

inline int RistGlobalLog(void*, enum rist_log_level, const char*) { return 0; }

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
