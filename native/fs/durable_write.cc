// A file written whole or not at all, in one thread-pool job: open `<path>.tmp`, write, fsync,
// close, rename over `<path>`. Node's fs API takes five pool round trips for the same calls,
// each a hop through the event loop; on a fast disk those hops cost more than the I/O
// (bench/RESULTS.md, archive writes).
//
// Where the filesystem takes O_DIRECT and the caller's memory is aligned (the segment pool's
// blocks are page-aligned mappings), the whole blocks go to the disk straight from that memory:
// no copy into the page cache charged to the server's CPU, which was most of its system time at
// 100 recorded channels. The tail (< one page) and everything else go through the page cache.
//
// The copy into the page cache (write) runs one job at a time, process-wide: when many streams
// close segments together, concurrent copies on every pool thread took both cores from the
// event loop. Direct writes and fsync stay concurrent, since they wait on the disk, not the CPU.
#include "fs/durable_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "util/errors.h"

namespace sluice {
namespace {

std::mutex copyMutex;
/** Copies running now and the most ever at once (guarded by copyMutex; read by stats). */
int copiesNow = 0;
int copiesMost = 0;

/** Which path the writes took (guarded by pathMutex). */
struct PathCounts {
  uint64_t direct = 0;         // whole blocks written with O_DIRECT (the tail buffered)
  uint64_t buffered = 0;       // all through the page cache
  uint64_t fallbacks = 0;      // of `buffered`: aligned, but the filesystem refuses O_DIRECT
  uint64_t directBytes = 0;    // bytes that skipped the page cache
  uint64_t bufferedBytes = 0;  // bytes copied into it
};
std::mutex pathMutex;
PathCounts counts;
/** Filesystems (by device) that refused O_DIRECT once: not asked again by this process. */
std::set<dev_t> refusedDevices;

constexpr size_t kFallbackAlign = 4096;

/** How one file may be written directly: its device, and the alignment its memory needs. */
struct DirectPlan {
  dev_t dev = 0;
  size_t memAlign = kFallbackAlign;
  size_t unit = kFallbackAlign;  // the direct prefix is a multiple of this (≥ a page)
  bool refused = false;          // the filesystem says (or said before) it takes no O_DIRECT
};

DirectPlan PlanFor(int fd) {
  DirectPlan p;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  struct statx sx {};
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0) {
    p.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    if (sx.stx_mask & STATX_DIOALIGN) {
      // Reported as 0: this filesystem does no direct I/O on this file.
      if (sx.stx_dio_mem_align == 0) p.refused = true;
      p.memAlign = std::max<size_t>(sx.stx_dio_mem_align, 1);
      p.unit = std::max<size_t>(sx.stx_dio_offset_align, 1);
    }
  } else {
    struct stat st {};
    if (fstat(fd, &st) == 0) p.dev = st.st_dev;
  }
  // Whole pages: the buffered tail then starts on a page of its own, with nothing to read back.
  p.unit = std::max(p.unit, page);
  std::lock_guard<std::mutex> lock(pathMutex);
  if (refusedDevices.count(p.dev)) p.refused = true;
  return p;
}

void Refused(dev_t dev) {
  std::lock_guard<std::mutex> lock(pathMutex);
  refusedDevices.insert(dev);
}

void Count(size_t direct, size_t total, bool fellBack) {
  std::lock_guard<std::mutex> lock(pathMutex);
  if (direct > 0) {
    counts.direct++;
  } else {
    counts.buffered++;
    if (fellBack) counts.fallbacks++;
  }
  counts.directBytes += direct;
  counts.bufferedBytes += total - direct;
}

class DurableWriteWorker : public Napi::AsyncWorker {
 public:
  DurableWriteWorker(Napi::Env env, std::string path, Napi::Buffer<uint8_t> data, bool direct)
      : Napi::AsyncWorker(env, "sluice-durable-write"),
        deferred_(Napi::Promise::Deferred::New(env)),
        path_(std::move(path)),
        tmp_(path_ + ".tmp"),
        bytes_(data.Data()),
        length_(data.Length()),
        direct_(direct) {
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
    size_t done = 0;
    bool fellBack = false;
    if (direct_ && !WriteDirect(fd, &done, &fellBack)) return abandon(syscall_, true, tmp_);
    if (!WriteBuffered(fd, done)) return abandon("write", true, tmp_);
    Count(done, length_, fellBack);
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
  /** The whole units from the start, with O_DIRECT, from the caller's memory. `*done` is how far
   *  it got; false only for an error that is no refusal (errno and syscall_ set). */
  bool WriteDirect(int fd, size_t* done, bool* fellBack) {
    if (length_ < kFallbackAlign) return true;
    const DirectPlan plan = PlanFor(fd);
    if (reinterpret_cast<uintptr_t>(bytes_) % plan.memAlign != 0) return true;
    if (plan.refused) {
      *fellBack = true;
      return true;
    }
    const size_t prefix = length_ / plan.unit * plan.unit;
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_DIRECT) != 0) {
      if (errno != EINVAL) return Syscall("fcntl");
      Refused(plan.dev);  // the filesystem has no direct I/O
      *fellBack = true;
      return true;
    }
    while (*done < prefix) {
      const ssize_t n = pwrite(fd, bytes_ + *done, prefix - *done, static_cast<off_t>(*done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL && *done == 0) {
        Refused(plan.dev);  // it took the flag but not these writes: alignment it did not tell
        *fellBack = true;
        break;
      }
      if (n < 0) return Syscall("write");
      *done += static_cast<size_t>(n);
      if (*done % plan.unit != 0) break;  // short and unaligned: the rest goes buffered
    }
    if (fcntl(fd, F_SETFL, flags) != 0) return Syscall("fcntl");
    return true;
  }

  bool Syscall(const char* name) {
    syscall_ = name;
    return false;
  }

  /** The bytes from `from` on, through the page cache, one copy at a time process-wide. */
  bool WriteBuffered(int fd, size_t from) {
    if (from >= length_) return true;
    std::lock_guard<std::mutex> lock(copyMutex);
    copiesMost = std::max(copiesMost, ++copiesNow);
    struct Leave {
      ~Leave() { copiesNow--; }
    } leave;
    size_t done = from;
    while (done < length_) {
      const ssize_t n = pwrite(fd, bytes_ + done, length_ - done, static_cast<off_t>(done));
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
  bool direct_;
  const char* syscall_ = "";
  int errno_ = 0;
  std::string what_;
};

}  // namespace

Napi::Value WriteDurable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsBuffer() ||
      (info.Length() > 2 && !info[2].IsBoolean() && !info[2].IsUndefined())) {
    throw CodedError(env, "ERR_NATIVE_ARG",
                     "writeDurable(path: string, data: Buffer, direct?: boolean)");
  }
  const bool direct = info.Length() < 3 || !info[2].IsBoolean() || info[2].As<Napi::Boolean>();
  auto* worker = new DurableWriteWorker(env, info[0].As<Napi::String>().Utf8Value(),
                                        info[1].As<Napi::Buffer<uint8_t>>(), direct);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value WriteDurableStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  {
    std::lock_guard<std::mutex> lock(copyMutex);
    o.Set("copiesMostAtOnce", copiesMost);
  }
  std::lock_guard<std::mutex> lock(pathMutex);
  o.Set("direct", static_cast<double>(counts.direct));
  o.Set("buffered", static_cast<double>(counts.buffered));
  o.Set("fallbacks", static_cast<double>(counts.fallbacks));
  o.Set("directBytes", static_cast<double>(counts.directBytes));
  o.Set("bufferedBytes", static_cast<double>(counts.bufferedBytes));
  o.Set("refusedFilesystems", static_cast<double>(refusedDevices.size()));
  return o;
}

}  // namespace sluice
