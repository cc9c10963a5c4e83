// A file written whole or not at all, in one thread-pool job: open `<path>.tmp`, write, fsync,
// close, rename over `<path>`. Node's fs API takes five pool round trips for the same calls,
// each a hop through the event loop; on a fast disk those hops cost more than the I/O
// (bench/RESULTS.md, archive writes).
//
// The copy into the page cache (write) runs one job at a time, process-wide: when many streams
// close segments together, concurrent copies on every pool thread took both cores from the
// event loop. fsync stays concurrent, since it waits on the disk, not the CPU.
#include "fs/durable_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>

#include "util/errors.h"

namespace sluice {
namespace {

std::mutex copyMutex;
/** Copies running now and the most ever at once (guarded by copyMutex; read by stats). */
int copiesNow = 0;
int copiesMost = 0;

class DurableWriteWorker : public Napi::AsyncWorker {
 public:
  DurableWriteWorker(Napi::Env env, std::string path, Napi::Buffer<uint8_t> data)
      : Napi::AsyncWorker(env, "sluice-durable-write"),
        deferred_(Napi::Promise::Deferred::New(env)),
        path_(std::move(path)),
        tmp_(path_ + ".tmp"),
        bytes_(data.Data()),
        length_(data.Length()) {
    data_.Reset(data, 1);  // the bytes stay alive (and unmoved) until OnOK / OnError
  }

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    const int fd = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return Fail("open", errno, tmp_);
    // Any step after the open failing: the temp file goes (and the descriptor, if still open).
    auto abandon = [&](const char* syscall, bool closeFd, const std::string& what) {
      const int err = errno;
      if (closeFd) close(fd);
      unlink(tmp_.c_str());
      Fail(syscall, err, what);
    };
    if (!WriteAll(fd)) return abandon("write", true, tmp_);
    if (fsync(fd) != 0) return abandon("fsync", true, tmp_);
    if (close(fd) != 0) return abandon("close", false, tmp_);
    if (rename(tmp_.c_str(), path_.c_str()) != 0) return abandon("rename", false, path_);
  }

  void OnOK() override {
    data_.Reset();
    deferred_.Resolve(Env().Undefined());
  }

  void OnError(const Napi::Error&) override {
    data_.Reset();
    deferred_.Reject(CodedError(Env(), ErrnoName(errno_), ErrnoMessage(syscall_, errno_, what_),
                                syscall_)
                         .Value());
  }

 private:
  bool WriteAll(int fd) {
    std::lock_guard<std::mutex> lock(copyMutex);
    copiesMost = std::max(copiesMost, ++copiesNow);
    struct Leave {
      ~Leave() { copiesNow--; }
    } leave;
    size_t done = 0;
    while (done < length_) {
      const ssize_t n = write(fd, bytes_ + done, length_ - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      done += static_cast<size_t>(n);
    }
    return true;
  }

  void Fail(const char* syscall, int err, const std::string& what) {
    syscall_ = syscall;
    errno_ = err;
    what_ = what;
    SetError(syscall);
  }

  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Buffer<uint8_t>> data_;
  std::string path_;
  std::string tmp_;
  const uint8_t* bytes_;
  size_t length_;
  const char* syscall_ = "";
  int errno_ = 0;
  std::string what_;
};

}  // namespace

Napi::Value WriteDurable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsBuffer()) {
    throw CodedError(env, "ERR_NATIVE_ARG", "writeDurable(path: string, data: Buffer)");
  }
  auto* worker = new DurableWriteWorker(env, info[0].As<Napi::String>().Utf8Value(),
                                        info[1].As<Napi::Buffer<uint8_t>>());
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value WriteDurableStats(const Napi::CallbackInfo& info) {
  Napi::Object o = Napi::Object::New(info.Env());
  std::lock_guard<std::mutex> lock(copyMutex);
  o.Set("copiesMostAtOnce", copiesMost);
  return o;
}

}  // namespace sluice
