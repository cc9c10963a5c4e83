// lockFile(path): an exclusive flock(2) on a file, held through a descriptor the caller keeps.
// The kernel drops the lock when that descriptor closes or the process dies (kill -9 too), so a
// lock never outlives its holder. Not inherited by children (O_CLOEXEC): an ffmpeg child left
// running cannot keep a dead server's lock. The caller writes and reads the file's contents.
#pragma once
#include <napi.h>

namespace sluice {

/** JS: lockFile(path: string) => number: the locked descriptor, or -1 when another open file
 *  holds the lock (another process, or another lock of this one). Throws coded errno errors. */
Napi::Value LockFile(const Napi::CallbackInfo& info);

}  // namespace sluice
