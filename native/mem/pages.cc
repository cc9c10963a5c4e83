// Segment blocks as mappings of their own: a Buffer over mmap'd pages (MAP_NORESERVE: reserving
// room costs nothing until written), madvise(MADV_DONTNEED) for the pages past a segment's end,
// mincore for what is resident. Own mappings, so no allocator metadata shares a page with them.
#include "mem/pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "util/errors.h"

namespace sluice {

namespace {

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

Napi::Buffer<uint8_t> BufferArg(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsBuffer()) {
    throw CodedError(info.Env(), "ERR_NATIVE_ARG", std::string(fn) + ": a Buffer is required");
  }
  return info[0].As<Napi::Buffer<uint8_t>>();
}

}  // namespace

Napi::Value MapBlock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const double want = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  if (!(want >= 1 && want <= static_cast<double>(1ULL << 40))) {
    throw CodedError(env, "ERR_NATIVE_ARG", "mapBlock: bytes must be in [1, 2^40]");
  }
  const size_t len = static_cast<size_t>(want);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) ThrowErrno(env, "mmap", errno);
  return Napi::Buffer<uint8_t>::New(env, static_cast<uint8_t*>(p), len,
                                    [len](Napi::Env, uint8_t* data) { munmap(data, len); });
}

Napi::Value DiscardPages(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Buffer<uint8_t> buf = BufferArg(info, "discardPages");
  const double from = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : -1;
  const uintptr_t start = reinterpret_cast<uintptr_t>(buf.Data());
  const size_t page = PageSize();
  if (from < 0 || start % page != 0) {
    throw CodedError(env, "ERR_NATIVE_ARG",
                     "discardPages: a mapBlock Buffer and a byte offset ≥ 0 are required");
  }
  const size_t len = buf.Length();
  const size_t first = (static_cast<size_t>(from) + page - 1) / page * page;
  if (first >= len) return Napi::Number::New(env, 0);
  const size_t span = (len - first) / page * page;  // whole pages only: the last may be partial
  if (span == 0) return Napi::Number::New(env, 0);
  if (madvise(buf.Data() + first, span, MADV_DONTNEED) != 0) ThrowErrno(env, "madvise", errno);
  return Napi::Number::New(env, static_cast<double>(span));
}

Napi::Value ResidentBytes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Buffer<uint8_t> buf = BufferArg(info, "residentBytes");
  const size_t page = PageSize();
  const uintptr_t start = reinterpret_cast<uintptr_t>(buf.Data()) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(buf.Data()) + buf.Length();
  if (buf.Length() == 0) return Napi::Number::New(env, 0);
  std::vector<unsigned char> vec((end - start + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(start), end - start, vec.data()) != 0) {
    ThrowErrno(env, "mincore", errno);
  }
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return Napi::Number::New(env, static_cast<double>(n * page));
}

}  // namespace sluice
