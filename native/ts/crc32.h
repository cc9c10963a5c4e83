// CRC-32/MPEG-2 (polynomial 0x04C11DB7, no reflection, init 0xFFFFFFFF, no final xor), the
// checksum at the end of PSI/SI sections. Run over a whole section including its CRC it gives 0.
#pragma once
#include <cstddef>
#include <cstdint>

namespace sluice::ts {

uint32_t Crc32Mpeg(const uint8_t* data, size_t len);

}  // namespace sluice::ts
