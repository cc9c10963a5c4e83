// PSI/SI sections: reassembly from TS packet payloads (pointer_field, several sections per
// packet, sections spanning packets) and parsing of the tables the analyzer needs (PAT, PMT, SDT).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sluice::ts {

constexpr size_t kMaxSectionLength = 4096;  // 3-byte header + section_length ≤ 4093

/** Collects the sections of one PID. Feed it payloads in order; Reset() on a CC error. */
class SectionAssembler {
 public:
  using Sink = std::function<void(const uint8_t* section, size_t len)>;
  void Feed(const uint8_t* payload, size_t len, bool unitStart, const Sink& sink);
  void Reset() {
    buf_.clear();
    need_ = 0;
    active_ = false;
  }

 private:
  bool Complete(const Sink& sink);  // true when the section in buf_ was handed out
  void StartSections(const uint8_t* p, size_t pos, size_t len, const Sink& sink);
  std::vector<uint8_t> buf_;
  size_t need_ = 0;  // total section size once the header is in, else 0
  bool active_ = false;
};

/** True when a section (table_id .. CRC) carries a CRC_32 that must be checked. */
bool SectionHasCrc(const uint8_t* s, size_t len);

struct PatEntry {
  uint16_t pnr;
  uint16_t pid;
};

struct EsInfo {
  uint16_t pid = 0;
  uint8_t streamType = 0;
  std::vector<uint8_t> descriptors;  // tags in order
  std::string registration;          // registration descriptor format_identifier
  std::string language;              // ISO 639 code
};

struct PmtInfo {
  uint16_t pnr = 0;
  uint8_t version = 0;
  uint16_t pcrPid = 0x1FFF;
  std::vector<EsInfo> streams;
};

struct ServiceInfo {
  uint16_t serviceId = 0;
  uint8_t serviceType = 0;
  std::string provider;
  std::string name;
};

/** The parsers return false on a malformed table (lengths that do not fit). */
bool ParsePat(const uint8_t* s, size_t len, uint8_t* version, std::vector<PatEntry>* out);
bool ParsePmt(const uint8_t* s, size_t len, PmtInfo* out);
bool ParseSdt(const uint8_t* s, size_t len, std::vector<ServiceInfo>* out);

/** EN 300 468 annex A text → UTF-8 (Latin-1 stands in for the 8-bit tables; 0x11 UCS-2; 0x15 UTF-8). */
std::string DvbText(const uint8_t* p, size_t len);

}  // namespace sluice::ts
