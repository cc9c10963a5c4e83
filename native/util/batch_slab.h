// BatchSlab: the one reused block a receiver copies each batch into before its JS callback, as
// [payloads | pad to 4 | int32 lengths]. The façade makes a Buffer and an Int32Array that are
// views of it, valid until the callback returns (the next batch is copied over them). One
// long-lived block instead of a new external ArrayBuffer per batch keeps the external-memory
// figure V8 schedules full collections by flat (docs/native.md). Shared by the UDP, SRT and
// RIST receivers. JS thread only.
#pragma once
#include <napi.h>

#include <cstdint>
#include <cstring>

namespace sluice {

class BatchSlab {
 public:
  /** Copy `dataLen` bytes and `count` lengths into the block (grown when they do not fit). */
  Napi::ArrayBuffer Fill(Napi::Env env, const uint8_t* data, size_t dataLen,
                         const int32_t* lengths, size_t count) {
    const size_t off = LengthsOffset(dataLen);
    const size_t need = off + count * sizeof(int32_t);
    if (slab_.IsEmpty() || size_ < need) {
      size_t size = size_ > 0 ? size_ : kInitial;
      while (size < need) size *= 2;
      slab_ = Napi::Persistent(Napi::ArrayBuffer::New(env, size));
      size_ = size;
    }
    Napi::ArrayBuffer ab = slab_.Value();
    auto* p = static_cast<uint8_t*>(ab.Data());
    std::memcpy(p, data, dataLen);
    std::memcpy(p + off, lengths, count * sizeof(int32_t));
    return ab;
  }

  /** Where the lengths start: after the data, padded to 4 bytes. */
  static size_t LengthsOffset(size_t dataLen) { return (dataLen + 3) & ~static_cast<size_t>(3); }

  void Reset() {
    slab_.Reset();
    size_ = 0;
  }

 private:
  /** First size: a 64-datagram batch of 1,316-byte datagrams fits. */
  static constexpr size_t kInitial = 128 * 1024;
  Napi::Reference<Napi::ArrayBuffer> slab_;
  size_t size_ = 0;
};

}  // namespace sluice
