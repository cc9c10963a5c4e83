// CRC-32/MPEG-2, table driven (one table built at load time).
#include "ts/crc32.h"

#include <array>

namespace sluice::ts {
namespace {

constexpr uint32_t kPoly = 0x04C11DB7u;

std::array<uint32_t, 256> BuildTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i << 24;
    for (int k = 0; k < 8; k++) c = (c & 0x80000000u) ? (c << 1) ^ kPoly : c << 1;
    t[i] = c;
  }
  return t;
}

const std::array<uint32_t, 256> kTable = BuildTable();

}  // namespace

uint32_t Crc32Mpeg(const uint8_t* data, size_t len) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < len; i++) crc = (crc << 8) ^ kTable[((crc >> 24) ^ data[i]) & 0xFF];
  return crc;
}

}  // namespace sluice::ts
