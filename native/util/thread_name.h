// Names the calling thread for `top -H`, `ps -L`, perf and /proc/<pid>/task/<tid>/comm, so an
// operator (or a bench) can tell sluice's native threads from V8's, which are all named `node`.
#pragma once
#include <pthread.h>

namespace sluice {

/** At most 15 characters (the kernel's limit); a longer name is left unset, not cut. */
inline void NameThread(const char* name) { pthread_setname_np(pthread_self(), name); }

}  // namespace sluice
