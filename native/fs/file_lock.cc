// An exclusive, non-blocking flock(2) on a file created if absent (file_lock.h has the contract).
// The file is never truncated or unlinked here: unlinking a lock file lets a second opener lock
// a fresh inode while the first still holds the old one.
#include "fs/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "util/errors.h"

namespace sluice {

Napi::Value LockFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "lockFile(path: string)");
  }
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) ThrowErrno(env, "open", errno, path);
  int rc;
  do {
    rc = flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return Napi::Number::New(env, fd);
  const int err = errno;
  close(fd);
  if (err == EWOULDBLOCK) return Napi::Number::New(env, -1);
  ThrowErrno(env, "flock", err, path);
}

}  // namespace sluice
